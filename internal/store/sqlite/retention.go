package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
	"github.com/queen-go/queen/internal/store/retain"
)

// The retention, eviction and idle-partition sweeps (store.RetentionStore).
// Each step is one writer job that looks at a window of partition ids and
// removes at most its limit of rows, so that pushes and pops queued behind it
// wait for one short job (the broker's sweep services size the steps like
// package purge does). What a step decides is package retain's (the window,
// the cutoffs, the prefix it takes), the lane rules package lane's (Drop,
// Evict); this file holds the rows and the SQL.

// sweepFilters select the partitions of each kind of sweep.
var sweepFilters = retain.Filters{Expired: sqlSweepFilterExpired, Completed: sqlSweepFilterCompleted,
	Eviction: sqlSweepFilterEviction}

const (
	sqlSweepFilterExpired = `json_extract(q.options, '$.retentionEnabled')
		AND json_extract(q.options, '$.retentionSeconds') > 0 ORDER BY p.id`
	sqlSweepFilterCompleted = `json_extract(q.options, '$.retentionEnabled')
		AND json_extract(q.options, '$.completedRetentionSeconds') > 0 ORDER BY p.id`
	sqlSweepFilterEviction = `json_extract(q.options, '$.maxWaitTimeSeconds') > 0 ORDER BY p.id`

	// The oldest messages of partition ?1 after offset ?2.
	sqlSweepHead = `SELECT seq, created_at FROM messages WHERE partition_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	// A partition's lanes, with their queue.
	sqlSweepLanes = `SELECT consumer_group, queue_id, cursor, COALESCE(lease_id, ''), lease_expires_at, batch_end,
			head_attempts, retry_at
		FROM lanes WHERE partition_id = ? ORDER BY consumer_group`
	sqlSweepDeleteMessages    = `DELETE FROM messages WHERE partition_id = ? AND seq > ? AND seq <= ?`
	sqlSweepDeleteDeadLetters = `DELETE FROM dead_letters WHERE partition_id = ? AND message_seq <= ?`
	sqlSweepFloor             = `UPDATE partitions SET floor_offset = max(floor_offset, ?) WHERE id = ?`
	// Retention deleted the ?2 messages of partition ?3 up to offset ?1: the
	// floor of what is gone moves past them, as a clear moves it, and the
	// counters (migration 006) leave them out. After the lanes' saves,
	// every cursor is at or past ?1: a lane at it has consumed nothing that
	// is left, a lane past it had consumed them all.
	sqlSweepDeleted = `UPDATE partitions SET cleared_offset = max(cleared_offset, ?1),
		floor_offset = max(floor_offset, ?1), message_count = max(0, message_count - ?2) WHERE id = ?3`
	sqlSweepDeletedLanes = `UPDATE lanes SET consumed = CASE WHEN cursor <= ?1 THEN 0 ELSE max(0, consumed - ?2) END
		WHERE partition_id = ?3`
	sqlHistoryAdd = `INSERT INTO retention_history (tenant, queue, kind, minute, count)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, queue, kind, minute) DO UPDATE SET count = count + excluded.count`

	// Partitions of window [?1, ?2) (of tenant ?3, or any) without messages
	// and idle since ?4 (Unix ms): created, written and claimed before it
	// (last_claimed_at is in microseconds).
	sqlIdlePartitions = `SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE p.id >= ?1 AND p.id < ?2 AND (?3 = '' OR q.tenant = ?3)
		  AND p.created_at < ?4 AND p.last_message_at < ?4
		  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.partition_id = p.id)
		  AND NOT EXISTS (SELECT 1 FROM lanes l WHERE l.partition_id = p.id AND l.last_claimed_at >= ?4 * 1000)
		ORDER BY p.id LIMIT ?5`
	sqlIdleDeleteLanes       = `DELETE FROM lanes WHERE partition_id = ?`
	sqlIdleDeleteDeadLetters = `DELETE FROM dead_letters WHERE partition_id = ?`
	sqlIdleDeletePartition   = `DELETE FROM partitions WHERE id = ?`

	sqlHistory = `SELECT tenant, queue, kind, minute, count FROM retention_history
		WHERE minute >= ?1 AND (?2 = '' OR tenant = ?2) AND (?3 = '' OR queue = ?3)
		ORDER BY minute, tenant, queue, kind`
	sqlHistoryPrune = `DELETE FROM retention_history WHERE minute < ?`
)

// RetentionSweep runs one step of a sweep in one writer job.
func (s *Store) RetentionSweep(ctx context.Context, p *store.RetentionSweepParams) (*store.RetentionResult, error) {
	filter, err := sweepFilters.For(p.Kind)
	if err != nil {
		return nil, err
	}
	limit := retain.Limit(p.Limit)
	out := &store.RetentionResult{}
	err = s.run(ctx, relaxed, func(tx *sql.Tx) error {
		start := time.Now()
		defer func() { out.Took = time.Since(start) }()
		*out = store.RetentionResult{}
		sw := &sweep{txn: s.txn(tx), kind: p.Kind, nowMs: p.Now.UnixMilli(), budget: limit,
			history: make(map[queueName]int)}
		if err := sw.run(p, filter, out); err != nil {
			return err
		}
		out.Removed = sw.removed
		return sw.record(p.Now)
	})
	return out, err
}

// sweep is one step of a sweep.
type sweep struct {
	*txn
	kind    store.RetentionKind
	nowMs   int64
	budget  int               // rows the step may still remove
	removed int               // messages removed (each once)
	history map[queueName]int // messages removed per queue
}

// sweepPartition is a partition a sweep visits.
type sweepPartition struct {
	id, floor int64
	cleared   int64 // every message up to it is gone
	queue     queueName
	opts      store.QueueOptions
}

// run walks the step (retain.StepIn) with this engine's visits.
func (sw *sweep) run(p *store.RetentionSweepParams, filter string, out *store.RetentionResult) error {
	var err error
	out.Next, err = retain.StepIn(sw.q(), filter, p, func() bool { return sw.budget <= 0 }, retain.Visits{
		Expire: func(rp retain.Partition, cutoff int64, consumed bool) (bool, error) {
			return sw.expire(swept(rp), cutoff, consumed)
		},
		Evict: func(rp retain.Partition, cutoff int64) (bool, error) { return sw.evict(swept(rp), cutoff) },
	})
	return err
}

func swept(rp retain.Partition) sweepPartition {
	return sweepPartition{id: rp.ID, floor: rp.Floor, cleared: rp.Cleared, queue: queueName{rp.Tenant, rp.Queue},
		opts: rp.Opts}
}

// laneRow is a lane a sweep visits.
type laneRow struct {
	group   string
	queueID int64
	state   lane.State
}

func (sw *sweep) lanes(pid int64) ([]laneRow, error) {
	rows, err := sw.tx.QueryContext(sw.ctx, sqlSweepLanes, pid)
	if err != nil {
		return nil, fmt.Errorf("retention sweep: read lanes: %w", err)
	}
	defer rows.Close()
	var out []laneRow
	for rows.Next() {
		var l laneRow
		st := &l.state
		if err := rows.Scan(&l.group, &l.queueID, &st.Cursor, &st.LeaseID, &st.LeaseExpiresAt, &st.BatchEnd,
			&st.HeadAttempts, &st.RetryAt); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// old returns the offsets of the oldest messages of pid after offset after,
// as long as they were created before cutoff and are at most through (0: no
// bound): at most n of them, and whether more such messages follow.
func (sw *sweep) old(pid, after, cutoff, through int64, n int) ([]int64, bool, error) {
	rows, err := sw.tx.QueryContext(sw.ctx, sqlSweepHead, pid, after, n+1)
	if err != nil {
		return nil, false, fmt.Errorf("retention sweep: read messages: %w", err)
	}
	defer rows.Close()
	pf := retain.Prefix{Cutoff: cutoff, Through: through, N: n}
	for rows.Next() {
		var seq, createdAt int64
		if err := rows.Scan(&seq, &createdAt); err != nil {
			return nil, false, err
		}
		if !pf.Add(seq, createdAt) {
			break
		}
	}
	return pf.Offsets, pf.More, rows.Err()
}

// expire deletes the prefix of the partition created before cutoff; with
// consumed set, only what every lane has consumed (nothing when no group has
// joined the partition).
func (sw *sweep) expire(sp sweepPartition, cutoff int64, consumed bool) (bool, error) {
	lanes, err := sw.lanes(sp.id)
	if err != nil {
		return false, err
	}
	var through int64
	if consumed {
		if len(lanes) == 0 {
			return false, nil
		}
		through = lanes[0].state.Cursor
		for _, l := range lanes[1:] {
			through = min(through, l.state.Cursor)
		}
		if through == 0 {
			return false, nil
		}
	}
	offs, more, err := sw.old(sp.id, sp.cleared, cutoff, through, sw.budget)
	if err != nil || len(offs) == 0 {
		return false, err
	}
	last := offs[len(offs)-1]
	// Their traces go first (found through the messages), like their dead
	// letters outside the step's budget, which counts messages.
	if _, err := deleteTracesBetween(sw.ctx, sw.tx, sp.id, sp.cleared, last, len(offs), math.MaxInt32); err != nil {
		return false, fmt.Errorf("retention sweep: %w", err)
	}
	res, err := sw.tx.ExecContext(sw.ctx, sqlSweepDeleteMessages, sp.id, sp.cleared, last)
	if err != nil {
		return false, fmt.Errorf("retention sweep: delete messages: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := sw.tx.ExecContext(sw.ctx, sqlSweepDeleteDeadLetters, sp.id, last); err != nil {
		return false, fmt.Errorf("retention sweep: delete dead letters: %w", err)
	}
	for i := range lanes {
		l := &lanes[i]
		if l.state.Drop(last) {
			if err := sw.saveLane(sp.id, l.group, l.queueID, &l.state, 0); err != nil {
				return false, err
			}
		}
	}
	if _, err := sw.tx.ExecContext(sw.ctx, sqlSweepDeleted, last, n, sp.id); err != nil {
		return false, fmt.Errorf("retention sweep: move floor: %w", err)
	}
	if _, err := sw.tx.ExecContext(sw.ctx, sqlSweepDeletedLanes, last, n, sp.id); err != nil {
		return false, fmt.Errorf("retention sweep: count lanes: %w", err)
	}
	sw.forgetUnconsumed(sp.id)
	sw.count(sp.queue, int(n))
	return more, nil
}

// evict moves the messages created before cutoff that lanes have not
// consumed to the dead-letter queue, lane by lane; in a partition no group
// has joined, for the queue-mode group. The floor moves past what was
// evicted for every lane, so that groups joining later start after it.
func (sw *sweep) evict(sp sweepPartition, cutoff int64) (bool, error) {
	lanes, err := sw.lanes(sp.id)
	if err != nil {
		return false, err
	}
	if len(lanes) == 0 {
		// Nobody has joined: the queue-mode group, Queen's default, gets
		// the dead letters, so that nothing is evicted silently.
		lanes = []laneRow{{group: store.QueueMode, state: lane.State{Cursor: sp.floor}}}
	}
	lo := sp.floor
	for _, l := range lanes {
		lo = min(lo, l.state.Cursor)
	}
	offs, more, err := sw.old(sp.id, lo, cutoff, 0, sw.budget)
	if err != nil || len(offs) == 0 {
		return false, err
	}
	states := make([]*lane.State, len(lanes))
	for i := range lanes {
		states[i] = &lanes[i].state
	}
	ev := lane.EvictPartition(states, sp.floor, offs, sw.budget, more, sw.nowMs)
	sw.budget -= ev.Used
	for i, dead := range ev.Dead {
		l := &lanes[i]
		for k := range dead {
			if err := sw.deadLetter(sp.id, l.group, &dead[k], sw.nowMs); err != nil {
				return false, err
			}
		}
		if len(dead) > 0 && l.queueID != 0 { // a real lane, not the stand-in for nobody
			if err := sw.saveLane(sp.id, l.group, l.queueID, &l.state, 0); err != nil {
				return false, err
			}
		}
	}
	if ev.Skip {
		return false, nil // every lane is leased: a later sweep
	}
	floor, evicted := ev.Floor, ev.Evicted
	if err := sw.floor(sp.id, floor); err != nil {
		return false, err
	}
	sw.forgetUnconsumed(sp.id)
	sw.removed += evicted
	sw.history[sp.queue] += evicted
	return ev.More, nil
}

func (sw *sweep) floor(pid, through int64) error {
	if _, err := sw.tx.ExecContext(sw.ctx, sqlSweepFloor, through, pid); err != nil {
		return fmt.Errorf("retention sweep: move floor: %w", err)
	}
	return nil
}

// count records n messages of queue q deleted.
func (sw *sweep) count(q queueName, n int) {
	sw.budget -= n
	sw.removed += n
	sw.history[q] += n
}

// record writes the step's history.
func (sw *sweep) record(now time.Time) error {
	minute := store.MinuteOf(now).UnixMilli()
	for q, n := range sw.history {
		if n == 0 {
			continue
		}
		if _, err := sw.tx.ExecContext(sw.ctx, sqlHistoryAdd, q.tenant, q.name, string(sw.kind), minute, n); err != nil {
			return fmt.Errorf("retention sweep: record history: %w", err)
		}
	}
	return nil
}

// RetentionPartitions deletes idle, empty partitions of one window of ids
// in one writer job.
func (s *Store) RetentionPartitions(ctx context.Context, p *store.RetentionPartitionsParams) (*store.RetentionResult, error) {
	limit := retain.Limit(p.Limit)
	out := &store.RetentionResult{}
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		start := time.Now()
		defer func() { out.Took = time.Since(start) }()
		*out = store.RetentionResult{}
		t := s.txn(tx)
		var maxID int64
		if err := tx.QueryRowContext(t.ctx, retain.MaxPartition).Scan(&maxID); err != nil {
			return fmt.Errorf("partition cleanup: %w", err)
		}
		from := max(p.From, 1)
		if from > maxID {
			return nil
		}
		end := from + retain.Window
		rows, err := tx.QueryContext(t.ctx, sqlIdlePartitions, from, end, p.Tenant, p.IdleSince.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("partition cleanup: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			for _, q := range []string{sqlIdleDeleteLanes, sqlIdleDeleteDeadLetters, sqlIdleDeletePartition} {
				if _, err := tx.ExecContext(t.ctx, q, id); err != nil {
					return fmt.Errorf("partition cleanup: %w", err)
				}
			}
		}
		if len(ids) > 0 {
			t.cache.reset() // cached partition rows may be gone
		}
		out.Removed = len(ids)
		out.Next = retain.IdleNext(ids, limit, end, maxID)
		return nil
	})
	return out, err
}

// RetentionHistory reads the history through the read-only connections.
func (s *Store) RetentionHistory(ctx context.Context, p *store.RetentionHistoryParams) ([]store.RetentionHistoryEntry, error) {
	rows, err := s.reader.QueryContext(ctx, sqlHistory, p.Since.UnixMilli(), p.Tenant, p.Queue)
	if err != nil {
		return nil, fmt.Errorf("read retention history: %w", err)
	}
	defer rows.Close()
	var out []store.RetentionHistoryEntry
	for rows.Next() {
		var e store.RetentionHistoryEntry
		var kind string
		var minute int64
		if err := rows.Scan(&e.Tenant, &e.Queue, &kind, &minute, &e.Count); err != nil {
			return nil, err
		}
		e.Kind, e.Minute = store.RetentionKind(kind), time.UnixMilli(minute).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// RetentionHistoryPrune forgets the history before p.Before.
func (s *Store) RetentionHistoryPrune(ctx context.Context, p *store.RetentionHistoryPruneParams) (int, error) {
	var n int64
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlHistoryPrune, p.Before.UnixMilli())
		if err != nil {
			return fmt.Errorf("prune retention history: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
