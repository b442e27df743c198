package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/kvop"
)

// Key/value state. A batch is one transaction of two round trips: the rows
// of its keys are read and locked (FOR UPDATE, in key order, so that two
// batches never wait for each other in a cycle), package kvop plans the
// batch, and the changes go out in one pipeline. A key that had no row is
// inserted without ON CONFLICT: when a concurrent batch created it first,
// the insert fails with a unique violation and the whole transaction is
// retried (runTx), now seeing and locking the row. That keeps
// compare-and-set exact for keys that do not exist yet.
const (
	sqlKVLock = `SELECT namespace, key, value, version, expires_at, created_at, updated_at FROM kv
		WHERE tenant = $1 AND (namespace, key) IN (SELECT * FROM unnest($2::text[], $3::text[]))
		ORDER BY namespace, key FOR UPDATE`
	sqlKVInsert = `INSERT INTO kv (tenant, namespace, key, value, version, expires_at, created_at, updated_at)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::bigint[], $7::bigint[],
			$8::bigint[])`
	sqlKVUpdate = `UPDATE kv SET value = u.value, version = u.version, expires_at = u.expires_at,
			created_at = u.created_at, updated_at = u.updated_at
		FROM unnest($2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
			AS u (namespace, key, value, version, expires_at, created_at, updated_at)
		WHERE kv.tenant = $1 AND kv.namespace = u.namespace AND kv.key = u.key`
	sqlKVDelete = `DELETE FROM kv WHERE tenant = $1
		AND (namespace, key) IN (SELECT * FROM unnest($2::text[], $3::text[]))`
	sqlKVGet = `SELECT value, version, expires_at, created_at, updated_at FROM kv
		WHERE tenant = $1 AND namespace = $2 AND key = $3`
	// A page of live keys after $3 within [$4, $5) ($5 = '': no bound), one
	// more than asked for, to know whether more follow.
	sqlKVList = `SELECT key, value, version, expires_at, created_at, updated_at FROM kv
		WHERE tenant = $1 AND namespace = $2 AND key > $3 AND key >= $4 AND ($5 = '' OR key < $5)
		  AND (expires_at = 0 OR expires_at > $6)
		ORDER BY key LIMIT $7`
	// Expired keys a batch holds are skipped (SKIP LOCKED) and the condition
	// is checked again on delete, since a batch may have set them meanwhile.
	sqlKVSweep = `DELETE FROM kv WHERE (tenant, namespace, key) IN
			(SELECT tenant, namespace, key FROM kv WHERE expires_at > 0 AND expires_at <= $1
			 LIMIT $2 FOR UPDATE SKIP LOCKED)
		AND expires_at > 0 AND expires_at <= $1`
)

// KVApply runs a batch in one transaction.
func (s *Store) KVApply(ctx context.Context, p *store.KVApplyParams) ([]store.KVResult, error) {
	var out []store.KVResult
	err := s.inTx(ctx, "kv", func(t *txn) error {
		var err error
		out, err = t.kvApply(store.TenantOrDefault(p.Tenant), p.Ops, p.Now.UnixMilli())
		return err
	})
	var ce *store.KVConflictError
	if errors.As(err, &ce) {
		return nil, ce
	}
	return out, err
}

