package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrate creates the schema and applies the embedded migrations it has not
// seen, in version order, each in its own transaction. It holds a
// session-level advisory lock keyed by the schema name throughout, so brokers
// starting together on an empty database apply each migration exactly once
// and all come up.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return wrapErr("postgres: migrate: acquire connection", err)
	}
	defer conn.Release()
	key := migrationLockKey(schema)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return wrapErr("postgres: migrate: lock", err)
	}
	defer func() {
		// A connection that cannot unlock is broken; dropping it drops the lock.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return wrapErr("postgres: migrate: create schema", err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+`.schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return wrapErr("postgres: migrate: create schema_migrations", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.up.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := applyMigration(ctx, conn.Conn(), ident, name); err != nil {
			return err
		}
	}
	return nil
}

// applyMigration runs one migration file unless schema_migrations records it.
func applyMigration(ctx context.Context, conn *pgx.Conn, ident, name string) error {
	base := path.Base(name)
	version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
	if err != nil {
		return fmt.Errorf("postgres: migration %s: bad version prefix", base)
	}
	var seen bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+ident+".schema_migrations WHERE version = $1)",
		version).Scan(&seen); err != nil {
		return wrapErr("postgres: read schema_migrations", err)
	}
	if seen {
		return nil
	}
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return wrapErr("postgres: migration "+base, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The pool sets search_path at connect time, but the schema may have been
	// created just now by this connection: set it explicitly for the body.
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
		return wrapErr("postgres: migration "+base, err)
	}
	if _, err := tx.Exec(ctx, string(body)); err != nil {
		return wrapErr("postgres: migration "+base, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+ident+".schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
		version, base, time.Now()); err != nil {
		return wrapErr("postgres: record migration "+base, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return wrapErr("postgres: commit migration "+base, err)
	}
	return nil
}

// migrationLockKey derives the advisory lock key of a schema's migrations.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("queen-go/migrate/" + schema))
	return int64(h.Sum64())
}
