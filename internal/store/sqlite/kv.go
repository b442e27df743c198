package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/kvop"
)

// Key/value state. A batch is one writer job: the writer is the only
// writer, so reading the rows, planning (package kvop) and writing the
// changes cannot interleave with another batch, and no row lock is needed.
// Reads (get, list) go to the read-only connections.
const (
	sqlKVRow = `SELECT value, version, expires_at, created_at, updated_at FROM kv
		WHERE tenant = ? AND namespace = ? AND key = ?`
	sqlKVInsert = `INSERT INTO kv (tenant, namespace, key, value, version, expires_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	sqlKVUpdate = `UPDATE kv SET value = ?4, version = ?5, expires_at = ?6, created_at = ?7, updated_at = ?8
		WHERE tenant = ?1 AND namespace = ?2 AND key = ?3`
	sqlKVDelete = `DELETE FROM kv WHERE tenant = ? AND namespace = ? AND key = ?`
	// A page of live keys after ?3 within [?4, ?5) (?5 = '': no bound),
	// one more than asked for, to know whether more follow.
	sqlKVList = `SELECT key, value, version, expires_at, created_at, updated_at FROM kv
		WHERE tenant = ?1 AND namespace = ?2 AND key > ?3 AND key >= ?4 AND (?5 = '' OR key < ?5)
		  AND (expires_at = 0 OR expires_at > ?6)
		ORDER BY key LIMIT ?7`
	sqlKVSweep = `DELETE FROM kv WHERE (tenant, namespace, key) IN
		(SELECT tenant, namespace, key FROM kv WHERE expires_at > 0 AND expires_at <= ?1 LIMIT ?2)`
)

// kvStatements are prepared on the writer connection with the others.
var kvStatements = []string{sqlKVRow, sqlKVInsert, sqlKVUpdate, sqlKVDelete}

// KVApply runs a batch in one writer job.
func (s *Store) KVApply(ctx context.Context, p *store.KVApplyParams) ([]store.KVResult, error) {
	var out []store.KVResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		var err error
		out, err = s.txn(tx).kvApply(store.TenantOrDefault(p.Tenant), p.Ops, p.Now.UnixMilli())
		return err
	})
	return out, err
}

// kvApply reads the rows ops name, plans the batch and writes its changes;
// a conflict returns the *store.KVConflictError and writes nothing.
func (t *txn) kvApply(tenant string, ops []store.KVOp, nowMs int64) ([]store.KVResult, error) {
	rows := make(map[kvop.Key]kvop.Row)
	for _, k := range kvop.Keys(ops) {
		var r kvop.Row
		err := t.queryRow(sqlKVRow, tenant, k.Namespace, k.Key).Scan(&r.Value, &r.Version, &r.ExpiresAt,
			&r.CreatedAt, &r.UpdatedAt)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return nil, fmt.Errorf("read key: %w", err)
		}
		rows[k] = r
	}
	results, changes, err := kvop.Plan(ops, rows, nowMs)
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		var err error
		switch {
		case !c.Present:
			_, err = t.exec(sqlKVDelete, tenant, c.Key.Namespace, c.Key.Key)
		case c.Stored:
			_, err = t.exec(sqlKVUpdate, tenant, c.Key.Namespace, c.Key.Key, string(c.Row.Value), c.Row.Version,
				c.Row.ExpiresAt, c.Row.CreatedAt, c.Row.UpdatedAt)
		default:
			_, err = t.exec(sqlKVInsert, tenant, c.Key.Namespace, c.Key.Key, string(c.Row.Value), c.Row.Version,
				c.Row.ExpiresAt, c.Row.CreatedAt, c.Row.UpdatedAt)
		}
		if err != nil {
			return nil, fmt.Errorf("write key: %w", err)
		}
	}
	return results, nil
}

// KVGet reads a key through the read-only connections.
func (s *Store) KVGet(ctx context.Context, p *store.KVGetParams) (*store.KVEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	var r kvop.Row
	err := s.reader.QueryRowContext(ctx, sqlKVRow, store.TenantOrDefault(p.Tenant), p.Namespace, p.Key).Scan(
		&r.Value, &r.Version, &r.ExpiresAt, &r.CreatedAt, &r.UpdatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, store.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("%w: read key: %w", store.ErrUnavailable, err)
	}
	if !r.Live(p.Now.UnixMilli()) {
		return nil, store.ErrNotFound
	}
	return r.Entry(kvop.Key{Namespace: p.Namespace, Key: p.Key}), nil
}

// KVList reads a page of keys through the read-only connections.
func (s *Store) KVList(ctx context.Context, p *store.KVListParams) (*store.KVListResult, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.reader.QueryContext(ctx, sqlKVList, store.TenantOrDefault(p.Tenant), p.Namespace, p.After,
		p.Prefix, kvop.PrefixEnd(p.Prefix), p.Now.UnixMilli(), limit+1)
	if err != nil {
		return nil, fmt.Errorf("%w: list keys: %w", store.ErrUnavailable, err)
	}
	defer rows.Close()
	out := &store.KVListResult{Entries: []store.KVEntry{}}
	for rows.Next() {
		var key string
		var r kvop.Row
		if err := rows.Scan(&key, &r.Value, &r.Version, &r.ExpiresAt, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		if len(out.Entries) == limit {
			out.More = true
			break
		}
		out.Entries = append(out.Entries, *r.Entry(kvop.Key{Namespace: p.Namespace, Key: key}))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: list keys: %w", store.ErrUnavailable, err)
	}
	return out, nil
}

// KVSweep deletes a bounded number of expired keys in one writer job.
func (s *Store) KVSweep(ctx context.Context, p *store.KVSweepParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	var n int64
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlKVSweep, p.Now.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("sweep keys: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// open reports store.ErrClosed once Close has begun, for reads that do not
// go through the writer.
func (s *Store) open() error {
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
		return nil
	}
}
