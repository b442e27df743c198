// Package ephsql is what the engines do alike for ephemeral queues, written
// once over sqlq: the statements, a queue's row, create over an expired
// queue, keepalive, the list page, a pop's reading of what it deleted, and
// the room rule of a push. An engine answers for its locks, how it deletes
// a queue's messages, the pop's path (a look through the read connections
// first on SQLite, SKIP LOCKED on PostgreSQL) and its push batching.
package ephsql

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// The statements both engines run as they are.
const (
	Insert = `INSERT INTO ephemeral_queues (tenant, name, ttl_ms, max_messages, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`
	Keepalive = `UPDATE ephemeral_queues SET expires_at = $3 + ttl_ms
		WHERE tenant = $1 AND name = $2 AND expires_at > $3
		RETURNING ttl_ms, max_messages, created_at, expires_at`
	// List is a page of the tenant's live queues, with their depths and
	// the number of live queues in all.
	List = `SELECT q.name, q.ttl_ms, q.max_messages, q.created_at, q.expires_at,
			(SELECT count(*) FROM ephemeral_messages m WHERE m.queue_id = q.id), count(*) OVER ()
		FROM ephemeral_queues q WHERE q.tenant = $1 AND q.expires_at > $2
		ORDER BY q.name LIMIT $3 OFFSET $4`
	Count = `SELECT count(*) FROM ephemeral_queues WHERE tenant = $1 AND expires_at > $2`
)

// Row returns the statement that reads a queue's row, live or expired
// ($1 tenant, $2 name), with lock the engine's row lock.
func Row(lock string) string {
	return `SELECT id, ttl_ms, max_messages, created_at, expires_at FROM ephemeral_queues
		WHERE tenant = $1 AND name = $2` + lock
}

// Pop returns the statement that deletes and returns the oldest $2
// messages of queue $1, with lock the engine's lock on them.
func Pop(lock string) string {
	return `DELETE FROM ephemeral_messages WHERE seq IN
			(SELECT seq FROM ephemeral_messages WHERE queue_id = $1 ORDER BY seq LIMIT $2` + lock + `)
		RETURNING seq, id, payload, created_at`
}

// Default limits of the params that say 0.
const (
	DefaultListLimit  = 100
	DefaultSweepLimit = 100
)

// SweepLimit is p.Limit, or DefaultSweepLimit.
func SweepLimit(p *store.EphemeralSweepParams) int {
	if p.Limit <= 0 {
		return DefaultSweepLimit
	}
	return p.Limit
}

// Queue is a queue's row.
type Queue struct {
	ID, TTLMs, CreatedAt, ExpiresAt int64
	MaxMessages                     int
}

// Of is the queue as the store answers it.
func (r Queue) Of(name string) *store.EphemeralQueue {
	return &store.EphemeralQueue{Name: name, TTL: time.Duration(r.TTLMs) * time.Millisecond, MaxMessages: r.MaxMessages,
		CreatedAt: time.UnixMilli(r.CreatedAt).UTC(), ExpiresAt: time.UnixMilli(r.ExpiresAt).UTC()}
}

// Read reads a queue's row with row (Row with the engine's lock); ok is
// false without one.
func Read(q sqlq.Q, row, tenant, name string) (r Queue, ok bool, err error) {
	err = q.Row(row, tenant, name).Scan(&r.ID, &r.TTLMs, &r.MaxMessages, &r.CreatedAt, &r.ExpiresAt)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return r, false, nil
	case err != nil:
		return r, false, fmt.Errorf("read ephemeral queue: %w", err)
	}
	return r, true, nil
}

