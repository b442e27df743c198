package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
	"github.com/queen-go/queen/internal/store/timersql"
)

// Timers: the shared algorithm of timersql, with these statements and
// the writer's serialisation. Scheduling, firing and cancelling are writer
// jobs, so a fire and a cancel of the same timer are serialised by the
// writer; a fire pushes with the same code as MessagePushMany (push.go)
// inside its job, and the job's commit is the fire: the messages and the
// status change are one commit.
const (
	sqlTimerInsert = `INSERT INTO timers (id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			producer_sub, payload, fire_at, status, created_at, sealed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'scheduled', ?, ?)
		ON CONFLICT (tenant, queue, partition, transaction_id) DO NOTHING`
	sqlTimerByTxn = `SELECT ` + timersql.Columns + ` FROM timers
		WHERE tenant = ? AND queue = ? AND partition = ? AND transaction_id = ?`
	sqlTimerFinish = `UPDATE timers SET status = ?2, message_id = ?3, error = ?4, finished_at = ?5 WHERE id = ?1`
)

// timerStatements are prepared on the writer connection with the others.
var timerStatements = []string{sqlTimerInsert, sqlTimerByTxn, sqlTimerFinish, sqlq.SQLite(sqlTimersDue)}

// The writer is the only one to touch a timer: no lock.
var (
	sqlTimersDue  = timersql.Due("")
	sqlTimerPrune = timersql.Prune("")
)

// TimerSchedule stores timers in one writer job.
func (s *Store) TimerSchedule(ctx context.Context, p *store.TimerScheduleParams) ([]store.TimerScheduleResult, error) {
	var out []store.TimerScheduleResult
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		out = make([]store.TimerScheduleResult, len(p.Items))
		for i, ti := range p.Items {
			it := &ti.Item
			res, err := t.exec(sqlTimerInsert, ti.ID, tenant, it.Queue, it.Partition, it.TransactionID, it.MessageID,
				it.Namespace, it.Task, nullString(it.ProducerSub), string(it.Payload), ti.FireAt.UnixMilli(), nowMs,
				int64(it.Sealed))
			if err != nil {
				return fmt.Errorf("insert timer: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				out[i].Timer = timersql.Scheduled(&p.Items[i], tenant, nowMs)
				continue
			}
			tm, err := timersql.Scan(t.queryRow(sqlTimerByTxn, tenant, it.Queue, it.Partition, it.TransactionID))
			if err != nil {
				return fmt.Errorf("read scheduled timer: %w", err)
			}
			out[i] = store.TimerScheduleResult{Duplicate: true, Timer: tm}
		}
		return nil
	})
	return out, err
}

// TimerFireDue fires due timers in one writer job: their pushes and their
// status changes commit together.
func (s *Store) TimerFireDue(ctx context.Context, p *store.TimerFireDueParams) (*store.TimerFireResult, error) {
	var out *store.TimerFireResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		var err error
		out, err = timersql.Fire(t.q(), timersql.Engine{Due: sqlTimersDue, Push: t.push,
			Finish: func(fired []store.FiredTimer, nowMs int64) error {
				for _, f := range fired {
					tm := &f.Timer
					if _, err := t.exec(sqlTimerFinish, tm.ID, string(tm.Status), tm.MessageID, nullString(tm.Error),
						nowMs); err != nil {
						return err
					}
				}
				return nil
			}}, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TimerNext reads the earliest due time through the read-only connections.
func (s *Store) TimerNext(ctx context.Context, p *store.TimerNextParams) (time.Time, bool, error) {
	if err := s.open(); err != nil {
		return time.Time{}, false, err
	}
	at, ok, err := timersql.NextIn(s.readQ(ctx))
	return at, ok, unavailable(err)
}

// TimerGet reads a timer through the read-only connections.
func (s *Store) TimerGet(ctx context.Context, p *store.TimerGetParams) (*store.Timer, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	tm, err := timersql.GetIn(s.readQ(ctx), p)
	return tm, unavailable(err)
}

// TimerList reads a page of timers through the read-only connections.
func (s *Store) TimerList(ctx context.Context, p *store.TimerListParams) (*store.TimerListResult, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	out, err := timersql.ListIn(s.readQ(ctx), p)
	return out, unavailable(err)
}

// TimerCancel cancels a timer in one writer job, serialised with fires.
func (s *Store) TimerCancel(ctx context.Context, p *store.TimerCancelParams) (*store.Timer, error) {
	var out store.Timer
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		var err error
		out, err = timersql.CancelIn(txQ(ctx, tx), p)
		return err
	})
	return timersql.Cancelled(out, err)
}

// TimerPrune deletes a bounded number of finished timers in one writer job.
func (s *Store) TimerPrune(ctx context.Context, p *store.TimerPruneParams) (int, error) {
	var n int
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		var err error
		n, err = timersql.PruneIn(txQ(ctx, tx), sqlTimerPrune, p)
		return err
	})
	return n, err
}
