package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Ephemeral queues. ephemeral_messages is UNLOGGED (see the migration): a
// push or a pop writes no WAL for its messages, and a transaction that
// wrote only unlogged rows commits without waiting for a WAL flush.
//
// A pop is one DELETE … RETURNING of the oldest rows, those another pop
// holds skipped (SKIP LOCKED): a row is deleted, and so returned, once at
// most, whatever the number of brokers and pollers. A push locks its
// queues' rows, so that pushes to one queue serialise (its maxMessages
// holds exactly, and seq grows in commit order within the queue); pops take
// no lock on the queue row, so they never wait for pushes.
const (
	sqlEphQueueLock = `SELECT id, ttl_ms, max_messages, created_at, expires_at FROM ephemeral_queues
		WHERE tenant = $1 AND name = $2 FOR UPDATE`
	sqlEphInsert = `INSERT INTO ephemeral_queues (tenant, name, ttl_ms, max_messages, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`
	sqlEphDeleteQueue = `DELETE FROM ephemeral_queues WHERE tenant = $1 AND name = $2 RETURNING id, expires_at`
	sqlEphDropQueue   = `DELETE FROM ephemeral_queues WHERE id = $1`
	sqlEphDropMsgs    = `DELETE FROM ephemeral_messages WHERE queue_id = ANY($1)`
	sqlEphKeepalive   = `UPDATE ephemeral_queues SET expires_at = $3 + ttl_ms
		WHERE tenant = $1 AND name = $2 AND expires_at > $3
		RETURNING ttl_ms, max_messages, created_at, expires_at`
	sqlEphLive = `SELECT id FROM ephemeral_queues WHERE tenant = $1 AND name = $2 AND expires_at > $3`
	sqlEphPop  = `DELETE FROM ephemeral_messages WHERE seq IN
			(SELECT seq FROM ephemeral_messages WHERE queue_id = $1 ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING seq, id, payload, created_at`
	// The live queues of a push, locked in id order (no lock cycle between
	// two pushes), with their depths.
	sqlEphPushQueues = `SELECT q.id, q.name, q.max_messages,
			(SELECT count(*) FROM ephemeral_messages m WHERE m.queue_id = q.id)
		FROM ephemeral_queues q WHERE q.tenant = $1 AND q.name = ANY($2) AND q.expires_at > $3
		ORDER BY q.id FOR UPDATE OF q`
	sqlEphMsgInsert = `INSERT INTO ephemeral_messages (queue_id, id, payload, created_at)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bigint[])`
	sqlEphList = `SELECT q.name, q.ttl_ms, q.max_messages, q.created_at, q.expires_at,
			(SELECT count(*) FROM ephemeral_messages m WHERE m.queue_id = q.id), count(*) OVER ()
		FROM ephemeral_queues q WHERE q.tenant = $1 AND q.expires_at > $2
		ORDER BY q.name LIMIT $3 OFFSET $4`
	sqlEphCount = `SELECT count(*) FROM ephemeral_queues WHERE tenant = $1 AND expires_at > $2`
	sqlEphSweep = `DELETE FROM ephemeral_queues WHERE id IN
			(SELECT id FROM ephemeral_queues WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2
			 FOR UPDATE SKIP LOCKED)
		RETURNING id`
)

func ephQueue(name string, ttlMs int64, maxMessages int, createdAt, expiresAt int64) *store.EphemeralQueue {
	return &store.EphemeralQueue{Name: name, TTL: time.Duration(ttlMs) * time.Millisecond, MaxMessages: maxMessages,
		CreatedAt: time.UnixMilli(createdAt).UTC(), ExpiresAt: time.UnixMilli(expiresAt).UTC()}
}