// CreateIn creates a queue in an engine's transaction, replacing an expired
// one of that name (drop deletes a queue's row and messages); a live one is
// ErrEphemeralExists.
func CreateIn(q sqlq.Q, row string, drop func(id int64) error, p *store.EphemeralCreateParams) (*store.EphemeralQueue, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	old, ok, err := Read(q, row, tenant, p.Name)
	switch {
	case err != nil:
		return nil, err
	case ok && old.ExpiresAt > nowMs:
		return nil, store.ErrEphemeralExists
	case ok:
		if err := drop(old.ID); err != nil {
			return nil, fmt.Errorf("replace expired ephemeral queue: %w", err)
		}
	}
	r := Queue{TTLMs: p.TTL.Milliseconds(), MaxMessages: p.MaxMessages, CreatedAt: nowMs,
		ExpiresAt: nowMs + p.TTL.Milliseconds()}
	if err := q.Row(Insert, tenant, p.Name, r.TTLMs, r.MaxMessages, r.CreatedAt, r.ExpiresAt).Scan(&r.ID); err != nil {
		return nil, fmt.Errorf("create ephemeral queue: %w", err)
	}
	return r.Of(p.Name), nil
}

// KeepaliveIn moves a live queue's expiry in an engine's transaction.
func KeepaliveIn(q sqlq.Q, p *store.EphemeralKeepaliveParams) (*store.EphemeralQueue, error) {
	var r Queue
	err := q.Row(Keepalive, store.TenantOrDefault(p.Tenant), p.Name, p.Now.UnixMilli()).Scan(
		&r.TTLMs, &r.MaxMessages, &r.CreatedAt, &r.ExpiresAt)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, store.ErrEphemeralNotFound
	case err != nil:
		return nil, fmt.Errorf("keep ephemeral queue alive: %w", err)
	}
	return r.Of(p.Name), nil
}

// ListIn reads a page of live queues with their depths.
func ListIn(q sqlq.Q, p *store.EphemeralListParams) (*store.EphemeralListResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	out := &store.EphemeralListResult{Queues: []store.EphemeralQueue{}}
	err := q.Each(List, []any{tenant, nowMs, limit, p.Offset}, func(row sqlq.Row) error {
		var name string
		var r Queue
		var depth int
		if err := row.Scan(&name, &r.TTLMs, &r.MaxMessages, &r.CreatedAt, &r.ExpiresAt, &depth, &out.Total); err != nil {
			return err
		}
		eq := r.Of(name)
		eq.Depth = depth
		out.Queues = append(out.Queues, *eq)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list ephemeral queues: %w", err)
	}
	if len(out.Queues) == 0 && p.Offset > 0 {
		// A page past the end has no row to carry the total.
		if err := q.Row(Count, tenant, nowMs).Scan(&out.Total); err != nil {
			return nil, fmt.Errorf("count ephemeral queues: %w", err)
		}
	}
	return out, nil
}

// PopIn deletes and returns up to limit of the oldest messages of queue id
// with pop (Pop with the engine's lock), in seq order: RETURNING promises
// no order.
func PopIn(q sqlq.Q, pop string, id int64, limit int) ([]store.EphemeralMessage, error) {
	type popped struct {
		seq int64
		m   store.EphemeralMessage
	}
	var got []popped
	err := q.Each(pop, []any{id, max(limit, 1)}, func(row sqlq.Row) error {
		var p popped
		var createdAt int64
		if err := row.Scan(&p.seq, &p.m.ID, &p.m.Payload, &createdAt); err != nil {
			return err
		}
		p.m.CreatedAt = time.UnixMilli(createdAt).UTC()
		got = append(got, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pop ephemeral messages: %w", err)
	}
	slices.SortFunc(got, func(a, b popped) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]store.EphemeralMessage, len(got))
	for i, p := range got {
		out[i] = p.m
	}
	return out, nil
}

// Room is what a live queue may still take during one push.
type Room struct {
	ID   int64
	Left int
}

// NewRoom is the room of a live queue holding depth messages.
func NewRoom(id int64, maxMessages, depth int) *Room {
	return &Room{ID: id, Left: max(maxMessages-depth, 0)}
}

// Take counts one more message into rm and returns "", or returns why the
// message cannot go (rm nil: no live queue of that name).
func Take(rm *Room) string {
	switch {
	case rm == nil:
		return api.ReasonQueueNotFound
	case rm.Left == 0:
		return api.ReasonQueueFull
	}
	rm.Left--
	return ""
}
