package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Ephemeral queues. Every change is a writer job, so a pop's read and delete
// cannot interleave with another pop: no message is delivered twice. Pushes
// commit relaxed (an ephemeral message may be lost to a power failure, by
// definition); pops that delete commit durably, so that a message delivered
// once cannot come back after a power failure and be delivered again.
const (
	sqlEphQueue = `SELECT id, ttl_ms, max_messages, created_at, expires_at FROM ephemeral_queues
		WHERE tenant = ? AND name = ?`
	sqlEphInsert = `INSERT INTO ephemeral_queues (tenant, name, ttl_ms, max_messages, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`
	sqlEphDeleteQueue    = `DELETE FROM ephemeral_queues WHERE id = ?`
	sqlEphDeleteMessages = `DELETE FROM ephemeral_messages WHERE queue_id = ?`
	sqlEphKeepalive      = `UPDATE ephemeral_queues SET expires_at = ?3 + ttl_ms
		WHERE tenant = ?1 AND name = ?2 AND expires_at > ?3
		RETURNING ttl_ms, max_messages, created_at, expires_at`
	sqlEphDepth      = `SELECT count(*) FROM ephemeral_messages WHERE queue_id = ?`
	sqlEphMsgInsert  = `INSERT INTO ephemeral_messages (queue_id, id, payload, created_at) VALUES (?, ?, ?, ?)`
	sqlEphHasMessage = `SELECT q.id, q.expires_at, EXISTS (SELECT 1 FROM ephemeral_messages m WHERE m.queue_id = q.id)
		FROM ephemeral_queues q WHERE q.tenant = ? AND q.name = ?`
	sqlEphPop = `DELETE FROM ephemeral_messages WHERE seq IN
			(SELECT seq FROM ephemeral_messages WHERE queue_id = ?1 ORDER BY seq LIMIT ?2)
		RETURNING seq, id, payload, created_at`
	sqlEphList = `SELECT q.name, q.ttl_ms, q.max_messages, q.created_at, q.expires_at,
			(SELECT count(*) FROM ephemeral_messages m WHERE m.queue_id = q.id)
		FROM ephemeral_queues q WHERE q.tenant = ?1 AND q.expires_at > ?2
		ORDER BY q.name LIMIT ?3 OFFSET ?4`
	sqlEphCount   = `SELECT count(*) FROM ephemeral_queues WHERE tenant = ? AND expires_at > ?`
	sqlEphExpired = `SELECT id FROM ephemeral_queues WHERE expires_at <= ? ORDER BY expires_at LIMIT ?`
)

// ephemeralStatements are prepared on the writer connection with the others.
var ephemeralStatements = []string{sqlEphQueue, sqlEphDepth, sqlEphMsgInsert, sqlEphPop}

// featureStatements are the prepared statements of key/value state, timers
// and ephemeral queues (prepare in queries.go adds them).
var featureStatements = append(append(append([]string(nil), kvStatements...), timerStatements...), ephemeralStatements...)

// ephRow is an ephemeral queue's row.
type ephRow struct {
	id, ttlMs, createdAt, expiresAt int64
	maxMessages                     int
}

func (r ephRow) queue(name string) *store.EphemeralQueue {
	return &store.EphemeralQueue{Name: name, TTL: time.Duration(r.ttlMs) * time.Millisecond, MaxMessages: r.maxMessages,
		CreatedAt: time.UnixMilli(r.createdAt).UTC(), ExpiresAt: time.UnixMilli(r.expiresAt).UTC()}
}

// ephQueue reads a queue's row, live or expired; ok is false without one.
func (t *txn) ephQueue(tenant, name string) (ephRow, bool, error) {
	var r ephRow
	err := t.queryRow(sqlEphQueue, tenant, name).Scan(&r.id, &r.ttlMs, &r.maxMessages, &r.createdAt, &r.expiresAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return r, false, nil
	case err != nil:
		return r, false, fmt.Errorf("read ephemeral queue: %w", err)
	}
	return r, true, nil
}

