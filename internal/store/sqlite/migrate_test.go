package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	runner "github.com/queen-go/queen/internal/store/migrate"
)

// rawDB opens dir's queen.db without the store, closed at cleanup.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "queen.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// oldSchema is a database migrated up to one version only, the state
// brokers of that version left: a migration test fills it with their rows,
// then opens the store on it, which migrates the rest.
type oldSchema struct {
	db  *sql.DB
	dir string
}

// schemaAt creates a database at schema version n in a fresh directory.
func schemaAt(t *testing.T, n int) *oldSchema {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "queen.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if err := migrate(context.Background(), db, n, nil); err != nil {
		t.Fatalf("migrate to %03d: %v", n, err)
	}
	return &oldSchema{db: db, dir: dir}
}

// exec runs the statements in order, failing the test at the first error.
func (o *oldSchema) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		exec(t, o.db, q)
	}
}

// open closes the old database and opens the store on it.
func (o *oldSchema) open(t *testing.T) *Store {
	t.Helper()
	o.db.Close()
	return openTest(t, o.dir)
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// Opening a current database again applies nothing and rewrites nothing.
func TestMigrateTwiceIsNoOp(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	s.Close()
	db := rawDB(t, dir)
	exec(t, db, "UPDATE schema_migrations SET applied_at = 42")
	openTest(t, dir).Close()
	var n, stamped int
	if err := db.QueryRow("SELECT count(*), sum(applied_at = 42) FROM schema_migrations").Scan(&n, &stamped); err != nil {
		t.Fatal(err)
	}
	ms, err := runner.List(Migrations())
	if err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || stamped != n {
		t.Fatalf("schema_migrations: %d rows, %d untouched; want %d untouched", n, stamped, len(ms))
	}
}

// A database that a newer broker migrated is refused, untouched.
func TestMigrateRefusesNewer(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir).Close()
	db := rawDB(t, dir)
	exec(t, db, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_future.up.sql', 0)")
	_, err := Open(context.Background(), Config{Dir: dir})
	var ne *runner.NewerError
	if !errors.As(err, &ne) || !errors.Is(err, runner.ErrNewer) {
		t.Fatalf("Open: %v, want a *migrate.NewerError", err)
	}
	for _, want := range []string{filepath.Join(dir, "queen.db"), "was migrated by a newer version of queen-go",
		`999 "999_future.up.sql"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A file holding tables but no schema_migrations is another program's.
func TestMigrateRefusesForeign(t *testing.T) {
	dir := t.TempDir()
	db := rawDB(t, dir)
	exec(t, db, "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
	_, err := Open(context.Background(), Config{Dir: dir})
	if !errors.Is(err, runner.ErrForeign) {
		t.Fatalf("Open: %v, want migrate.ErrForeign", err)
	}
	want := `SQLite database "` + filepath.Join(dir, "queen.db") + `" holds tables queen-go did not create (messages): ` +
		`it looks like another application's; point QUEEN_DATA_DIR at another folder`
	if err.Error() != want {
		t.Fatalf("error %s\nwant      %s", err, want)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused database got a schema_migrations table (%d, %v)", n, err)
	}
}
