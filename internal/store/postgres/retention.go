package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
	"github.com/queen-go/queen/internal/store/retain"
)

// The retention, eviction and idle-partition sweeps (store.RetentionStore).
// The broker runs them under a job lock, one broker at a time. Each step is
// one transaction that does not wait for its WAL flush (a step lost to a
// crash is done again by the next sweep), looks at a window of partition
// ids and removes at most its limit of rows. A partition with nothing to
// remove is only read; one with something is locked like a push locks it
// (its row first, then its lanes), so a sweep and a push wait for each
// other at most one step and never deadlock. What a step decides is package
// retain's (the window, the cutoffs, the prefix it takes), the lane rules
// package lane's (Drop, Evict); this file holds the rows, locks and SQL.

// sweepFilters select the partitions of each kind of sweep.
var sweepFilters = retain.Filters{Expired: sqlSweepFilterExpired, Completed: sqlSweepFilterCompleted,
	Eviction: sqlSweepFilterEviction}

const (
	sqlSweepFilterExpired = `COALESCE((q.options->>'retentionEnabled')::boolean, false)
		AND COALESCE((q.options->>'retentionSeconds')::bigint, 0) > 0 ORDER BY p.id`
	sqlSweepFilterCompleted = `COALESCE((q.options->>'retentionEnabled')::boolean, false)
		AND COALESCE((q.options->>'completedRetentionSeconds')::bigint, 0) > 0 ORDER BY p.id`
	sqlSweepFilterEviction = `COALESCE((q.options->>'maxWaitTimeSeconds')::bigint, 0) > 0 ORDER BY p.id`

	// The oldest messages of partition $1 after offset $2.
	sqlSweepHead = `SELECT seq, created_at FROM messages WHERE partition_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	// A partition's lanes, read without a lock (to see whether there is
	// anything to do) or locked (to do it).
	sqlSweepLanes = `SELECT consumer_group, cursor, COALESCE(lease_id, ''), lease_expires_at, batch_end,
			head_attempts, retry_at
		FROM lanes WHERE partition_id = $1 ORDER BY consumer_group`
	sqlSweepLanesLock         = sqlSweepLanes + ` FOR UPDATE`
	sqlSweepPartitionLock     = `SELECT floor_offset, cleared_offset, last_offset FROM partitions WHERE id = $1 FOR NO KEY UPDATE`
	sqlSweepDeleteMessages    = `DELETE FROM messages WHERE partition_id = $1 AND seq > $2 AND seq <= $3`
	sqlSweepDeleteDeadLetters = `DELETE FROM dead_letters WHERE partition_id = $1 AND message_seq <= $2`
	sqlSweepFloor             = `UPDATE partitions SET floor_offset = greatest(floor_offset, $2) WHERE id = $1`
	// Retention deleted partition $1's messages up to offset $2: the floor
	// of what is gone moves past them, as a clear moves it (the figures are
	// offsets above it), and the gaps it passes count no more.
	sqlSweepDeleted = `WITH g AS (DELETE FROM message_gaps WHERE partition_id = $1 AND seq <= $2 RETURNING 1)
		UPDATE partitions SET cleared_offset = greatest(cleared_offset, $2), floor_offset = greatest(floor_offset, $2),
			gaps = gaps - (SELECT count(*) FROM g)
		WHERE id = $1`
	sqlHistoryAdd = `INSERT INTO retention_history (tenant, queue, kind, minute, count)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
		ON CONFLICT (tenant, queue, kind, minute) DO UPDATE SET count = retention_history.count + excluded.count`

	// Partitions of window [$1, $2) (of tenant $3, or any) without messages
	// and idle since $4 (Unix ms): created, written and claimed before it
	// (last_claimed_at is in microseconds). A push in flight holds the row
	// (skipped); one that committed meanwhile moved last_message_at, which
	// the DELETE checks again on the locked row.
	sqlIdlePartitionsDelete = `WITH idle AS (
			SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
			WHERE p.id >= $1 AND p.id < $2 AND ($3 = '' OR q.tenant = $3)
			  AND p.created_at < $4 AND p.last_message_at < $4
			  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.partition_id = p.id)
			  AND NOT EXISTS (SELECT 1 FROM lanes l WHERE l.partition_id = p.id AND l.last_claimed_at >= $4 * 1000)
			ORDER BY p.id LIMIT $5
			FOR UPDATE OF p SKIP LOCKED)
		DELETE FROM partitions p USING idle WHERE p.id = idle.id AND p.last_message_at < $4
		RETURNING p.id`
	sqlIdleDeleteLanes       = `DELETE FROM lanes WHERE partition_id = ANY($1::bigint[])`
	sqlIdleDeleteDeadLetters = `DELETE FROM dead_letters WHERE partition_id = ANY($1::bigint[])`
	sqlIdleDeleteGaps        = `DELETE FROM message_gaps WHERE partition_id = ANY($1::bigint[])`

	sqlHistory = `SELECT tenant, queue, kind, minute, count FROM retention_history
		WHERE minute >= $1 AND ($2 = '' OR tenant = $2) AND ($3 = '' OR queue = $3)
		ORDER BY minute, tenant, queue, kind`
	sqlHistoryPrune = `DELETE FROM retention_history WHERE minute < $1`
)

// RetentionSweep runs one step of a sweep in one transaction.
func (s *Store) RetentionSweep(ctx context.Context, p *store.RetentionSweepParams) (*store.RetentionResult, error) {
	filter, err := sweepFilters.For(p.Kind)
	if err != nil {
		return nil, err
	}
	limit := retain.Limit(p.Limit)
	out := &store.RetentionResult{}
	start := time.Now()
	defer func() { out.Took = time.Since(start) }()
	err = s.inRelaxedTx(ctx, "retention sweep", func(t *txn) error {
		*out = store.RetentionResult{} // a retried transaction starts over
		sw := &sweep{txn: t, kind: p.Kind, nowMs: p.Now.UnixMilli(), budget: limit, w: &laneWrites{},
			history: make(map[queueName]int)}
		if err := sw.run(p, filter, out); err != nil {
			return err
		}
		out.Removed = sw.removed
		if err := sw.record(p.Now); err != nil {
			return err
		}
		return t.writeLanes(sw.w)
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
	w       *laneWrites       // lane saves and dead letters, sent with COMMIT
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
	group string
	state lane.State
}

func (sw *sweep) lanes(pid int64, lock bool) ([]laneRow, error) {
	q := sqlSweepLanes
	if lock {
		q = sqlSweepLanesLock
	}
	rows, _ := sw.tx.Query(sw.ctx, q, pid)
	var out []laneRow
	var l laneRow
	st := &l.state
	_, err := pgx.ForEachRow(rows, []any{&l.group, &st.Cursor, &st.LeaseID, &st.LeaseExpiresAt, &st.BatchEnd,
		&st.HeadAttempts, &st.RetryAt}, func() error {
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retention sweep: read lanes: %w", err)
	}
	return out, nil
}

// lock locks the partition row (as a push does, before its lanes) and
// refreshes sp from it (a clear may have moved its floors since it was
// read); it returns the partition's last offset.
func (sw *sweep) lock(sp *sweepPartition) (int64, error) {
	var last int64
	if err := sw.tx.QueryRow(sw.ctx, sqlSweepPartitionLock, sp.id).Scan(&sp.floor, &sp.cleared, &last); err != nil {
		return 0, fmt.Errorf("retention sweep: lock partition: %w", err)
	}
	return last, nil
}

// old returns the offsets of the oldest messages of pid after offset after,
// as long as they were created before cutoff and are at most through (0: no
// bound): at most n of them, and whether more such messages follow.
func (sw *sweep) old(pid, after, cutoff, through int64, n int) ([]int64, bool, error) {
	rows, _ := sw.tx.Query(sw.ctx, sqlSweepHead, pid, after, n+1)
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
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("retention sweep: read messages: %w", err)
	}
	return pf.Offsets, pf.More, nil
}

// slowest returns the lowest cursor of lanes (0 when there are none).
func slowest(lanes []laneRow) int64 {
	if len(lanes) == 0 {
		return 0
	}
	c := lanes[0].state.Cursor
	for _, l := range lanes[1:] {
		c = min(c, l.state.Cursor)
	}
	return c
}

// expire deletes the prefix of the partition created before cutoff; with
// consumed set, only what every lane has consumed (nothing when no group has
// joined the partition). It looks first without locks, then locks and looks
// again.
func (sw *sweep) expire(sp sweepPartition, cutoff int64, consumed bool) (bool, error) {
	var through int64
	if consumed {
		lanes, err := sw.lanes(sp.id, false)
		if err != nil {
			return false, err
		}
		if through = slowest(lanes); through == 0 {
			return false, nil
		}
	}
	offs, _, err := sw.old(sp.id, sp.cleared, cutoff, through, sw.budget)
	if err != nil || len(offs) == 0 {
		return false, err
	}
	lastOffset, err := sw.lock(&sp)
	if err != nil {
		return false, err
	}
	lanes, err := sw.lanes(sp.id, true)
	if err != nil {
		return false, err
	}
	if consumed {
		if through = slowest(lanes); through == 0 {
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
	if _, err := sw.deleteTracesBetween(sp.id, sp.cleared, last, len(offs), math.MaxInt32); err != nil {
		return false, fmt.Errorf("retention sweep: %w", err)
	}
	tag, err := sw.tx.Exec(sw.ctx, sqlSweepDeleteMessages, sp.id, sp.cleared, last)
	if err != nil {
		return false, fmt.Errorf("retention sweep: delete messages: %w", err)
	}
	if _, err := sw.tx.Exec(sw.ctx, sqlSweepDeleteDeadLetters, sp.id, last); err != nil {
		return false, fmt.Errorf("retention sweep: delete dead letters: %w", err)
	}
	for i := range lanes {
		l := &lanes[i]
		if l.state.Drop(last) {
			sw.w.save(sp.id, l.group, &l.state, 0)
			if l.state.Cursor >= lastOffset {
				sw.w.settle(sp.id, l.group)
			}
		}
	}
	if _, err := sw.tx.Exec(sw.ctx, sqlSweepDeleted, sp.id, last); err != nil {
		return false, fmt.Errorf("retention sweep: move floor: %w", err)
	}
	n := int(tag.RowsAffected())
	sw.budget -= n
	sw.removed += n
	sw.history[sp.queue] += n
	return more, nil
}

// evict moves the messages created before cutoff that lanes have not
// consumed to the dead-letter queue, lane by lane; in a partition no group
// has joined, for the queue-mode group. The floor moves past what was
// evicted for every lane, so that groups joining later start after it.
func (sw *sweep) evict(sp sweepPartition, cutoff int64) (bool, error) {
	lanes, err := sw.lanes(sp.id, false)
	if err != nil {
		return false, err
	}
	lo := min(sp.floor, slowest(lanes))
	if len(lanes) == 0 {
		lo = sp.floor
	}
	if offs, _, err := sw.old(sp.id, lo, cutoff, 0, 1); err != nil || len(offs) == 0 {
		return false, err
	}
	lastOffset, err := sw.lock(&sp)
	if err != nil {
		return false, err
	}
	if lanes, err = sw.lanes(sp.id, true); err != nil {
		return false, err
	}
	joined := len(lanes) > 0
	if !joined {
		// Nobody has joined: the queue-mode group, Queen's default, gets
		// the dead letters, so that nothing is evicted silently.
		lanes = []laneRow{{group: store.QueueMode, state: lane.State{Cursor: sp.floor}}}
	}
	lo = min(sp.floor, slowest(lanes))
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
			sw.w.deadLetter(sp.id, l.group, &dead[k], sw.nowMs)
		}
		if len(dead) > 0 && joined {
			sw.w.save(sp.id, l.group, &l.state, 0)
			if l.state.Cursor >= lastOffset {
				sw.w.settle(sp.id, l.group)
			}
		}
	}
	if ev.Skip {
		return false, nil // every lane is leased: a later sweep
	}
	floor, evicted := ev.Floor, ev.Evicted
	if _, err := sw.tx.Exec(sw.ctx, sqlSweepFloor, sp.id, floor); err != nil {
		return false, fmt.Errorf("retention sweep: move floor: %w", err)
	}
	sw.removed += evicted
	sw.history[sp.queue] += evicted
	return ev.More, nil
}

// record writes the step's history.
func (sw *sweep) record(now time.Time) error {
	minute := store.MinuteOf(now).UnixMilli()
	var tenants, queues, kinds []string
	var minutes, counts []int64
	for q, n := range sw.history {
		if n == 0 {
			continue
		}
		tenants, queues, kinds = append(tenants, q.tenant), append(queues, q.name), append(kinds, string(sw.kind))
		minutes, counts = append(minutes, minute), append(counts, int64(n))
	}
	if len(tenants) == 0 {
		return nil
	}
	if _, err := sw.tx.Exec(sw.ctx, sqlHistoryAdd, tenants, queues, kinds, minutes, counts); err != nil {
		return fmt.Errorf("retention sweep: record history: %w", err)
	}
	return nil
}

// RetentionPartitions deletes idle, empty partitions of one window of ids
// in one transaction.
func (s *Store) RetentionPartitions(ctx context.Context, p *store.RetentionPartitionsParams) (*store.RetentionResult, error) {
	limit := retain.Limit(p.Limit)
	out := &store.RetentionResult{}
	start := time.Now()
	defer func() { out.Took = time.Since(start) }()
	err := s.inRelaxedTx(ctx, "partition cleanup", func(t *txn) error {
		*out = store.RetentionResult{}
		var maxID int64
		if err := t.tx.QueryRow(t.ctx, retain.MaxPartition).Scan(&maxID); err != nil {
			return fmt.Errorf("partition cleanup: %w", err)
		}
		from := max(p.From, 1)
		if from > maxID {
			return nil
		}
		end := from + retain.Window
		rows, _ := t.tx.Query(t.ctx, sqlIdlePartitionsDelete, from, end, p.Tenant, p.IdleSince.UnixMilli(), limit)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("partition cleanup: %w", err)
		}
		if len(ids) > 0 {
			b := &pgx.Batch{}
			b.Queue(sqlIdleDeleteLanes, ids)
			b.Queue(sqlIdleDeleteDeadLetters, ids)
			b.Queue(sqlIdleDeleteGaps, ids)
			if err := t.execBatch(b); err != nil {
				return fmt.Errorf("partition cleanup: %w", err)
			}
			t.learn(func(c *cache) { c.reset() }) // cached partition rows may be gone
		}
		out.Removed = len(ids)
		out.Next = retain.IdleNext(ids, limit, end, maxID)
		return nil
	})
	return out, err
}

// RetentionHistory reads the history.
func (s *Store) RetentionHistory(ctx context.Context, p *store.RetentionHistoryParams) ([]store.RetentionHistoryEntry, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, sqlHistory, p.Since.UnixMilli(), p.Tenant, p.Queue)
	var out []store.RetentionHistoryEntry
	var e store.RetentionHistoryEntry
	var kind string
	var minute int64
	_, err := pgx.ForEachRow(rows, []any{&e.Tenant, &e.Queue, &kind, &minute, &e.Count}, func() error {
		e.Kind, e.Minute = store.RetentionKind(kind), time.UnixMilli(minute).UTC()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, wrapErr("postgres: read retention history", err)
	}
	return out, nil
}

// RetentionHistoryPrune forgets the history before p.Before.
func (s *Store) RetentionHistoryPrune(ctx context.Context, p *store.RetentionHistoryPruneParams) (int, error) {
	var n int
	err := s.inRelaxedTx(ctx, "prune retention history", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, sqlHistoryPrune, p.Before.UnixMilli())
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}
