package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/ephsql"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// Ephemeral queues. Every change is a writer job, so a pop's read and delete
// cannot interleave with another pop: no message is delivered twice. Pushes
// commit relaxed (an ephemeral message may be lost to a power failure, by
// definition); pops that delete commit durably, so that a message delivered
// once cannot come back after a power failure and be delivered again.
var (
	sqlEphQueue = sqlq.SQLite(ephsql.Row(""))
	sqlEphPop   = sqlq.SQLite(ephsql.Pop(""))
)

const (
	sqlEphDeleteQueue    = `DELETE FROM ephemeral_queues WHERE id = ?`
	sqlEphDeleteMessages = `DELETE FROM ephemeral_messages WHERE queue_id = ?`
	sqlEphDepth          = `SELECT count(*) FROM ephemeral_messages WHERE queue_id = ?`
	sqlEphMsgInsert      = `INSERT INTO ephemeral_messages (queue_id, id, payload, created_at) VALUES (?, ?, ?, ?)`
	sqlEphHasMessage     = `SELECT q.id, q.expires_at, EXISTS (SELECT 1 FROM ephemeral_messages m WHERE m.queue_id = q.id)
		FROM ephemeral_queues q WHERE q.tenant = ? AND q.name = ?`
	sqlEphExpired = `SELECT id FROM ephemeral_queues WHERE expires_at <= ? ORDER BY expires_at LIMIT ?`
)

// ephemeralStatements are prepared on the writer connection with the others.
var ephemeralStatements = []string{sqlEphQueue, sqlEphDepth, sqlEphMsgInsert, sqlEphPop}

// featureStatements are the prepared statements of key/value state, timers
// and ephemeral queues (prepare in queries.go adds them).
var featureStatements = append(append(append([]string(nil), kvStatements...), timerStatements...), ephemeralStatements...)

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
	var out *store.EphemeralQueue
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		var err error
		out, err = ephsql.CreateIn(t.q(), ephsql.Row(""), t.ephDrop, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EphemeralDelete deletes a queue and its messages.
func (s *Store) EphemeralDelete(ctx context.Context, p *store.EphemeralDeleteParams) (bool, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	live := false
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		r, ok, err := ephsql.Read(t.q(), ephsql.Row(""), tenant, p.Name)
		if err != nil || !ok {
			return err
		}
		live = r.ExpiresAt > p.Now.UnixMilli()
		return t.ephDrop(r.ID)
	})
	return live, err
}

// EphemeralKeepalive moves a live queue's expiry.
func (s *Store) EphemeralKeepalive(ctx context.Context, p *store.EphemeralKeepaliveParams) (*store.EphemeralQueue, error) {
	var out *store.EphemeralQueue
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		var err error
		out, err = ephsql.KeepaliveIn(txQ(ctx, tx), p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EphemeralList reads a page of live queues through the read-only
// connections.
func (s *Store) EphemeralList(ctx context.Context, p *store.EphemeralListParams) (*store.EphemeralListResult, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	out, err := ephsql.ListIn(s.readQ(ctx), p)
	return out, unavailable(err)
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
		r, ok, err := ephsql.Read(t.q(), ephsql.Row(""), tenant, p.Name)
		if err != nil {
			return err
		}
		if !ok || r.ExpiresAt <= nowMs {
			return store.ErrEphemeralNotFound
		}
		out, err = ephsql.PopIn(t.q(), ephsql.Pop(""), r.ID, p.Limit)
		return err
	})
	if err != nil {
		return nil, err
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
		rooms := make(map[string]*ephsql.Room)
		for i, it := range p.Items {
			rm, seen := rooms[it.Queue]
			if !seen {
				r, ok, err := ephsql.Read(t.q(), ephsql.Row(""), tenant, it.Queue)
				if err != nil {
					return err
				}
				if ok && r.ExpiresAt > nowMs {
					var depth int
					if err := t.queryRow(sqlEphDepth, r.ID).Scan(&depth); err != nil {
						return fmt.Errorf("count ephemeral messages: %w", err)
					}
					rm = ephsql.NewRoom(r.ID, r.MaxMessages, depth)
				}
				rooms[it.Queue] = rm
			}
			if out[i].Error = ephsql.Take(rm); out[i].Error != "" {
				continue
			}
			if _, err := t.exec(sqlEphMsgInsert, rm.ID, it.ID, string(it.Payload), nowMs); err != nil {
				return fmt.Errorf("insert ephemeral message: %w", err)
			}
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
	limit := ephsql.SweepLimit(p)
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