// kvApply locks and reads the rows ops name, plans the batch and writes its
// changes; a conflict returns the *store.KVConflictError and writes nothing.
func (t *txn) kvApply(tenant string, ops []store.KVOp, nowMs int64) ([]store.KVResult, error) {
	keys := kvop.Keys(ops)
	nss, names := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		nss[i], names[i] = k.Namespace, k.Key
	}
	rows := make(map[kvop.Key]kvop.Row, len(keys))
	var k kvop.Key
	var r kvop.Row
	q, _ := t.tx.Query(t.ctx, sqlKVLock, tenant, nss, names)
	if _, err := pgx.ForEachRow(q, []any{&k.Namespace, &k.Key, &r.Value, &r.Version, &r.ExpiresAt, &r.CreatedAt,
		&r.UpdatedAt}, func() error {
		rows[k] = r
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lock keys: %w", err)
	}
	results, changes, err := kvop.Plan(ops, rows, nowMs)
	if err != nil {
		return nil, err
	}
	var ins, upd kvColumns
	var del kvColumns
	for _, c := range changes {
		switch {
		case !c.Present:
			del.add(c)
		case c.Stored:
			upd.add(c)
		default:
			ins.add(c)
		}
	}
	b := &pgx.Batch{}
	if len(del.ns) > 0 {
		b.Queue(sqlKVDelete, tenant, del.ns, del.key)
	}
	if len(upd.ns) > 0 {
		b.Queue(sqlKVUpdate, tenant, upd.ns, upd.key, upd.value, upd.version, upd.expiresAt, upd.createdAt, upd.updatedAt)
	}
	if len(ins.ns) > 0 {
		b.Queue(sqlKVInsert, tenant, ins.ns, ins.key, ins.value, ins.version, ins.expiresAt, ins.createdAt, ins.updatedAt)
	}
	if err := t.execBatch(b); err != nil {
		return nil, fmt.Errorf("write keys: %w", err)
	}
	return results, nil
}

// kvColumns are the columns of a set of changed keys, as arrays.
type kvColumns struct {
	ns, key                                  []string
	value                                    [][]byte
	version, expiresAt, createdAt, updatedAt []int64
}

func (c *kvColumns) add(ch kvop.Change) {
	c.ns = append(c.ns, ch.Key.Namespace)
	c.key = append(c.key, ch.Key.Key)
	c.value = append(c.value, ch.Row.Value)
	c.version = append(c.version, ch.Row.Version)
	c.expiresAt = append(c.expiresAt, ch.Row.ExpiresAt)
	c.createdAt = append(c.createdAt, ch.Row.CreatedAt)
	c.updatedAt = append(c.updatedAt, ch.Row.UpdatedAt)
}

// KVGet reads one key.
func (s *Store) KVGet(ctx context.Context, p *store.KVGetParams) (*store.KVEntry, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	var r kvop.Row
	err := s.pool.QueryRow(ctx, sqlKVGet, store.TenantOrDefault(p.Tenant), p.Namespace, p.Key).Scan(
		&r.Value, &r.Version, &r.ExpiresAt, &r.CreatedAt, &r.UpdatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, store.ErrNotFound
	case err != nil:
		return nil, wrapErr("postgres: read key", err)
	}
	if !r.Live(p.Now.UnixMilli()) {
		return nil, store.ErrNotFound
	}
	return r.Entry(kvop.Key{Namespace: p.Namespace, Key: p.Key}), nil
}

// KVList reads a page of a namespace's keys.
func (s *Store) KVList(ctx context.Context, p *store.KVListParams) (*store.KVListResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, _ := s.pool.Query(ctx, sqlKVList, store.TenantOrDefault(p.Tenant), p.Namespace, p.After, p.Prefix,
		kvop.PrefixEnd(p.Prefix), p.Now.UnixMilli(), limit+1)
	out := &store.KVListResult{Entries: []store.KVEntry{}}
	var key string
	var r kvop.Row
	if _, err := pgx.ForEachRow(rows, []any{&key, &r.Value, &r.Version, &r.ExpiresAt, &r.CreatedAt, &r.UpdatedAt},
		func() error {
			if len(out.Entries) == limit {
				out.More = true
				return nil
			}
			out.Entries = append(out.Entries, *r.Entry(kvop.Key{Namespace: p.Namespace, Key: key}))
			return nil
		}); err != nil {
		return nil, wrapErr("postgres: list keys", err)
	}
	return out, nil
}

// KVSweep deletes a bounded number of expired keys.
func (s *Store) KVSweep(ctx context.Context, p *store.KVSweepParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	var n int64
	err := s.inRelaxedTx(ctx, "kv sweep", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, sqlKVSweep, p.Now.UnixMilli(), limit)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		return nil
	})
	return int(n), err
}
