package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Timers. Scheduling, firing and cancelling are writer jobs, so a fire and a
// cancel of the same timer are serialised by the writer; a fire pushes with
// the same code as MessagePushMany (push.go) inside its job, and the job's
// commit is the fire: the messages and the status change are one commit.
const (
	timerColumns = `id, tenant, queue, partition, transaction_id, message_id, fire_at, status,
		COALESCE(error, ''), created_at, finished_at`
	sqlTimerInsert = `INSERT INTO timers (id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			producer_sub, payload, fire_at, status, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'scheduled', ?)
		ON CONFLICT (tenant, queue, partition, transaction_id) DO NOTHING`
	sqlTimerByTxn = `SELECT ` + timerColumns + ` FROM timers
		WHERE tenant = ? AND queue = ? AND partition = ? AND transaction_id = ?`
	sqlTimerGet = `SELECT ` + timerColumns + ` FROM timers WHERE tenant = ? AND id = ?`
	// Due timers, earliest first: a range of the partial index timers_due.
	sqlTimersDue = `SELECT id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			COALESCE(producer_sub, ''), payload, fire_at, created_at
		FROM timers WHERE status = 'scheduled' AND fire_at <= ? ORDER BY fire_at, id LIMIT ?`
	sqlTimerFinish = `UPDATE timers SET status = ?2, message_id = ?3, error = ?4, finished_at = ?5 WHERE id = ?1`
	sqlTimerCancel = `UPDATE timers SET status = 'cancelled', finished_at = ?3
		WHERE tenant = ?1 AND id = ?2 AND status = 'scheduled'`
	sqlTimerNext = `SELECT min(fire_at) FROM timers WHERE status = 'scheduled'`
	// A page of a tenant's timers (?2: a queue or '', ?3: a status or '').
	sqlTimerList = `SELECT ` + timerColumns + ` FROM timers
		WHERE tenant = ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR status = ?3)
		ORDER BY fire_at, id LIMIT ?4 OFFSET ?5`
	sqlTimerCount = `SELECT count(*) FROM timers
		WHERE tenant = ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR status = ?3)`
	sqlTimerPrune = `DELETE FROM timers WHERE id IN
		(SELECT id FROM timers WHERE status <> 'scheduled' AND finished_at < ?1 LIMIT ?2)`
)

// timerStatements are prepared on the writer connection with the others.
var timerStatements = []string{sqlTimerInsert, sqlTimerByTxn, sqlTimersDue, sqlTimerFinish}

// scanner is a row or rows being scanned.
type scanner interface{ Scan(dest ...any) error }

