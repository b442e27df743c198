package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// Timers. A fire is one transaction: the due timers are claimed with FOR
// UPDATE SKIP LOCKED (two brokers firing at once take different timers; the
// timer service also runs on one broker at a time, under a job lock), their
// messages pushed with the code of MessagePushMany (push.go: same dedup,
// same wake-ups of other brokers at commit), and their outcomes recorded.
// A cancel waits for a fire holding the timer, then finds it fired.
const (
	timerColumns = `id, tenant, queue, partition, transaction_id, message_id, fire_at, status,
		COALESCE(error, ''), created_at, finished_at`
	// Items of one call never repeat a dedup key (the timer service dedupes
	// them); ON CONFLICT DO NOTHING skips those stored before, and waits for
	// a concurrent schedule of the same key to commit or roll back.
	sqlTimersInsert = `INSERT INTO timers (id, tenant, queue, partition, transaction_id, message_id, namespace,
			task, producer_sub, payload, fire_at, status, created_at)
		SELECT u.id, $1, u.queue, u.partition, u.txn, u.message_id, u.namespace, u.task, NULLIF(u.producer_sub, ''),
			u.payload, u.fire_at, 'scheduled', $2
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
			$11::bytea[], $12::bigint[])
			AS u (id, queue, partition, txn, message_id, namespace, task, producer_sub, payload, fire_at)
		ON CONFLICT (tenant, queue, partition, transaction_id) DO NOTHING
		RETURNING id`
	sqlTimersByTxn = `SELECT ` + timerColumns + ` FROM timers
		WHERE tenant = $1 AND (queue, partition, transaction_id) IN
			(SELECT * FROM unnest($2::text[], $3::text[], $4::text[]))`
	sqlTimerGet  = `SELECT ` + timerColumns + ` FROM timers WHERE tenant = $1 AND id = $2`
	sqlTimersDue = `SELECT id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			COALESCE(producer_sub, ''), payload, fire_at, created_at
		FROM timers WHERE status = 'scheduled' AND fire_at <= $1
		ORDER BY fire_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`
	sqlTimersFinish = `UPDATE timers SET status = u.status, message_id = u.message_id,
			error = NULLIF(u.error, ''), finished_at = $1
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS u (id, status, message_id, error)
		WHERE timers.id = u.id`
	sqlTimerCancel = `UPDATE timers SET status = 'cancelled', finished_at = $3
		WHERE tenant = $1 AND id = $2 AND status = 'scheduled'`
	sqlTimerNext = `SELECT min(fire_at) FROM timers WHERE status = 'scheduled'`
	sqlTimerList = `SELECT ` + timerColumns + `, count(*) OVER () FROM timers
		WHERE tenant = $1 AND ($2 = '' OR queue = $2) AND ($3 = '' OR status = $3)
		ORDER BY fire_at, id LIMIT $4 OFFSET $5`
	sqlTimerCount = `SELECT count(*) FROM timers
		WHERE tenant = $1 AND ($2 = '' OR queue = $2) AND ($3 = '' OR status = $3)`
	sqlTimerPrune = `DELETE FROM timers WHERE id IN
		(SELECT id FROM timers WHERE status <> 'scheduled' AND finished_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

func scanTimer(row pgx.Row, extra ...any) (store.Timer, error) {
	var t store.Timer
	var fireAt, createdAt, finishedAt int64
	var status string
	dest := append([]any{&t.ID, &t.Tenant, &t.Queue, &t.Partition, &t.TransactionID, &t.MessageID, &fireAt, &status,
		&t.Error, &createdAt, &finishedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	t.Status = store.TimerStatus(status)
	t.FireAt, t.CreatedAt = time.UnixMilli(fireAt).UTC(), time.UnixMilli(createdAt).UTC()
	if finishedAt > 0 {
		t.FinishedAt = time.UnixMilli(finishedAt).UTC()
	}
	return t, nil
}

// timerKey is a timer's dedup key within its tenant.
type timerKey struct{ queue, partition, txn string }

// TimerSchedule stores timers in one transaction and tells the broker
// firing timers (whichever it is) to look again.
func (s *Store) TimerSchedule(ctx context.Context, p *store.TimerScheduleParams) ([]store.TimerScheduleResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	n := len(p.Items)
	ids, queues, parts, txns, msgIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nss, tasks, subs := make([]string, n), make([]string, n), make([]string, n)
	payloads, fireAts := make([][]byte, n), make([]int64, n)
	for i, ti := range p.Items {
		it := &ti.Item
		ids[i], queues[i], parts[i], txns[i], msgIDs[i] = ti.ID, it.Queue, it.Partition, it.TransactionID, it.MessageID
		nss[i], tasks[i], subs[i], payloads[i], fireAts[i] = it.Namespace, it.Task, it.ProducerSub, it.Payload, ti.FireAt.UnixMilli()
	}
	var out []store.TimerScheduleResult
	err := s.inTx(ctx, "timer schedule", func(t *txn) error {
		out = make([]store.TimerScheduleResult, n)
		rows, _ := t.tx.Query(t.ctx, sqlTimersInsert, tenant, nowMs, ids, queues, parts, txns, msgIDs, nss, tasks,
			subs, payloads, fireAts)
		inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("insert timers: %w", err)
		}
		stored := make(map[string]bool, len(inserted))
		for _, id := range inserted {
			stored[id] = true
		}
		var dq, dp, dt []string
		for i, ti := range p.Items {
			if stored[ti.ID] {
				out[i].Timer = store.Timer{ID: ti.ID, Tenant: tenant, Queue: queues[i], Partition: parts[i],
					TransactionID: txns[i], MessageID: msgIDs[i], FireAt: time.UnixMilli(fireAts[i]).UTC(),
					Status: store.TimerScheduled, CreatedAt: time.UnixMilli(nowMs).UTC()}
				continue
			}
			dq, dp, dt = append(dq, queues[i]), append(dp, parts[i]), append(dt, txns[i])
		}
		if len(dq) > 0 {
			rows, _ := t.tx.Query(t.ctx, sqlTimersByTxn, tenant, dq, dp, dt)
			found := make(map[timerKey]store.Timer)
			for rows.Next() {
				tm, err := scanTimer(rows)
				if err != nil {
					rows.Close()
					return fmt.Errorf("read scheduled timers: %w", err)
				}
				found[timerKey{tm.Queue, tm.Partition, tm.TransactionID}] = tm
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read scheduled timers: %w", err)
			}
			for i, ti := range p.Items {
				if stored[ti.ID] {
					continue
				}
				tm, ok := found[timerKey{queues[i], parts[i], txns[i]}]
				if !ok {
					return fmt.Errorf("read scheduled timers: %w", errStale) // deleted meanwhile: retry
				}
				out[i] = store.TimerScheduleResult{Duplicate: true, Timer: tm}
			}
		}
		if len(inserted) > 0 {
			t.wakeAfterCommit(store.Wake{Key: store.TimerWakeKey})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TimerFireDue fires due timers in one transaction.
func (s *Store) TimerFireDue(ctx context.Context, p *store.TimerFireDueParams) (*store.TimerFireResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	nowMs := p.Now.UnixMilli()
	var out *store.TimerFireResult
	err := s.inTx(ctx, "timer fire", func(t *txn) error {
		out = &store.TimerFireResult{}
		rows, _ := t.tx.Query(t.ctx, sqlTimersDue, nowMs, limit)
		var items []store.PushItem
		for rows.Next() {
			var tm store.Timer
			var it store.PushItem
			var fireAt, createdAt int64
			if err := rows.Scan(&tm.ID, &tm.Tenant, &tm.Queue, &tm.Partition, &tm.TransactionID, &tm.MessageID,
				&it.Namespace, &it.Task, &it.ProducerSub, &it.Payload, &fireAt, &createdAt); err != nil {
				rows.Close()
				return fmt.Errorf("claim due timers: %w", err)
			}
			tm.FireAt, tm.CreatedAt = time.UnixMilli(fireAt).UTC(), time.UnixMilli(createdAt).UTC()
			it.Tenant, it.Queue, it.Partition, it.TransactionID, it.MessageID =
				tm.Tenant, tm.Queue, tm.Partition, tm.TransactionID, tm.MessageID
			items = append(items, it)
			out.Fired = append(out.Fired, store.FiredTimer{Timer: tm})
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("claim due timers: %w", err)
		}
		if len(items) == 0 {
			return nil
		}
		entries := make([]pushEntry, len(items))
		for i := range items {
			entries[i] = pushEntry{item: &items[i], atMs: nowMs}
		}
		res, err := t.push(entries)
		if err != nil {
			return err
		}
		out.Pushed = store.TimerFireOutcome(out.Fired, res, p.Now)
		n := len(out.Fired)
		ids, statuses, msgIDs, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		for i, f := range out.Fired {
			ids[i], statuses[i], msgIDs[i], errs[i] = f.Timer.ID, string(f.Timer.Status), f.Timer.MessageID, f.Timer.Error
		}
		if _, err := t.tx.Exec(t.ctx, sqlTimersFinish, nowMs, ids, statuses, msgIDs, errs); err != nil {
			return fmt.Errorf("mark timers fired: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TimerNext reads the earliest due time.
func (s *Store) TimerNext(ctx context.Context, p *store.TimerNextParams) (time.Time, bool, error) {
	if err := s.readable(ctx); err != nil {
		return time.Time{}, false, err
	}
	var next *int64
	if err := s.pool.QueryRow(ctx, sqlTimerNext).Scan(&next); err != nil {
		return time.Time{}, false, wrapErr("postgres: next timer", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(*next).UTC(), true, nil
}

// TimerGet reads one timer.
func (s *Store) TimerGet(ctx context.Context, p *store.TimerGetParams) (*store.Timer, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	tm, err := scanTimer(s.pool.QueryRow(ctx, sqlTimerGet, store.TenantOrDefault(p.Tenant), p.ID))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, store.ErrTimerNotFound
	case err != nil:
		return nil, wrapErr("postgres: read timer", err)
	}
	return &tm, nil
}

// TimerList reads a page of timers.
func (s *Store) TimerList(ctx context.Context, p *store.TimerListParams) (*store.TimerListResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.TimerListResult{Timers: []store.Timer{}}
	rows, _ := s.pool.Query(ctx, sqlTimerList, tenant, p.Queue, string(p.Status), limit, p.Offset)
	for rows.Next() {
		tm, err := scanTimer(rows, &out.Total)
		if err != nil {
			rows.Close()
			return nil, wrapErr("postgres: list timers", err)
		}
		out.Timers = append(out.Timers, tm)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("postgres: list timers", err)
	}
	if len(out.Timers) == 0 && p.Offset > 0 {
		// A page past the end has no row to carry the total.
		if err := s.pool.QueryRow(ctx, sqlTimerCount, tenant, p.Queue, string(p.Status)).Scan(&out.Total); err != nil {
			return nil, wrapErr("postgres: count timers", err)
		}
	}
	return out, nil
}

// TimerCancel cancels a scheduled timer. A fire holding the timer's row
// makes it wait, then find the timer fired.
func (s *Store) TimerCancel(ctx context.Context, p *store.TimerCancelParams) (*store.Timer, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	var out store.Timer
	err := s.inTx(ctx, "timer cancel", func(t *txn) error {
		if _, err := t.tx.Exec(t.ctx, sqlTimerCancel, tenant, p.ID, p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("cancel timer: %w", err)
		}
		var err error
		out, err = scanTimer(t.tx.QueryRow(t.ctx, sqlTimerGet, tenant, p.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrTimerNotFound
		}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrTimerNotFound
	}
	if err != nil {
		return nil, err
	}
	if out.Status == store.TimerFired || out.Status == store.TimerFailed {
		return &out, store.ErrTimerFired
	}
	return &out, nil
}

// TimerPrune deletes a bounded number of finished timers.
func (s *Store) TimerPrune(ctx context.Context, p *store.TimerPruneParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	var n int64
	err := s.inRelaxedTx(ctx, "timer prune", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, sqlTimerPrune, p.Before.UnixMilli(), limit)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		return nil
	})
	return int(n), err
}
