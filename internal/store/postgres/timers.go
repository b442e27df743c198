package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/timersql"
)

// Timers. A fire is one transaction: the due timers are claimed with FOR
// UPDATE SKIP LOCKED (two brokers firing at once take different timers; the
// timer service also runs on one broker at a time, under a job lock), their
// messages pushed with the code of MessagePushMany (push.go: same dedup,
// same wake-ups of other brokers at commit), and their outcomes recorded.
// A cancel waits for a fire holding the timer, then finds it fired.
const (
	// Items of one call never repeat a dedup key (the timer service dedupes
	// them); ON CONFLICT DO NOTHING skips those stored before, and waits for
	// a concurrent schedule of the same key to commit or roll back.
	sqlTimersInsert = `INSERT INTO timers (id, tenant, queue, partition, transaction_id, message_id, namespace,
			task, producer_sub, payload, fire_at, status, created_at, sealed)
		SELECT u.id, $1, u.queue, u.partition, u.txn, u.message_id, u.namespace, u.task, NULLIF(u.producer_sub, ''),
			u.payload, u.fire_at, 'scheduled', $2, u.sealed
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
			$11::bytea[], $12::bigint[], $13::smallint[])
			AS u (id, queue, partition, txn, message_id, namespace, task, producer_sub, payload, fire_at, sealed)
		ON CONFLICT (tenant, queue, partition, transaction_id) DO NOTHING
		RETURNING id`
	sqlTimersByTxn = `SELECT ` + timersql.Columns + ` FROM timers
		WHERE tenant = $1 AND (queue, partition, transaction_id) IN
			(SELECT * FROM unnest($2::text[], $3::text[], $4::text[]))`
	sqlTimersFinish = `UPDATE timers SET status = u.status, message_id = u.message_id,
			error = NULLIF(u.error, ''), finished_at = $1
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS u (id, status, message_id, error)
		WHERE timers.id = u.id`
)

// Two brokers firing (or pruning) at once take different timers.
var (
	sqlTimersDue  = timersql.Due(" FOR UPDATE SKIP LOCKED")
	sqlTimerPrune = timersql.Prune(" FOR UPDATE SKIP LOCKED")
)

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
	payloads, fireAts, sealed := make([][]byte, n), make([]int64, n), make([]int16, n)
	for i, ti := range p.Items {
		it := &ti.Item
		sealed[i] = int16(it.Sealed)
		ids[i], queues[i], parts[i], txns[i], msgIDs[i] = ti.ID, it.Queue, it.Partition, it.TransactionID, it.MessageID
		nss[i], tasks[i], subs[i], payloads[i], fireAts[i] = it.Namespace, it.Task, it.ProducerSub, it.Payload, ti.FireAt.UnixMilli()
	}
	var out []store.TimerScheduleResult
	err := s.inTx(ctx, "timer schedule", func(t *txn) error {
		out = make([]store.TimerScheduleResult, n)
		rows, _ := t.tx.Query(t.ctx, sqlTimersInsert, tenant, nowMs, ids, queues, parts, txns, msgIDs, nss, tasks,
			subs, payloads, fireAts, sealed)
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
				out[i].Timer = timersql.Scheduled(&p.Items[i], tenant, nowMs)
				continue
			}
			dq, dp, dt = append(dq, queues[i]), append(dp, parts[i]), append(dt, txns[i])
		}
		if len(dq) > 0 {
			rows, _ := t.tx.Query(t.ctx, sqlTimersByTxn, tenant, dq, dp, dt)
			found := make(map[timerKey]store.Timer)
			for rows.Next() {
				tm, err := timersql.Scan(rows)
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
	var out *store.TimerFireResult
	err := s.inTx(ctx, "timer fire", func(t *txn) error {
		var err error
		out, err = timersql.Fire(t.q(), timersql.Engine{Due: sqlTimersDue, Push: t.pushAt, Finish: t.finishTimers}, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pushAt pushes items as MessagePushMany does, all at now.
func (t *txn) pushAt(items []store.PushItem, now time.Time) ([]store.PushResult, error) {
	entries := make([]pushEntry, len(items))
	for i := range items {
		entries[i] = pushEntry{item: &items[i], atMs: now.UnixMilli()}
	}
	return t.push(entries)
}

// finishTimers records the outcomes of a fire step in one statement.
func (t *txn) finishTimers(fired []store.FiredTimer, nowMs int64) error {
	n := len(fired)
	ids, statuses, msgIDs, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, f := range fired {
		ids[i], statuses[i], msgIDs[i], errs[i] = f.Timer.ID, string(f.Timer.Status), f.Timer.MessageID, f.Timer.Error
	}
	_, err := t.tx.Exec(t.ctx, sqlTimersFinish, nowMs, ids, statuses, msgIDs, errs)
	return err
}

// TimerNext reads the earliest due time.
func (s *Store) TimerNext(ctx context.Context, p *store.TimerNextParams) (time.Time, bool, error) {
	if err := s.readable(ctx); err != nil {
		return time.Time{}, false, err
	}
	at, ok, err := timersql.NextIn(s.poolQ(ctx))
	return at, ok, readErr("postgres", err)
}

// TimerGet reads one timer.
func (s *Store) TimerGet(ctx context.Context, p *store.TimerGetParams) (*store.Timer, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	tm, err := timersql.GetIn(s.poolQ(ctx), p)
	return tm, readErr("postgres", err)
}

// TimerList reads a page of timers.
func (s *Store) TimerList(ctx context.Context, p *store.TimerListParams) (*store.TimerListResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	out, err := timersql.ListIn(s.poolQ(ctx), p)
	return out, readErr("postgres", err)
}

// TimerCancel cancels a scheduled timer. A fire holding the timer's row
// makes it wait, then find the timer fired.
func (s *Store) TimerCancel(ctx context.Context, p *store.TimerCancelParams) (*store.Timer, error) {
	var out store.Timer
	err := s.inTx(ctx, "timer cancel", func(t *txn) error {
		var err error
		out, err = timersql.CancelIn(t.q(), p)
		return err
	})
	return timersql.Cancelled(out, err)
}

// TimerPrune deletes a bounded number of finished timers.
func (s *Store) TimerPrune(ctx context.Context, p *store.TimerPruneParams) (int, error) {
	var n int
	err := s.inRelaxedTx(ctx, "timer prune", func(t *txn) error {
		var err error
		n, err = timersql.PruneIn(t.q(), sqlTimerPrune, p)
		return err
	})
	return n, err
}