// EphemeralCreate creates a queue, replacing an expired one of that name.
// Two creates of a new name race on the unique index; the loser is retried
// (runTx) and finds the winner's queue.
func (s *Store) EphemeralCreate(ctx context.Context, p *store.EphemeralCreateParams) (*store.EphemeralQueue, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	ttlMs := p.TTL.Milliseconds()
	err := s.inTx(ctx, "ephemeral create", func(t *txn) error {
		var id, ttl, createdAt, expiresAt int64
		var maxMessages int
		err := t.tx.QueryRow(t.ctx, sqlEphQueueLock, tenant, p.Name).Scan(&id, &ttl, &maxMessages, &createdAt, &expiresAt)
		switch {
		case err == nil && expiresAt > nowMs:
			return store.ErrEphemeralExists
		case err == nil:
			b := &pgx.Batch{}
			b.Queue(sqlEphDropMsgs, []int64{id})
			b.Queue(sqlEphDropQueue, id)
			if err := t.execBatch(b); err != nil {
				return fmt.Errorf("replace expired ephemeral queue: %w", err)
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read ephemeral queue: %w", err)
		}
		if err := t.tx.QueryRow(t.ctx, sqlEphInsert, tenant, p.Name, ttlMs, p.MaxMessages, nowMs, nowMs+ttlMs).
			Scan(&id); err != nil {
			return fmt.Errorf("create ephemeral queue: %w", err)
		}
		return nil
	})
	if errors.Is(err, store.ErrEphemeralExists) {
		return nil, store.ErrEphemeralExists
	}
	if err != nil {
		return nil, err
	}
	return ephQueue(p.Name, ttlMs, p.MaxMessages, nowMs, nowMs+ttlMs), nil
}

// EphemeralDelete deletes a queue and its messages.
func (s *Store) EphemeralDelete(ctx context.Context, p *store.EphemeralDeleteParams) (bool, error) {
	live := false
	err := s.inTx(ctx, "ephemeral delete", func(t *txn) error {
		live = false
		var id, expiresAt int64
		err := t.tx.QueryRow(t.ctx, sqlEphDeleteQueue, store.TenantOrDefault(p.Tenant), p.Name).Scan(&id, &expiresAt)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("delete ephemeral queue: %w", err)
		}
		live = expiresAt > p.Now.UnixMilli()
		if _, err := t.tx.Exec(t.ctx, sqlEphDropMsgs, []int64{id}); err != nil {
			return fmt.Errorf("delete ephemeral messages: %w", err)
		}
		return nil
	})
	return live, err
}

// EphemeralKeepalive moves a live queue's expiry.
func (s *Store) EphemeralKeepalive(ctx context.Context, p *store.EphemeralKeepaliveParams) (*store.EphemeralQueue, error) {
	var out *store.EphemeralQueue
	err := s.inTx(ctx, "ephemeral keepalive", func(t *txn) error {
		var ttl, createdAt, expiresAt int64
		var maxMessages int
		err := t.tx.QueryRow(t.ctx, sqlEphKeepalive, store.TenantOrDefault(p.Tenant), p.Name, p.Now.UnixMilli()).
			Scan(&ttl, &maxMessages, &createdAt, &expiresAt)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return store.ErrEphemeralNotFound
		case err != nil:
			return fmt.Errorf("keep ephemeral queue alive: %w", err)
		}
		out = ephQueue(p.Name, ttl, maxMessages, createdAt, expiresAt)
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrEphemeralNotFound
	}
	return out, err
}

// EphemeralList reads a page of live queues with their depths.
func (s *Store) EphemeralList(ctx context.Context, p *store.EphemeralListParams) (*store.EphemeralListResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	out := &store.EphemeralListResult{Queues: []store.EphemeralQueue{}}
	rows, _ := s.pool.Query(ctx, sqlEphList, tenant, nowMs, limit, p.Offset)
	var name string
	var ttl, createdAt, expiresAt int64
	var maxMessages, depth int
	if _, err := pgx.ForEachRow(rows, []any{&name, &ttl, &maxMessages, &createdAt, &expiresAt, &depth, &out.Total},
		func() error {
			q := ephQueue(name, ttl, maxMessages, createdAt, expiresAt)
			q.Depth = depth
			out.Queues = append(out.Queues, *q)
			return nil
		}); err != nil {
		return nil, wrapErr("postgres: list ephemeral queues", err)
	}
	if len(out.Queues) == 0 && p.Offset > 0 {
		if err := s.pool.QueryRow(ctx, sqlEphCount, tenant, nowMs).Scan(&out.Total); err != nil {
			return nil, wrapErr("postgres: count ephemeral queues", err)
		}
	}
	return out, nil
}