// ephDrop deletes a queue's row and its messages.
func (t *txn) ephDrop(id int64) error {
	if _, err := t.tx.ExecContext(t.ctx, sqlEphDeleteMessages, id); err != nil {
		return fmt.Errorf("delete ephemeral messages: %w", err)
	}
	if _, err := t.tx.ExecContext(t.ctx, sqlEphDeleteQueue, id); err != nil {
		return fmt.Errorf("delete ephemeral queue: %w", err)
	}
	return nil
}

// EphemeralCreate creates a queue, replacing an expired one of that name.
func (s *Store) EphemeralCreate(ctx context.Context, p *store.EphemeralCreateParams) (*store.EphemeralQueue, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	r := ephRow{ttlMs: p.TTL.Milliseconds(), maxMessages: p.MaxMessages, createdAt: nowMs, expiresAt: nowMs + p.TTL.Milliseconds()}
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		old, ok, err := t.ephQueue(tenant, p.Name)
		if err != nil {
			return err
		}
		if ok && old.expiresAt > nowMs {
			return store.ErrEphemeralExists
		}
		if ok {
			if err := t.ephDrop(old.id); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, sqlEphInsert, tenant, p.Name, r.ttlMs, r.maxMessages, r.createdAt,
			r.expiresAt).Scan(&r.id); err != nil {
			return fmt.Errorf("create ephemeral queue: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.queue(p.Name), nil
}

// EphemeralDelete deletes a queue and its messages.
func (s *Store) EphemeralDelete(ctx context.Context, p *store.EphemeralDeleteParams) (bool, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	live := false
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		r, ok, err := t.ephQueue(tenant, p.Name)
		if err != nil || !ok {
			return err
		}
		live = r.expiresAt > p.Now.UnixMilli()
		return t.ephDrop(r.id)
	})
	return live, err
}

// EphemeralKeepalive moves a live queue's expiry.
func (s *Store) EphemeralKeepalive(ctx context.Context, p *store.EphemeralKeepaliveParams) (*store.EphemeralQueue, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	var r ephRow
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, sqlEphKeepalive, tenant, p.Name, p.Now.UnixMilli()).Scan(
			&r.ttlMs, &r.maxMessages, &r.createdAt, &r.expiresAt)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrEphemeralNotFound
		case err != nil:
			return fmt.Errorf("keep ephemeral queue alive: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.queue(p.Name), nil
}

