package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// Clearing a queue: one short transaction makes the messages unreachable,
// QueueClearPurge frees their rows in bounded steps (see migration 006).
const (
	// The queue ($1 tenant, $2 name), share-locked so that it is not
	// deleted meanwhile.
	sqlClearQueue = `SELECT id FROM queues WHERE tenant = $1 AND name = $2 FOR SHARE`
	// Its partitions ($1 queue id, $2 one name or ''), locked as a push
	// locks them (by id, FOR NO KEY UPDATE): no push is in flight on them
	// until commit, so last_offset is final and ready is exact.
	sqlClearPartitions = `SELECT id, last_offset - cleared_offset - gaps FROM partitions
		WHERE queue_id = $1 AND ($2 = '' OR name = $2) ORDER BY id FOR NO KEY UPDATE`
	// A group joining later starts after the cleared messages too.
	sqlClearMark = `UPDATE partitions SET cleared_offset = last_offset, floor_offset = greatest(floor_offset, last_offset),
			gaps = 0
		WHERE id = ANY($1::bigint[])`
	// Gaps at or below the cleared offset count no more (migration 011).
	sqlClearGaps = `DELETE FROM message_gaps WHERE partition_id = ANY($1::bigint[])`
	// Every lane of the partitions, locked in key order as acks lock them,
	// moves to the end; leases and retry counters go.
	sqlClearLanesLock = `SELECT 1 FROM lanes WHERE partition_id = ANY($1::bigint[])
		ORDER BY partition_id, consumer_group FOR UPDATE`
	sqlClearLanes = `UPDATE lanes l SET cursor = p.last_offset, lease_id = NULL, lease_expires_at = 0,
			batch_end = 0, head_attempts = 0, ready = false
		FROM partitions p WHERE p.id = l.partition_id AND l.partition_id = ANY($1::bigint[])`
	sqlClearList = `INSERT INTO clear_partitions (partition_id, queued_at)
		SELECT unnest($1::bigint[]), $2 ON CONFLICT DO NOTHING`

	// Purging: a few listed partitions at a time (skipping those another
	// broker's purge holds); a partition gone meanwhile (its queue deleted)
	// is QueuePurge's. A clear that lists a partition again while a purge
	// holds its entry waits for that purge (ON CONFLICT waits for the row),
	// so a finished entry is never deleted over a newer clear.
	sqlClearPurgeNext = `SELECT c.partition_id, COALESCE(p.cleared_offset, -1)
		FROM clear_partitions c LEFT JOIN partitions p ON p.id = c.partition_id
		ORDER BY c.partition_id LIMIT 16 FOR UPDATE OF c SKIP LOCKED`
	sqlClearPurgeMessages = `DELETE FROM messages WHERE partition_id = $1 AND seq IN
		(SELECT seq FROM messages WHERE partition_id = $1 AND seq <= $2 ORDER BY seq LIMIT $3)`
	sqlClearPurgeDeadLetters = `DELETE FROM dead_letters WHERE id IN
		(SELECT id FROM dead_letters WHERE partition_id = $1 AND message_seq <= $2 LIMIT $3)`
	sqlClearPurgeDone = `DELETE FROM clear_partitions WHERE partition_id = $1`
	sqlClearPurgeMore = `SELECT EXISTS (SELECT 1 FROM clear_partitions)`
)

// QueueClear makes the messages of a queue (or one partition) unreachable
// in one short transaction; their rows are freed by QueueClearPurge.
func (s *Store) QueueClear(ctx context.Context, p *store.QueueClearParams) (*store.QueueClearResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueClearResult{}
	err := s.inTx(ctx, "clear queue", func(t *txn) error {
		*out = store.QueueClearResult{}
		var qid int64
		err := t.tx.QueryRow(t.ctx, sqlClearQueue, tenant, p.Name).Scan(&qid)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return fmt.Errorf("lock queue: %w", err)
		}
		rows, _ := t.tx.Query(t.ctx, sqlClearPartitions, qid, p.Partition)
		var ids, held []int64
		var id, n int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
			ids = append(ids, id)
			if n > 0 {
				held = append(held, id)
			}
			out.Messages += n
			return nil
		}); err != nil {
			return fmt.Errorf("lock partitions: %w", err)
		}
		if len(ids) == 0 && p.Partition != "" {
			return store.ErrPartitionNotFound
		}
		out.Partitions = len(ids)
		b := &pgx.Batch{}
		b.Queue(sqlClearMark, ids)
		b.Queue(sqlClearGaps, ids)
		b.Queue(sqlClearLanesLock, ids)
		b.Queue(sqlClearLanes, ids)
		b.Queue(sqlClearList, held, p.Now.UnixMilli())
		if err := t.execBatch(b); err != nil {
			return fmt.Errorf("clear: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueClearPurge frees up to p.Limit rows of cleared messages, their traces
// and their dead letters, in one transaction that does not wait for its WAL flush (a
// purge lost to a crash is simply done again).
func (s *Store) QueueClearPurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.QueuePurgeResult{}
	err := s.inRelaxedTx(ctx, "purge cleared messages", func(t *txn) error {
		out.Deleted = 0
		type entry struct{ pid, upTo int64 }
		rows, _ := t.tx.Query(t.ctx, sqlClearPurgeNext)
		var list []entry
		var e entry
		if _, err := pgx.ForEachRow(rows, []any{&e.pid, &e.upTo}, func() error {
			list = append(list, e)
			return nil
		}); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		budget := limit
		for _, e := range list {
			done := true
			if e.upTo >= 0 {
				// The traces of the messages about to go, first.
				n, err := t.deleteTracesBetween(e.pid, -1, e.upTo, budget, budget)
				if err != nil {
					return fmt.Errorf("purge: %w", err)
				}
				budget -= n
				out.Deleted += n
				if budget <= 0 {
					break
				}
				for _, q := range []string{sqlClearPurgeMessages, sqlClearPurgeDeadLetters} {
					tag, err := t.tx.Exec(t.ctx, q, e.pid, e.upTo, budget)
					if err != nil {
						return fmt.Errorf("purge: %w", err)
					}
					budget -= int(tag.RowsAffected())
					out.Deleted += int(tag.RowsAffected())
					if budget <= 0 {
						done = false
						break
					}
				}
			}
			if !done {
				break
			}
			if _, err := t.tx.Exec(t.ctx, sqlClearPurgeDone, e.pid); err != nil {
				return fmt.Errorf("purge: %w", err)
			}
		}
		if err := t.tx.QueryRow(t.ctx, sqlClearPurgeMore).Scan(&out.More); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