// EphemeralPop deletes and returns the oldest messages of a live queue, in
// two statements of their own (no transaction around them: the DELETE is
// atomic by itself).
func (s *Store) EphemeralPop(ctx context.Context, p *store.EphemeralPopParams) ([]store.EphemeralMessage, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	var id int64
	err := s.pool.QueryRow(ctx, sqlEphLive, store.TenantOrDefault(p.Tenant), p.Name, p.Now.UnixMilli()).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, store.ErrEphemeralNotFound
	case err != nil:
		return nil, wrapErr("postgres: read ephemeral queue", err)
	}
	type popped struct {
		seq int64
		m   store.EphemeralMessage
	}
	var got []popped
	var one popped
	var createdAt int64
	rows, _ := s.pool.Query(ctx, sqlEphPop, id, max(p.Limit, 1))
	if _, err := pgx.ForEachRow(rows, []any{&one.seq, &one.m.ID, &one.m.Payload, &createdAt}, func() error {
		one.m.CreatedAt = time.UnixMilli(createdAt).UTC()
		got = append(got, one)
		one = popped{}
		return nil
	}); err != nil {
		return nil, wrapErr("postgres: pop ephemeral messages", err)
	}
	slices.SortFunc(got, func(a, b popped) int { return cmp.Compare(a.seq, b.seq) }) // RETURNING has no order
	out := make([]store.EphemeralMessage, len(got))
	for i, g := range got {
		out[i] = g.m
	}
	return out, nil
}

// EphemeralPush stores messages in one transaction, which commits without
// waiting for its WAL flush: the messages are unlogged anyway. Other brokers
// hear of the push at commit (their long polls wake).
func (s *Store) EphemeralPush(ctx context.Context, p *store.EphemeralPushParams) ([]store.EphemeralPushResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	var names []string
	for _, it := range p.Items {
		if !slices.Contains(names, it.Queue) {
			names = append(names, it.Queue)
		}
	}
	var out []store.EphemeralPushResult
	err := s.inRelaxedTx(ctx, "ephemeral push", func(t *txn) error {
		out = make([]store.EphemeralPushResult, len(p.Items))
		type room struct {
			id   int64
			left int
		}
		rooms := make(map[string]*room, len(names))
		rows, _ := t.tx.Query(t.ctx, sqlEphPushQueues, tenant, names, nowMs)
		var id int64
		var name string
		var maxMessages, depth int
		if _, err := pgx.ForEachRow(rows, []any{&id, &name, &maxMessages, &depth}, func() error {
			rooms[name] = &room{id: id, left: max(maxMessages-depth, 0)}
			return nil
		}); err != nil {
			return fmt.Errorf("lock ephemeral queues: %w", err)
		}
		var qids []int64
		var ids []string
		var payloads [][]byte
		var at []int64
		var woken []store.Wake
		for i, it := range p.Items {
			rm := rooms[it.Queue]
			switch {
			case rm == nil:
				out[i].Error = api.ReasonQueueNotFound
				continue
			case rm.left == 0:
				out[i].Error = api.ReasonQueueFull
				continue
			}
			rm.left--
			qids, ids, payloads, at = append(qids, rm.id), append(ids, it.ID), append(payloads, it.Payload), append(at, nowMs)
			if k := (store.Wake{Key: store.EphemeralKey(tenant, it.Queue)}); !slices.Contains(woken, k) {
				woken = append(woken, k) // Count 0: every waiter of the key looks
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := t.tx.Exec(t.ctx, sqlEphMsgInsert, qids, ids, payloads, at); err != nil {
			return fmt.Errorf("insert ephemeral messages: %w", err)
		}
		t.wakeAfterCommit(woken...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EphemeralSweep deletes a bounded number of expired queues with their
// messages.
func (s *Store) EphemeralSweep(ctx context.Context, p *store.EphemeralSweepParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	n := 0
	err := s.inTx(ctx, "ephemeral sweep", func(t *txn) error {
		rows, _ := t.tx.Query(t.ctx, sqlEphSweep, p.Now.UnixMilli(), limit)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("sweep ephemeral queues: %w", err)
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		if _, err := t.tx.Exec(t.ctx, sqlEphDropMsgs, ids); err != nil {
			return fmt.Errorf("sweep ephemeral messages: %w", err)
		}
		return nil
	})
	return n, err
}