// EphemeralList reads a page of live queues through the read-only
// connections.
func (s *Store) EphemeralList(ctx context.Context, p *store.EphemeralListParams) (*store.EphemeralListResult, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	out := &store.EphemeralListResult{Queues: []store.EphemeralQueue{}}
	if err := s.reader.QueryRowContext(ctx, sqlEphCount, tenant, nowMs).Scan(&out.Total); err != nil {
		return nil, fmt.Errorf("%w: count ephemeral queues: %w", store.ErrUnavailable, err)
	}
	rows, err := s.reader.QueryContext(ctx, sqlEphList, tenant, nowMs, limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("%w: list ephemeral queues: %w", store.ErrUnavailable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var r ephRow
		var depth int
		if err := rows.Scan(&name, &r.ttlMs, &r.maxMessages, &r.createdAt, &r.expiresAt, &depth); err != nil {
			return nil, fmt.Errorf("list ephemeral queues: %w", err)
		}
		q := r.queue(name)
		q.Depth = depth
		out.Queues = append(out.Queues, *q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: list ephemeral queues: %w", store.ErrUnavailable, err)
	}
	return out, nil
}

// EphemeralPop looks through the read-only connections first: a queue with
// nothing to deliver (the common case of a long poll) costs no writer job.
func (s *Store) EphemeralPop(ctx context.Context, p *store.EphemeralPopParams) ([]store.EphemeralMessage, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	var id, expiresAt int64
	var has bool
	err := s.reader.QueryRowContext(ctx, sqlEphHasMessage, tenant, p.Name).Scan(&id, &expiresAt, &has)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, store.ErrEphemeralNotFound
	case err != nil:
		return nil, fmt.Errorf("%w: read ephemeral queue: %w", store.ErrUnavailable, err)
	case expiresAt <= nowMs:
		return nil, store.ErrEphemeralNotFound
	case !has:
		return nil, nil
	}
	var out []store.EphemeralMessage
	err = s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		r, ok, err := t.ephQueue(tenant, p.Name)
		if err != nil {
			return err
		}
		if !ok || r.expiresAt <= nowMs {
			return store.ErrEphemeralNotFound
		}
		rows, err := t.query(sqlEphPop, r.id, max(p.Limit, 1))
		if err != nil {
			return fmt.Errorf("pop ephemeral messages: %w", err)
		}
		defer rows.Close()
		out, err = scanEphemeral(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanEphemeral reads popped messages (seq, id, payload, created_at) and
// returns them in seq order: RETURNING promises no order.
func scanEphemeral(rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}) ([]store.EphemeralMessage, error) {
	type popped struct {
		seq int64
		m   store.EphemeralMessage
	}
	var got []popped
	for rows.Next() {
		var p popped
		var createdAt int64
		if err := rows.Scan(&p.seq, &p.m.ID, &p.m.Payload, &createdAt); err != nil {
			return nil, fmt.Errorf("pop ephemeral messages: %w", err)
		}
		p.m.CreatedAt = time.UnixMilli(createdAt).UTC()
		got = append(got, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pop ephemeral messages: %w", err)
	}
	slices.SortFunc(got, func(a, b popped) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]store.EphemeralMessage, len(got))
	for i, p := range got {
		out[i] = p.m
	}
	return out, nil
}

// EphemeralPush stores messages in one writer job.
func (s *Store) EphemeralPush(ctx context.Context, p *store.EphemeralPushParams) ([]store.EphemeralPushResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	var out []store.EphemeralPushResult
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		t := s.txn(tx)
		out = make([]store.EphemeralPushResult, len(p.Items))
		type room struct {
			id   int64
			left int // messages the queue may still take; < 0: no live queue
		}
		rooms := make(map[string]*room)
		for i, it := range p.Items {
			rm := rooms[it.Queue]
			if rm == nil {
				rm = &room{left: -1}
				rooms[it.Queue] = rm
				r, ok, err := t.ephQueue(tenant, it.Queue)
				if err != nil {
					return err
				}
				if ok && r.expiresAt > nowMs {
					var depth int
					if err := t.queryRow(sqlEphDepth, r.id).Scan(&depth); err != nil {
						return fmt.Errorf("count ephemeral messages: %w", err)
					}
					rm.id, rm.left = r.id, max(r.maxMessages-depth, 0)
				}
			}
			switch {
			case rm.left < 0:
				out[i].Error = api.ReasonQueueNotFound
				continue
			case rm.left == 0:
				out[i].Error = api.ReasonQueueFull
				continue
			}
			if _, err := t.exec(sqlEphMsgInsert, rm.id, it.ID, string(it.Payload), nowMs); err != nil {
				return fmt.Errorf("insert ephemeral message: %w", err)
			}
			rm.left--
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EphemeralSweep deletes a bounded number of expired queues, with their
// messages, in one writer job.
func (s *Store) EphemeralSweep(ctx context.Context, p *store.EphemeralSweepParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	n := 0
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		t := s.txn(tx)
		n = 0
		rows, err := tx.QueryContext(ctx, sqlEphExpired, p.Now.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("find expired ephemeral queues: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("find expired ephemeral queues: %w", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("find expired ephemeral queues: %w", err)
		}
		for _, id := range ids {
			if err := t.ephDrop(id); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}
