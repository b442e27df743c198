// Package pgtest gives tests a PostgreSQL database: the URL from
// QUEEN_TEST_DATABASE_URL (skipping the test when it is unset, or failing it
// when QUEEN_REQUIRE_POSTGRES says PostgreSQL must be tested) and a fresh
// schema per test, dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SkipReason is why PostgreSQL tests skip, and how to enable them.
const SkipReason = "QUEEN_TEST_DATABASE_URL not set: start PostgreSQL with .ci/pg.sh and export the URL it prints"

// URL returns the test database URL, or skips tb (fails it when
// QUEEN_REQUIRE_POSTGRES is set, as CI does).
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("QUEEN_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("QUEEN_REQUIRE_POSTGRES") != "" {
			tb.Fatal("QUEEN_REQUIRE_POSTGRES is set but QUEEN_TEST_DATABASE_URL is not: the PostgreSQL tests cannot run")
		}
		tb.Skip(SkipReason)
	}
	return u
}

// Schema returns a fresh schema name starting with prefix and drops the
// schema when tb ends. Call it before opening stores on the schema, so that
// the drop runs after they are closed.
func Schema(tb testing.TB, prefix string) string {
	tb.Helper()
	u := URL(tb)
	b := make([]byte, 8)
	rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}
