// Package enginetest is the table of storage engines that every engine
// suite runs over: the driver conformance suite (storetest), the black-box
// HTTP suite (apitest), the latency tests and the measurements. Adding an
// engine is one row in All.
//
// A package running these rows calls Main from its TestMain.
//
// An engine that cannot run here skips (PostgreSQL without
// QUEEN_TEST_DATABASE_URL), and fails instead when QUEEN_REQUIRE_POSTGRES is
// set, as CI does.
package enginetest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// Options tunes a store for one test; the zero value is the tests' default.
type Options struct {
	// PoolSize is PostgreSQL's connection pool (0: 8, enough for a test).
	PoolSize int
	// NameCacheSize bounds the name → id caches (0: the engine's default).
	NameCacheSize int
}

// Handle is a fresh, empty store and a view of the database under it.
type Handle struct {
	store.Store
	// SQL reads the store's own tables (schema_migrations, messages,
	// dead_letters, …) with the SQL both engines accept; tests that only
	// count or list rows use it instead of engine-specific code.
	SQL *sql.DB
	// Size is the disk the broker holds for its message tables, after what
	// the engine's own housekeeping would have done on time (PostgreSQL:
	// VACUUM; SQLite: nothing, freed pages are reused).
	Size func(tb testing.TB) int64
	// SettleWaves is after how many waves of push, pop, ack and retention
	// Size stops growing (TestRetentionWaves); see the engine's row.
	SettleWaves int
}

// Engine is one row of the table.
type Engine struct {
	Name string
	// Require skips tb when the engine cannot run here (or fails it, when
	// the environment says the engine must be tested); Run calls it.
	Require func(tb testing.TB)
	// Open returns a fresh, empty store that is closed when tb ends, or
	// skips tb when the engine cannot run here.
	Open func(tb testing.TB, o Options) *Handle
}

// All is every engine.
var All = []Engine{
	{Name: "sqlite", Open: openSQLite},
	{Name: "postgres", Open: openPostgres, Require: func(tb testing.TB) { pgtest.URL(tb) }},
}

// Run runs fn once per engine, as subtests named after the engines
// (-run 'TestAPI/sqlite' picks one), each skipped or failed by the
// engine's Require.
func Run(t *testing.T, fn func(t *testing.T, e Engine)) {
	for _, e := range All {
		t.Run(e.Name, func(t *testing.T) {
			if e.Require != nil {
				e.Require(t)
			}
			fn(t, e)
		})
	}
}

// RunB is Run for benchmarks.
func RunB(b *testing.B, fn func(b *testing.B, e Engine)) {
	for _, e := range All {
		b.Run(e.Name, func(b *testing.B) {
			if e.Require != nil {
				e.Require(b)
			}
			fn(b, e)
		})
	}
}

// Main runs a package's tests over the table and then releases what the
// engines kept for the tests (PostgreSQL's pool of schemas, see
// pgtest.Reused). Call it from TestMain.
func Main(m *testing.M) { pgtest.Main(m) }

// Store is e.Open(tb, Options{}).Store, the shape storetest.Run and
// apitest.Run take.
func (e Engine) Store(tb testing.TB) store.Store { return e.Open(tb, Options{}).Store }

// Stores returns a constructor of fresh stores with o.
func (e Engine) Stores(o Options) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store { return e.Open(t, o).Store }
}

func openSQLite(tb testing.TB, o Options) *Handle {
	tb.Helper()
	dir := tb.TempDir()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, NameCacheSize: o.NameCacheSize})
	if err != nil {
		tb.Fatalf("sqlite.Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "queen.db")+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return &Handle{Store: st, SQL: db, SettleWaves: 1,
		// The database file and its write-ahead log: both are disk the
		// broker holds.
		Size: func(tb testing.TB) int64 {
			var total int64
			for _, name := range []string{"queen.db", "queen.db-wal"} {
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
					total += fi.Size()
				}
			}
			return total
		},
	}
}

func openPostgres(tb testing.TB, o Options) *Handle {
	tb.Helper()
	url := pgtest.URL(tb)
	schema := pgtest.Reused(tb)
	if o.PoolSize == 0 {
		o.PoolSize = 8
	}
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema, PoolSize: o.PoolSize,
		NameCacheSize: o.NameCacheSize})
	if err != nil {
		tb.Fatalf("postgres.Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(2)
	tb.Cleanup(func() { db.Close() })
	return &Handle{Store: st, SQL: db,
		// The deleted rows' space, in the heap and in the hot indexes,
		// is reused only once VACUUM has run twice over it (an index page
		// emptied by one run is freed by the next, once no transaction can
		// still reach it): the size is flat from the third wave on.
		SettleWaves: 3,
		Size: func(tb testing.TB) int64 {
			ctx := context.Background()
			for _, table := range []string{"messages", "lanes", "partitions", "dead_letters"} {
				if _, err := db.ExecContext(ctx, "VACUUM "+table); err != nil {
					tb.Fatal(err)
				}
			}
			var n int64
			err := db.QueryRowContext(ctx, `SELECT pg_total_relation_size('messages') + pg_total_relation_size('lanes') +
				pg_total_relation_size('partitions') + pg_total_relation_size('dead_letters')`).Scan(&n)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		},
	}
}
