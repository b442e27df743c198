package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	// Imported as runner: this package calls its own migrate function.
	runner "github.com/queen-go/queen/internal/store/migrate"
)

// codeUndefinedColumn: a schema_migrations that is not ours.
const codeUndefinedColumn = "42703"

// Migrations returns the embedded migrations, NNN_name.up.sql at its root.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err) // "migrations" is a valid path: cannot happen
	}
	return sub
}

// migrate creates the schema and applies the embedded migrations it has not
// seen, in version order, each in its own transaction. It holds a
// session-level advisory lock keyed by the schema name throughout, so brokers
// starting together on an empty database apply each migration exactly once
// and all come up. A schema holding another application's tables (real
// Queen's "queen" schema, say) or migrated by a newer broker is refused
// with a *migrate.ForeignError or a *migrate.NewerError, untouched.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) error {
	opts := migrateOptions(schema)
	opts.Logger = log
	_, err := runner.Run(ctx, migrator{pool: pool, schema: schema}, Migrations(), opts)
	return err
}

// migrateOptions words the runner's refusals for schema.
func migrateOptions(schema string) runner.Options {
	opts := runner.Options{
		Target: fmt.Sprintf("schema %q", schema),
		Advice: "point QUEEN_PG_SCHEMA at another schema",
	}
	// Real Queen keeps its tables in "queen", queen-go's default schema too.
	if schema == "queen" {
		opts.Guess = `real Queen uses "queen"`
	}
	return opts
}

// migrator is the PostgreSQL migrate.Driver: its lock is a session advisory
// lock keyed by the schema, held by one dedicated connection.
type migrator struct {
	pool   *pgxpool.Pool
	schema string
}

func (m migrator) Lock(ctx context.Context) (runner.Conn, error) {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return nil, wrapErr("postgres: migrate: acquire connection", err)
	}
	key := migrationLockKey(m.schema)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		conn.Release()
		return nil, wrapErr("postgres: migrate: lock", err)
	}
	return &migrateConn{conn: conn, key: key, schema: m.schema, ident: pgx.Identifier{m.schema}.Sanitize()}, nil
}

type migrateConn struct {
	conn   *pgxpool.Conn
	key    int64
	schema string
	ident  string // schema, quoted
}

func (c *migrateConn) Unlock(ctx context.Context) {
	// A connection that cannot unlock is broken; dropping it drops the lock.
	if _, err := c.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", c.key); err != nil {
		c.conn.Conn().Close(context.Background())
	}
	c.conn.Release()
}

// Tables lists the schema's relations that hold or show rows: tables,
// partitioned tables, views, materialized views, foreign tables.
func (c *migrateConn) Tables(ctx context.Context) ([]string, error) {
	rows, err := c.conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`, c.schema)
	if err != nil {
		return nil, wrapErr("postgres: migrate: list tables", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapErr("postgres: migrate: list tables", err)
	}
	return tables, nil
}

func (c *migrateConn) EnsureVersionTable(ctx context.Context) error {
	if _, err := c.conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+c.ident); err != nil {
		return wrapErr("postgres: migrate: create schema", err)
	}
	if _, err := c.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+c.ident+`.schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return wrapErr("postgres: migrate: create schema_migrations", err)
	}
	return nil
}

func (c *migrateConn) Applied(ctx context.Context) ([]runner.Applied, error) {
	var applied []runner.Applied
	rows, err := c.conn.Query(ctx, "SELECT version, name FROM "+c.ident+".schema_migrations ORDER BY version")
	if err == nil {
		applied, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (runner.Applied, error) {
			var a runner.Applied
			err := row.Scan(&a.Version, &a.Name)
			return a, err
		})
	}
	if isCode(err, codeUndefinedColumn) || errors.As(err, new(pgx.ScanArgError)) {
		return nil, fmt.Errorf("postgres: read schema_migrations: %w: %w", runner.ErrVersionTable, err)
	}
	if err != nil {
		return nil, wrapErr("postgres: read schema_migrations", err)
	}
	return applied, nil
}

func (c *migrateConn) Apply(ctx context.Context, m runner.Migration, appliedAt time.Time) error {
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		return wrapErr("postgres: migration "+m.Name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The pool sets search_path at connect time, but the schema may have been
	// created just now by this connection: set it explicitly for the body.
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+c.ident); err != nil {
		return wrapErr("postgres: migration "+m.Name, err)
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return wrapErr("postgres: migration "+m.Name, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+c.ident+".schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
		m.Version, m.Name, appliedAt); err != nil {
		return wrapErr("postgres: record migration "+m.Name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return wrapErr("postgres: commit migration "+m.Name, err)
	}
	return nil
}

// migrationLockKey derives the advisory lock key of a schema's migrations.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("queen-go/migrate/" + schema))
	return int64(h.Sum64())
}
