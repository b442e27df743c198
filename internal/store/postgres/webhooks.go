package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/webhooksql"
)

// Webhook documents and nonces: the shared statements of webhooksql.

// WebhookPut stores a document.
func (s *Store) WebhookPut(ctx context.Context, p *store.WebhookPutParams) error {
	q := webhooksql.Put
	if p.IfAbsent {
		q = webhooksql.PutNew
	}
	return s.inTx(ctx, "webhook put", func(t *txn) error {
		_, err := t.tx.Exec(t.ctx, q, store.TenantOrDefault(p.Tenant), p.Kind, p.ID, p.Queue, p.Doc,
			p.Now.UnixMilli())
		return err
	})
}

// WebhookGet reads a document.
func (s *Store) WebhookGet(ctx context.Context, p *store.WebhookKey) (*store.WebhookDoc, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	d := &store.WebhookDoc{WebhookKey: *p}
	var created, updated int64
	err := s.pool.QueryRow(ctx, webhooksql.Get, store.TenantOrDefault(p.Tenant), p.Kind, p.ID).Scan(
		&d.Queue, &d.Doc, &created, &updated)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, store.ErrNotFound
	case err != nil:
		return nil, wrapErr("postgres: read webhook "+p.Kind, err)
	}
	d.CreatedAt, d.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return d, nil
}

// WebhookList reads the documents of a kind.
func (s *Store) WebhookList(ctx context.Context, p *store.WebhookListParams) ([]store.WebhookDoc, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	var id, queue string
	var doc []byte
	var created, updated int64
	tenant := p.Tenant
	dest := []any{&id, &queue, &doc, &created, &updated}
	var rows pgx.Rows
	if p.AllTenants {
		rows, _ = s.pool.Query(ctx, webhooksql.ListAll, p.Kind)
		dest = append([]any{&tenant}, dest...)
	} else {
		rows, _ = s.pool.Query(ctx, webhooksql.List, store.TenantOrDefault(p.Tenant), p.Kind, p.Queue)
	}
	out := []store.WebhookDoc{}
	if _, err := pgx.ForEachRow(rows, dest, func() error {
		out = append(out, store.WebhookDoc{WebhookKey: store.WebhookKey{ID: id, Kind: p.Kind, Tenant: tenant},
			Queue: queue, Doc: append([]byte(nil), doc...), CreatedAt: time.UnixMilli(created).UTC(),
			UpdatedAt: time.UnixMilli(updated).UTC()})
		return nil
	}); err != nil {
		return nil, wrapErr("postgres: list webhook "+p.Kind, err)
	}
	return out, nil
}

// WebhookDelete deletes a document.
func (s *Store) WebhookDelete(ctx context.Context, p *store.WebhookKey) error {
	return s.inTx(ctx, "webhook delete", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, webhooksql.Delete, store.TenantOrDefault(p.Tenant), p.Kind, p.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		return nil
	})
}

// WebhookNonceClaim claims a nonce.
func (s *Store) WebhookNonceClaim(ctx context.Context, p *store.WebhookNonceParams) (bool, error) {
	var fresh bool
	err := s.inTx(ctx, "nonce claim", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, webhooksql.NonceClaim, store.TenantOrDefault(p.Tenant), p.KeyID, p.Nonce,
			p.Until.UnixMilli(), p.Now.UnixMilli())
		fresh = tag.RowsAffected() == 1
		return err
	})
	return fresh, err
}

// WebhookNonceSweep deletes expired nonces.
func (s *Store) WebhookNonceSweep(ctx context.Context, p *store.WebhookNonceSweepParams) (int, error) {
	var n int64
	err := s.inRelaxedTx(ctx, "nonce sweep", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, webhooksql.NonceSweep, p.Now.UnixMilli())
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// WebhookSweep deletes a kind's documents written before a time.
func (s *Store) WebhookSweep(ctx context.Context, p *store.WebhookSweepParams) (int, error) {
	var n int64
	err := s.inRelaxedTx(ctx, "webhook sweep", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, webhooksql.Sweep, p.Kind, p.Before.UnixMilli())
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}