func scanTimer(row scanner) (store.Timer, error) {
	var t store.Timer
	var fireAt, createdAt, finishedAt int64
	var status string
	err := row.Scan(&t.ID, &t.Tenant, &t.Queue, &t.Partition, &t.TransactionID, &t.MessageID, &fireAt, &status,
		&t.Error, &createdAt, &finishedAt)
	if err != nil {
		return t, err
	}
	t.Status = store.TimerStatus(status)
	t.FireAt, t.CreatedAt = time.UnixMilli(fireAt).UTC(), time.UnixMilli(createdAt).UTC()
	if finishedAt > 0 {
		t.FinishedAt = time.UnixMilli(finishedAt).UTC()
	}
	return t, nil
}

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
				it.Namespace, it.Task, nullString(it.ProducerSub), string(it.Payload), ti.FireAt.UnixMilli(), nowMs)
			if err != nil {
				return fmt.Errorf("insert timer: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				out[i].Timer = store.Timer{ID: ti.ID, Tenant: tenant, Queue: it.Queue, Partition: it.Partition,
					TransactionID: it.TransactionID, MessageID: it.MessageID, FireAt: time.UnixMilli(ti.FireAt.UnixMilli()).UTC(),
					Status: store.TimerScheduled, CreatedAt: time.UnixMilli(nowMs).UTC()}
				continue
			}
			tm, err := scanTimer(t.queryRow(sqlTimerByTxn, tenant, it.Queue, it.Partition, it.TransactionID))
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
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	nowMs := p.Now.UnixMilli()
	var out *store.TimerFireResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		out = &store.TimerFireResult{}
		rows, err := t.query(sqlTimersDue, nowMs, limit)
		if err != nil {
			return fmt.Errorf("read due timers: %w", err)
		}
		var items []store.PushItem
		for rows.Next() {
			var tm store.Timer
			var it store.PushItem
			var fireAt, createdAt int64
			if err := rows.Scan(&tm.ID, &tm.Tenant, &tm.Queue, &tm.Partition, &tm.TransactionID, &tm.MessageID,
				&it.Namespace, &it.Task, &it.ProducerSub, &it.Payload, &fireAt, &createdAt); err != nil {
				rows.Close()
				return fmt.Errorf("read due timers: %w", err)
			}
			tm.FireAt, tm.CreatedAt = time.UnixMilli(fireAt).UTC(), time.UnixMilli(createdAt).UTC()
			it.Tenant, it.Queue, it.Partition, it.TransactionID, it.MessageID =
				tm.Tenant, tm.Queue, tm.Partition, tm.TransactionID, tm.MessageID
			items = append(items, it)
			out.Fired = append(out.Fired, store.FiredTimer{Timer: tm})
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read due timers: %w", err)
		}
		rows.Close()
		if len(items) == 0 {
			return nil
		}
		res, err := t.push(items, p.Now)
		if err != nil {
			return err
		}
		out.Pushed = store.TimerFireOutcome(out.Fired, res, p.Now)
		for _, f := range out.Fired {
			tm := f.Timer
			if _, err := t.exec(sqlTimerFinish, tm.ID, string(tm.Status), tm.MessageID, nullString(tm.Error), nowMs); err != nil {
				return fmt.Errorf("mark timer fired: %w", err)
			}
		}
		return nil
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
	var next sql.NullInt64
	if err := s.reader.QueryRowContext(ctx, sqlTimerNext).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("%w: next timer: %w", store.ErrUnavailable, err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(next.Int64).UTC(), true, nil
}

// TimerGet reads a timer through the read-only connections.
func (s *Store) TimerGet(ctx context.Context, p *store.TimerGetParams) (*store.Timer, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	tm, err := scanTimer(s.reader.QueryRowContext(ctx, sqlTimerGet, store.TenantOrDefault(p.Tenant), p.ID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, store.ErrTimerNotFound
	case err != nil:
		return nil, fmt.Errorf("%w: read timer: %w", store.ErrUnavailable, err)
	}
	return &tm, nil
}

// TimerList reads a page of timers through the read-only connections.
func (s *Store) TimerList(ctx context.Context, p *store.TimerListParams) (*store.TimerListResult, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.TimerListResult{Timers: []store.Timer{}}
	if err := s.reader.QueryRowContext(ctx, sqlTimerCount, tenant, p.Queue, string(p.Status)).Scan(&out.Total); err != nil {
		return nil, fmt.Errorf("%w: count timers: %w", store.ErrUnavailable, err)
	}
	rows, err := s.reader.QueryContext(ctx, sqlTimerList, tenant, p.Queue, string(p.Status), limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("%w: list timers: %w", store.ErrUnavailable, err)
	}
	defer rows.Close()
	for rows.Next() {
		tm, err := scanTimer(rows)
		if err != nil {
			return nil, fmt.Errorf("list timers: %w", err)
		}
		out.Timers = append(out.Timers, tm)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: list timers: %w", store.ErrUnavailable, err)
	}
	return out, nil
}

// TimerCancel cancels a timer in one writer job, serialised with fires.
func (s *Store) TimerCancel(ctx context.Context, p *store.TimerCancelParams) (*store.Timer, error) {
	var out store.Timer
	tenant := store.TenantOrDefault(p.Tenant)
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlTimerCancel, tenant, p.ID, p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("cancel timer: %w", err)
		}
		var err error
		out, err = scanTimer(tx.QueryRowContext(ctx, sqlTimerGet, tenant, p.ID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrTimerNotFound
		case err != nil:
			return fmt.Errorf("read timer: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.Status == store.TimerFired || out.Status == store.TimerFailed {
		return &out, store.ErrTimerFired
	}
	return &out, nil
}

// TimerPrune deletes a bounded number of finished timers in one writer job.
func (s *Store) TimerPrune(ctx context.Context, p *store.TimerPruneParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	var n int64
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlTimerPrune, p.Before.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("prune timers: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
