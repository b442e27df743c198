package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/queen-go/queen/internal/store"
)

// Clearing a queue: one writer job makes the messages unreachable and
// resets the counters, QueueClearPurge frees their rows in bounded steps
// (see migration 006). ?1 is the queue id, ?2 one partition id or 0 for
// all of them.
const (
	sqlClearFigures = `SELECT count(*), COALESCE(sum(message_count), 0) FROM partitions
		WHERE queue_id = ?1 AND (?2 = 0 OR id = ?2)`
	sqlClearList = `INSERT INTO clear_partitions (partition_id, queued_at)
		SELECT id, ?3 FROM partitions WHERE queue_id = ?1 AND (?2 = 0 OR id = ?2) AND last_offset > cleared_offset
		ON CONFLICT DO NOTHING`
	// A group joining later starts after the cleared messages too.
	sqlClearMark = `UPDATE partitions SET cleared_offset = last_offset, floor_offset = max(floor_offset, last_offset),
			message_count = 0
		WHERE queue_id = ?1 AND (?2 = 0 OR id = ?2)`
	// After sqlClearMark: every lane moves to the end (which the lanes
	// trigger, seeing nothing above the new cleared offset, counts as 0).
	sqlClearLanes = `UPDATE lanes SET cursor = (SELECT p.last_offset FROM partitions p WHERE p.id = lanes.partition_id),
			consumed = 0, lease_id = NULL, lease_expires_at = 0, batch_end = 0, head_attempts = 0, ready = 0
		WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?1 AND (?2 = 0 OR id = ?2))`

	// Purging, a few listed partitions at a time, each statement bounded.
	// A partition of a deleted queue is QueuePurge's (-1). Any message may
	// go, the newest of the table too: offsets come from the writer's
	// counter (seq.go), never from the rows left.
	sqlClearPurgeNext = `SELECT c.partition_id, COALESCE((SELECT CASE WHEN p.queue_id > 0 THEN p.cleared_offset ELSE -1 END
			FROM partitions p WHERE p.id = c.partition_id), -1)
		FROM clear_partitions c ORDER BY c.partition_id LIMIT 16`
	// Oldest first, so that the traces deleted before are those of the
	// messages deleted (deleteTracesBetween).
	sqlClearPurgeMessages = `DELETE FROM messages WHERE seq IN (SELECT seq FROM messages
		WHERE partition_id = ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3)`
	sqlClearPurgeDeadLetters = `DELETE FROM dead_letters WHERE id IN
		(SELECT id FROM dead_letters WHERE partition_id = ?1 AND message_seq <= ?2 LIMIT ?3)`
	sqlClearPurgeDone = `DELETE FROM clear_partitions WHERE partition_id = ?1`
	sqlClearPurgeMore = `SELECT EXISTS (SELECT 1 FROM clear_partitions)`
)

// QueueClear makes the messages of a queue (or one partition) unreachable
// in one writer job, whose cost grows with the partitions and groups, not
// with the messages; their rows are freed by QueueClearPurge.
func (s *Store) QueueClear(ctx context.Context, p *store.QueueClearParams) (*store.QueueClearResult, error) {
	out := &store.QueueClearResult{}
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		*out = store.QueueClearResult{}
		t := s.txn(tx)
		q, err := t.existingQueue(queueName{store.TenantOrDefault(p.Tenant), p.Name})
		if err != nil {
			return err
		}
		if q == nil {
			return store.ErrQueueNotFound
		}
		var pid int64
		if p.Partition != "" {
			part, err := t.existingPartition(q, p.Partition)
			if err != nil {
				return err
			}
			if part == nil {
				return store.ErrPartitionNotFound
			}
			pid = part.id
		}
		if err := tx.QueryRowContext(t.ctx, sqlClearFigures, q.id, pid).Scan(&out.Partitions, &out.Messages); err != nil {
			return fmt.Errorf("clear: %w", err)
		}
		if _, err := tx.ExecContext(t.ctx, sqlClearList, q.id, pid, p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("clear: %w", err)
		}
		for _, stmt := range []string{sqlClearMark, sqlClearLanes} {
			if _, err := tx.ExecContext(t.ctx, stmt, q.id, pid); err != nil {
				return fmt.Errorf("clear: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueClearPurge frees up to p.Limit rows of cleared messages, their
// traces and their dead letters in one writer job, so that the pushes and
// pops queued behind it wait only for a short step.
func (s *Store) QueueClearPurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.QueuePurgeResult{}
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		out.Deleted = 0
		rows, err := tx.QueryContext(ctx, sqlClearPurgeNext)
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		type entry struct{ pid, upTo int64 }
		var list []entry
		for rows.Next() {
			var e entry
			if err := rows.Scan(&e.pid, &e.upTo); err != nil {
				rows.Close()
				return err
			}
			list = append(list, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		budget := limit
		for _, e := range list {
			done := true
			if e.upTo >= 0 {
				// The traces of the messages about to go, first.
				n, err := deleteTracesBetween(ctx, tx, e.pid, -1, e.upTo, budget, budget)
				if err != nil {
					return fmt.Errorf("purge: %w", err)
				}
				budget -= n
				out.Deleted += n
				if budget <= 0 {
					break
				}
				for _, q := range []string{sqlClearPurgeMessages, sqlClearPurgeDeadLetters} {
					res, err := tx.ExecContext(ctx, q, e.pid, e.upTo, budget)
					if err != nil {
						return fmt.Errorf("purge: %w", err)
					}
					n, _ := res.RowsAffected()
					budget -= int(n)
					out.Deleted += int(n)
					if budget <= 0 {
						done = false
						break
					}
				}
			}
			if !done {
				break
			}
			if _, err := tx.ExecContext(ctx, sqlClearPurgeDone, e.pid); err != nil {
				return fmt.Errorf("purge: %w", err)
			}
		}
		return tx.QueryRowContext(ctx, sqlClearPurgeMore).Scan(&out.More)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
