package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	runner "github.com/queen-go/queen/internal/store/migrate"
)

// rawPool connects to the test database without opening a store, closed at
// cleanup. Call it after newSchema, so the schema is dropped after the close.
func rawPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func execAll(t *testing.T, pool *pgxpool.Pool, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// oldSchema is a fresh schema migrated up to one version only, the state
// brokers of that version left: a migration test fills it with their rows,
// then opens the store on it, which migrates the rest.
type oldSchema struct {
	name   string
	pool   *pgxpool.Pool
	prefix string // the quoted schema and a dot, to qualify table names
}

// schemaAt creates a schema at version n.
func schemaAt(t *testing.T, n int) *oldSchema {
	t.Helper()
	schema := newSchema(t)
	pool := rawPool(t)
	opts := migrateOptions(schema)
	opts.Last = n
	if _, err := runner.Run(context.Background(), migrator{pool: pool, schema: schema}, Migrations(), opts); err != nil {
		t.Fatalf("migrate to %03d: %v", n, err)
	}
	return &oldSchema{name: schema, pool: pool, prefix: pgx.Identifier{schema}.Sanitize() + "."}
}

// exec runs the statements in order, failing the test at the first error.
func (o *oldSchema) exec(t *testing.T, stmts ...string) { t.Helper(); execAll(t, o.pool, stmts...) }

// open opens the store on the schema.
func (o *oldSchema) open(t *testing.T) *Store { t.Helper(); return openStore(t, o.name, 4) }

// hasVersionTable reports whether schema has a schema_migrations table.
func hasVersionTable(t *testing.T, pool *pgxpool.Pool, schema string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_tables
		WHERE schemaname = $1 AND tablename = 'schema_migrations')`, schema).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// A fresh schema gets every migration once; a second run applies nothing
// and rewrites nothing.
func TestMigrateFreshThenNoOp(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	pool := rawPool(t)
	if err := migrate(ctx, pool, schema, nil); err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	ms, err := runner.List(Migrations())
	if err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	stamp := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	execAll(t, pool, "UPDATE "+q+".schema_migrations SET applied_at = '2020-01-02 03:04:05+00'")
	if err := migrate(ctx, pool, schema, nil); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	rows, err := pool.Query(ctx, "SELECT version, name, applied_at FROM "+q+".schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Version int
		Name    string
		At      time.Time
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", len(got), len(ms))
	}
	for i, r := range got {
		if r.Version != ms[i].Version || r.Name != ms[i].Name || !r.At.Equal(stamp) {
			t.Errorf("row %d = %+v, want %s applied at %v", i, r, ms[i].Name, stamp)
		}
	}
}

// Real Queen's schema (tables of its own, no schema_migrations of ours) is
// refused with a message naming the schema and QUEEN_PG_SCHEMA, untouched.
func TestMigrateRefusesForeignSchema(t *testing.T) {
	schema := newSchema(t)
	pool := rawPool(t)
	q := pgx.Identifier{schema}.Sanitize()
	execAll(t, pool, "CREATE SCHEMA "+q,
		"CREATE TABLE "+q+".messages (id uuid PRIMARY KEY, payload jsonb)")
	_, err := Open(context.Background(), Config{URL: testURL(t), Schema: schema, PoolSize: 2})
	var fe *runner.ForeignError
	if !errors.As(err, &fe) || !errors.Is(err, runner.ErrForeign) {
		t.Fatalf("Open: %v, want a *migrate.ForeignError", err)
	}
	want := `schema "` + schema + `" holds tables queen-go did not create (messages): it looks like another ` +
		`application's; point QUEEN_PG_SCHEMA at another schema`
	if err.Error() != want {
		t.Fatalf("error %s\nwant      %s", err, want)
	}
	if hasVersionTable(t, pool, schema) {
		t.Fatal("the refused schema got a schema_migrations table")
	}
}

// A schema whose schema_migrations records a version this binary does not
// know was migrated by a newer broker: refused.
func TestMigrateRefusesNewer(t *testing.T) {
	schema := newSchema(t)
	openStore(t, schema, 2).Close()
	pool := rawPool(t)
	execAll(t, pool, "INSERT INTO "+pgx.Identifier{schema}.Sanitize()+
		".schema_migrations (version, name) VALUES (999, '999_future.up.sql')")
	_, err := Open(context.Background(), Config{URL: testURL(t), Schema: schema, PoolSize: 2})
	if !errors.Is(err, runner.ErrNewer) {
		t.Fatalf("Open: %v, want migrate.ErrNewer", err)
	}
	for _, want := range []string{`schema "` + schema + `"`, "was migrated by a newer version of queen-go",
		`999 "999_future.up.sql"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Other applications' schema_migrations: another tool's columns, or our
// columns with other migrations recorded.
func TestMigrateRefusesForeignVersionTable(t *testing.T) {
	for _, tc := range []struct {
		name, create, inErr string
	}{
		{"other columns", "CREATE TABLE %s.schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL);" +
			"INSERT INTO %[1]s.schema_migrations VALUES (1, false)",
			"holds tables queen-go did not create (schema_migrations)"},
		{"other names", "CREATE TABLE %s.schema_migrations (version int PRIMARY KEY, name text NOT NULL, " +
			"applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO %[1]s.schema_migrations (version, name) " +
			"VALUES (1, '001_users.up.sql')",
			`records migration 1 as "001_users.up.sql" where queen-go has "001_init.up.sql"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := newSchema(t)
			pool := rawPool(t)
			q := pgx.Identifier{schema}.Sanitize()
			execAll(t, pool, "CREATE SCHEMA "+q, strings.ReplaceAll(strings.ReplaceAll(tc.create, "%[1]s", q), "%s", q))
			err := migrate(context.Background(), pool, schema, nil)
			if !errors.Is(err, runner.ErrForeign) || !strings.Contains(err.Error(), tc.inErr) ||
				!strings.Contains(err.Error(), "QUEEN_PG_SCHEMA") {
				t.Fatalf("migrate: %v, want migrate.ErrForeign saying %q", err, tc.inErr)
			}
		})
	}
}

// The default schema is real Queen's too: a refusal there says so. (Tested
// without a database: the shared test database may hold a "queen" schema.)
func TestMigrateForeignQueenSchemaMessage(t *testing.T) {
	opts := migrateOptions("queen")
	err := &runner.ForeignError{Target: opts.Target, Guess: opts.Guess, Advice: opts.Advice,
		Tables: []string{"consumer_groups_metadata", "messages", "partition_consumers", "partitions", "queues",
			"retention_history"}}
	const want = `schema "queen" holds tables queen-go did not create (consumer_groups_metadata, messages, ` +
		`partition_consumers, partitions, queues, …): it looks like another application's (real Queen uses "queen"); ` +
		`point QUEEN_PG_SCHEMA at another schema`
	if err.Error() != want {
		t.Fatalf("error %s\nwant      %s", err, want)
	}
}
