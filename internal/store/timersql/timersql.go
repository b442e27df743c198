// Package timersql is store.TimerStore written once for both engines over
// sqlq: the statements, the scan of a timer, the fire step's algorithm
// (read the due timers, push their messages, record the outcomes), cancel,
// get, list and prune. An engine answers for what is its own: its lock on
// the due timers and on pruned rows, how it pushes, how it records a step's
// outcomes (row by row, or in one array statement), and TimerSchedule,
// whose batching differs.
package timersql

import (
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// Columns are a timer's columns in the order Scan reads them.
const Columns = `id, tenant, queue, partition, transaction_id, message_id, fire_at, status,
		COALESCE(error, ''), created_at, finished_at`

// The statements both engines run as they are.
const (
	Get    = `SELECT ` + Columns + ` FROM timers WHERE tenant = $1 AND id = $2`
	Next   = `SELECT min(fire_at) FROM timers WHERE status = 'scheduled'`
	Cancel = `UPDATE timers SET status = 'cancelled', finished_at = $3
		WHERE tenant = $1 AND id = $2 AND status = 'scheduled'`
	// List is a page of a tenant's timers ($2: a queue or '', $3: a status
	// or ''), each row with the number that match in all.
	List = `SELECT ` + Columns + `, count(*) OVER () FROM timers
		WHERE tenant = $1 AND ($2 = '' OR queue = $2) AND ($3 = '' OR status = $3)
		ORDER BY fire_at, id LIMIT $4 OFFSET $5`
	Count = `SELECT count(*) FROM timers
		WHERE tenant = $1 AND ($2 = '' OR queue = $2) AND ($3 = '' OR status = $3)`
)

// Due returns the statement that reads the due timers ($1 now, $2 limit),
// earliest first (a range of the partial index timers_due), with lock the
// engine's row lock ("" or " FOR UPDATE SKIP LOCKED").
func Due(lock string) string {
	return `SELECT id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			COALESCE(producer_sub, ''), payload, fire_at, created_at, sealed
		FROM timers WHERE status = 'scheduled' AND fire_at <= $1 ORDER BY fire_at, id LIMIT $2` + lock
}

// Prune returns the statement that deletes up to $2 timers that left
// scheduled before $1, with lock the engine's row lock.
func Prune(lock string) string {
	return `DELETE FROM timers WHERE id IN
		(SELECT id FROM timers WHERE status <> 'scheduled' AND finished_at < $1 LIMIT $2` + lock + `)`
}

// Default limits of the params that say 0.
const (
	DefaultFireLimit  = 1000
	DefaultListLimit  = 100
	DefaultPruneLimit = 1000
)

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Scan reads a row of Columns, then extra.
func Scan(row sqlq.Row, extra ...any) (store.Timer, error) {
	var t store.Timer
	var fireAt, createdAt, finishedAt int64
	var status string
	dest := append([]any{&t.ID, &t.Tenant, &t.Queue, &t.Partition, &t.TransactionID, &t.MessageID, &fireAt, &status,
		&t.Error, &createdAt, &finishedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	t.Status = store.TimerStatus(status)
	t.FireAt, t.CreatedAt = millis(fireAt), millis(createdAt)
	if finishedAt > 0 {
		t.FinishedAt = millis(finishedAt)
	}
	return t, nil
}

// Scheduled is the timer an item becomes when it is stored at nowMs.
func Scheduled(ti *store.TimerItem, tenant string, nowMs int64) store.Timer {
	it := &ti.Item
	return store.Timer{ID: ti.ID, Tenant: tenant, Queue: it.Queue, Partition: it.Partition,
		TransactionID: it.TransactionID, MessageID: it.MessageID, FireAt: millis(ti.FireAt.UnixMilli()),
		Status: store.TimerScheduled, CreatedAt: millis(nowMs)}
}

// Engine is what a fire step needs of an engine inside its transaction.
type Engine struct {
	// Due is Due with the engine's lock.
	Due string
	// Push pushes items at now as MessagePushMany does, one result per item.
	Push func(items []store.PushItem, now time.Time) ([]store.PushResult, error)
	// Finish records the outcomes of fired (status, message id, error) at
	// nowMs.
	Finish func(fired []store.FiredTimer, nowMs int64) error
}

// Fire is one fire step in an engine's transaction: it reads up to p.Limit
// due timers, pushes their messages and records each outcome, so that the
// messages and the status changes commit together.
func Fire(q sqlq.Q, e Engine, p *store.TimerFireDueParams) (*store.TimerFireResult, error) {
	nowMs := p.Now.UnixMilli()
	out := &store.TimerFireResult{}
	var items []store.PushItem
	err := q.Each(e.Due, []any{nowMs, orDefault(p.Limit, DefaultFireLimit)}, func(row sqlq.Row) error {
		var tm store.Timer
		var it store.PushItem
		var fireAt, createdAt int64
		if err := row.Scan(&tm.ID, &tm.Tenant, &tm.Queue, &tm.Partition, &tm.TransactionID, &tm.MessageID,
			&it.Namespace, &it.Task, &it.ProducerSub, &it.Payload, &fireAt, &createdAt, &it.Sealed); err != nil {
			return err
		}
		tm.FireAt, tm.CreatedAt = millis(fireAt), millis(createdAt)
		it.Tenant, it.Queue, it.Partition, it.TransactionID, it.MessageID =
			tm.Tenant, tm.Queue, tm.Partition, tm.TransactionID, tm.MessageID
		items = append(items, it)
		out.Fired = append(out.Fired, store.FiredTimer{Timer: tm})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read due timers: %w", err)
	}
	if len(items) == 0 {
		return out, nil
	}
	res, err := e.Push(items, p.Now)
	if err != nil {
		return nil, err
	}
	out.Pushed = store.TimerFireOutcome(out.Fired, res, p.Now)
	if err := e.Finish(out.Fired, nowMs); err != nil {
		return nil, fmt.Errorf("mark timers fired: %w", err)
	}
	return out, nil
}

// CancelIn cancels the timer in an engine's transaction and returns it as
// it is then; ErrTimerNotFound if there is none.
func CancelIn(q sqlq.Q, p *store.TimerCancelParams) (store.Timer, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	if _, err := q.Exec(Cancel, tenant, p.ID, p.Now.UnixMilli()); err != nil {
		return store.Timer{}, fmt.Errorf("cancel timer: %w", err)
	}
	tm, err := Scan(q.Row(Get, tenant, p.ID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return tm, store.ErrTimerNotFound
	case err != nil:
		return tm, fmt.Errorf("read timer: %w", err)
	}
	return tm, nil
}

// Cancelled is TimerCancel's answer once the transaction of CancelIn has
// committed: a timer that had fired (or failed) is ErrTimerFired.
func Cancelled(tm store.Timer, err error) (*store.Timer, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrTimerNotFound
	}
	if err != nil {
		return nil, err
	}
	if tm.Status == store.TimerFired || tm.Status == store.TimerFailed {
		return &tm, store.ErrTimerFired
	}
	return &tm, nil
}

// NextIn reads the earliest due time.
func NextIn(q sqlq.Q) (time.Time, bool, error) {
	var next *int64
	if err := q.Row(Next).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next timer: %w", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return millis(*next), true, nil
}

// GetIn reads one timer; ErrTimerNotFound if there is none.
func GetIn(q sqlq.Q, p *store.TimerGetParams) (*store.Timer, error) {
	tm, err := Scan(q.Row(Get, store.TenantOrDefault(p.Tenant), p.ID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, store.ErrTimerNotFound
	case err != nil:
		return nil, fmt.Errorf("read timer: %w", err)
	}
	return &tm, nil
}

// ListIn reads a page of timers and how many match.
func ListIn(q sqlq.Q, p *store.TimerListParams) (*store.TimerListResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.TimerListResult{Timers: []store.Timer{}}
	err := q.Each(List, []any{tenant, p.Queue, string(p.Status), orDefault(p.Limit, DefaultListLimit), p.Offset},
		func(row sqlq.Row) error {
			tm, err := Scan(row, &out.Total)
			out.Timers = append(out.Timers, tm)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("list timers: %w", err)
	}
	if len(out.Timers) == 0 && p.Offset > 0 {
		// A page past the end has no row to carry the total.
		if err := q.Row(Count, tenant, p.Queue, string(p.Status)).Scan(&out.Total); err != nil {
			return nil, fmt.Errorf("count timers: %w", err)
		}
	}
	return out, nil
}

// PruneIn deletes a bounded number of finished timers with prune (Prune
// with the engine's lock) and returns how many.
func PruneIn(q sqlq.Q, prune string, p *store.TimerPruneParams) (int, error) {
	n, err := q.Exec(prune, p.Before.UnixMilli(), orDefault(p.Limit, DefaultPruneLimit))
	if err != nil {
		return 0, fmt.Errorf("prune timers: %w", err)
	}
	return int(n), nil
}

func millis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
