// Package testbroker serves a real broker in process, on a loopback port,
// for black-box tests of the packages that speak to one over HTTP (the
// client library, the command line). Each engine has its constructor;
// Engines lists both so that a test runs the same body on each.
package testbroker

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// Engine starts a broker for a test and returns its base URL.
type Engine struct {
	Name  string
	Start func(t testing.TB) string
}

// Engines are the two storage engines, embedded first. The PostgreSQL one
// skips its test unless QUEEN_TEST_DATABASE_URL is set (and fails it when
// QUEEN_REQUIRE_POSTGRES is).
var Engines = []Engine{
	{Name: "sqlite", Start: SQLite},
	{Name: "postgres", Start: Postgres},
}

// SQLite serves a broker over a fresh embedded store.
func SQLite(t testing.TB) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	return Serve(t, server.Config{}, st)
}

// Postgres serves a broker over a fresh schema of the test database.
func Postgres(t testing.TB) string {
	t.Helper()
	u := pgtest.URL(t)
	return PostgresSchema(t, u, pgtest.Schema(t, "testbroker_"))
}

// PostgresSchema serves a broker over schema of the database at url; two
// brokers on one schema share their data, as a cluster does.
func PostgresSchema(t testing.TB, url, schema string) string {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema, PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	return Serve(t, server.Config{}, st)
}

// Serve serves st with cfg until the test ends, then shuts the broker down
// and closes st.
func Serve(t testing.TB, cfg server.Config, st store.Store) string {
	t.Helper()
	srv, err := server.New(cfg, st)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		// More than 5 s: Shutdown waits that long for a connection a client
		// opened but never used.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("testbroker: shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("testbroker: serve: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("testbroker: close store: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}
