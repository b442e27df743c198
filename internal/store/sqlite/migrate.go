package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	// Imported as runner: this package calls its own migrate function.
	runner "github.com/queen-go/queen/internal/store/migrate"
)

// Migrations returns the embedded migrations, NNN_name.up.sql at its root.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err) // "migrations" is a valid path: cannot happen
	}
	return sub
}

// migrate applies the embedded migrations that the database has not seen,
// in version order, each in its own transaction; last > 0 stops after that
// version (tests build databases of older schema versions with it). A
// database it must not touch is refused with a *migrate.ForeignError or a
// *migrate.NewerError.
func migrate(ctx context.Context, db *sql.DB, last int, log *slog.Logger) error {
	target := "SQLite database"
	var file string
	if err := db.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		return fmt.Errorf("migrate: locate database: %w", err)
	}
	if file != "" {
		target += fmt.Sprintf(" %q", file)
	}
	_, err := runner.Run(ctx, migrator{db}, Migrations(), runner.Options{Last: last, Target: target,
		Advice: "point QUEEN_DATA_DIR at another folder", Logger: log})
	return err
}

// migrator is the embedded engine's migrate.Driver. Its lock is the
// connection itself: the store has a single writer connection (and the data
// folder keeps other brokers out), so holding it excludes every other
// writer.
type migrator struct{ db *sql.DB }

func (m migrator) Lock(ctx context.Context) (runner.Conn, error) {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	return migrateConn{conn}, nil
}

type migrateConn struct{ conn *sql.Conn }

func (c migrateConn) Unlock(ctx context.Context) { c.conn.Close() }

func (c migrateConn) Tables(ctx context.Context) ([]string, error) {
	rows, err := c.conn.QueryContext(ctx,
		`SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return nil, fmt.Errorf("migrate: list tables: %w", err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("migrate: list tables: %w", err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("migrate: list tables: %w", err)
	}
	return tables, nil
}

func (c migrateConn) EnsureVersionTable(ctx context.Context) error {
	if _, err := c.conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	return nil
}

func (c migrateConn) Applied(ctx context.Context) ([]runner.Applied, error) {
	rows, err := c.conn.QueryContext(ctx, "SELECT version, name FROM schema_migrations ORDER BY version")
	if err != nil {
		if strings.Contains(err.Error(), "no such column") {
			return nil, fmt.Errorf("read schema_migrations: %w: %w", runner.ErrVersionTable, err)
		}
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	var applied []runner.Applied
	for rows.Next() {
		var a runner.Applied
		if err := rows.Scan(&a.Version, &a.Name); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w: %w", runner.ErrVersionTable, err)
		}
		applied = append(applied, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return applied, nil
}

// Apply runs a migration and records it (applied_at in Unix milliseconds,
// as every time in this engine) in one transaction.
func (c migrateConn) Apply(ctx context.Context, m runner.Migration, appliedAt time.Time) error {
	tx, err := c.conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, appliedAt.UnixMilli()); err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migration %s: %w", m.Name, err)
	}
	return nil
}
