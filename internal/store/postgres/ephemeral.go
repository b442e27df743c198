package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/ephsql"
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
	sqlEphDeleteQueue = `DELETE FROM ephemeral_queues WHERE tenant = $1 AND name = $2 RETURNING id, expires_at`
	sqlEphDropQueue   = `DELETE FROM ephemeral_queues WHERE id = $1`
	sqlEphDropMsgs    = `DELETE FROM ephemeral_messages WHERE queue_id = ANY($1)`
	sqlEphLive        = `SELECT id FROM ephemeral_queues WHERE tenant = $1 AND name = $2 AND expires_at > $3`
	// The live queues of a push, locked in id order (no lock cycle between
	// two pushes), with their depths.
	sqlEphPushQueues = `SELECT q.id, q.name, q.max_messages,
			(SELECT count(*) FROM ephemeral_messages m WHERE m.queue_id = q.id)
		FROM ephemeral_queues q WHERE q.tenant = $1 AND q.name = ANY($2) AND q.expires_at > $3
		ORDER BY q.id FOR UPDATE OF q`
	sqlEphMsgInsert = `INSERT INTO ephemeral_messages (queue_id, id, payload, created_at)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bigint[])`
	sqlEphSweep = `DELETE FROM ephemeral_queues WHERE id IN
			(SELECT id FROM ephemeral_queues WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2
			 FOR UPDATE SKIP LOCKED)
		RETURNING id`
)

// A create locks the queue's row it replaces; pops skip the messages
// another pop holds.
var (
	sqlEphQueueLock = ephsql.Row(" FOR UPDATE")
	sqlEphPop       = ephsql.Pop(" FOR UPDATE SKIP LOCKED")
)

// ephDrop deletes a queue's row and its messages.
func (t *txn) ephDrop(id int64) error {
	b := &pgx.Batch{}
	b.Queue(sqlEphDropMsgs, []int64{id})
	b.Queue(sqlEphDropQueue, id)
	return t.execBatch(b)
}

// EphemeralCreate creates a queue, replacing an expired one of that name.
// Two creates of a new name race on the unique index; the loser is retried
// (runTx) and finds the winner's queue.
func (s *Store) EphemeralCreate(ctx context.Context, p *store.EphemeralCreateParams) (*store.EphemeralQueue, error) {
	var out *store.EphemeralQueue
	err := s.inTx(ctx, "ephemeral create", func(t *txn) error {
		var err error
		out, err = ephsql.CreateIn(t.q(), sqlEphQueueLock, t.ephDrop, p)
		return err
	})
	if errors.Is(err, store.ErrEphemeralExists) {
		return nil, store.ErrEphemeralExists
	}
	if err != nil {
		return nil, err
	}
	return out, nil
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
		var err error
		out, err = ephsql.KeepaliveIn(t.q(), p)
		return err
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
	out, err := ephsql.ListIn(s.poolQ(ctx), p)
	return out, readErr("postgres", err)
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
	out, err := ephsql.PopIn(s.poolQ(ctx), sqlEphPop, id, p.Limit)
	return out, readErr("postgres", err)
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
		rooms := make(map[string]*ephsql.Room, len(names))
		rows, _ := t.tx.Query(t.ctx, sqlEphPushQueues, tenant, names, nowMs)
		var id int64
		var name string
		var maxMessages, depth int
		if _, err := pgx.ForEachRow(rows, []any{&id, &name, &maxMessages, &depth}, func() error {
			rooms[name] = ephsql.NewRoom(id, maxMessages, depth)
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
			if out[i].Error = ephsql.Take(rm); out[i].Error != "" {
				continue
			}
			qids, ids, payloads, at = append(qids, rm.ID), append(ids, it.ID), append(payloads, it.Payload), append(at, nowMs)
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
	limit := ephsql.SweepLimit(p)
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
