package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/webhooksql"
)

// Webhook documents and nonces: the shared statements of webhooksql;
// writes are writer jobs, reads go to the read-only connections.
var (
	sqlWebhookPut        = webhooksql.SQLite(webhooksql.Put)
	sqlWebhookPutNew     = webhooksql.SQLite(webhooksql.PutNew)
	sqlWebhookGet        = webhooksql.SQLite(webhooksql.Get)
	sqlWebhookListAll    = webhooksql.SQLite(webhooksql.ListAll)
	sqlWebhookSweep      = webhooksql.SQLite(webhooksql.Sweep)
	sqlWebhookList       = webhooksql.SQLite(webhooksql.List)
	sqlWebhookDelete     = webhooksql.SQLite(webhooksql.Delete)
	sqlWebhookNonceClaim = webhooksql.SQLite(webhooksql.NonceClaim)
	sqlWebhookNonceSweep = webhooksql.SQLite(webhooksql.NonceSweep)
)

// WebhookPut stores a document.
func (s *Store) WebhookPut(ctx context.Context, p *store.WebhookPutParams) error {
	q := sqlWebhookPut
	if p.IfAbsent {
		q = sqlWebhookPutNew
	}
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, q, store.TenantOrDefault(p.Tenant), p.Kind, p.ID, p.Queue,
			p.Doc, p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("store webhook %s: %w", p.Kind, err)
		}
		return nil
	})
}

// WebhookGet reads a document.
func (s *Store) WebhookGet(ctx context.Context, p *store.WebhookKey) (*store.WebhookDoc, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	d := &store.WebhookDoc{WebhookKey: *p}
	var created, updated int64
	err := s.reader.QueryRowContext(ctx, sqlWebhookGet, store.TenantOrDefault(p.Tenant), p.Kind, p.ID).Scan(
		&d.Queue, &d.Doc, &created, &updated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, store.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("%w: read webhook %s: %w", store.ErrUnavailable, p.Kind, err)
	}
	d.CreatedAt, d.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return d, nil
}

// WebhookList reads the documents of a kind.
func (s *Store) WebhookList(ctx context.Context, p *store.WebhookListParams) ([]store.WebhookDoc, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if p.AllTenants {
		rows, err = s.reader.QueryContext(ctx, sqlWebhookListAll, p.Kind)
	} else {
		rows, err = s.reader.QueryContext(ctx, sqlWebhookList, store.TenantOrDefault(p.Tenant), p.Kind, p.Queue)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: list webhook %s: %w", store.ErrUnavailable, p.Kind, err)
	}
	defer rows.Close()
	out := []store.WebhookDoc{}
	for rows.Next() {
		d := store.WebhookDoc{WebhookKey: store.WebhookKey{Kind: p.Kind, Tenant: p.Tenant}}
		var created, updated int64
		dest := []any{&d.ID, &d.Queue, &d.Doc, &created, &updated}
		if p.AllTenants {
			dest = append([]any{&d.Tenant}, dest...)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("%w: list webhook %s: %w", store.ErrUnavailable, p.Kind, err)
		}
		d.CreatedAt, d.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: list webhook %s: %w", store.ErrUnavailable, p.Kind, err)
	}
	return out, nil
}

// WebhookDelete deletes a document.
func (s *Store) WebhookDelete(ctx context.Context, p *store.WebhookKey) error {
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlWebhookDelete, store.TenantOrDefault(p.Tenant), p.Kind, p.ID)
		if err != nil {
			return fmt.Errorf("delete webhook %s: %w", p.Kind, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
}

// WebhookNonceClaim claims a nonce.
func (s *Store) WebhookNonceClaim(ctx context.Context, p *store.WebhookNonceParams) (bool, error) {
	var fresh bool
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlWebhookNonceClaim, store.TenantOrDefault(p.Tenant), p.KeyID, p.Nonce,
			p.Until.UnixMilli(), p.Now.UnixMilli())
		if err != nil {
			return fmt.Errorf("claim nonce: %w", err)
		}
		n, _ := res.RowsAffected()
		fresh = n == 1
		return nil
	})
	return fresh, err
}

// WebhookNonceSweep deletes expired nonces.
func (s *Store) WebhookNonceSweep(ctx context.Context, p *store.WebhookNonceSweepParams) (int, error) {
	var n int64
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlWebhookNonceSweep, p.Now.UnixMilli())
		if err != nil {
			return fmt.Errorf("sweep nonces: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// WebhookSweep deletes a kind's documents written before a time.
func (s *Store) WebhookSweep(ctx context.Context, p *store.WebhookSweepParams) (int, error) {
	var n int64
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlWebhookSweep, p.Kind, p.Before.UnixMilli())
		if err != nil {
			return fmt.Errorf("sweep webhook %s: %w", p.Kind, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
