package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
)

// Every way the database can be out of reach is an outage (503 with
// Retry-After, the spool for pushes), never an internal error; a statement
// the database refused is not.
func TestUnavailableClassifiesOutages(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"terminated by DROP DATABASE WITH (FORCE)", &pgconn.PgError{Code: "57P01"}, true},
		{"database dropped", &pgconn.PgError{Code: "57P04"}, true},
		{"database does not exist", &pgconn.PgError{Code: "3D000"}, true},
		{"standby refuses writes", &pgconn.PgError{Code: "25006"}, true},
		{"password refused", &pgconn.PgError{Code: "28P01"}, true},
		{"role gone", &pgconn.PgError{Code: "28000"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"cannot connect now (recovery)", &pgconn.PgError{Code: "57P03"}, true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"connection refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"statement timeout", &pgconn.PgError{Code: codeQueryCanceled}, false},
		{"unique violation", &pgconn.PgError{Code: codeUnique}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"caller gave up", context.Canceled, false},
	} {
		if got := unavailable(tc.err); got != tc.want {
			t.Errorf("%s (%v): unavailable %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// The refusals a real server sends while connecting (a database that does
// not exist, as after DROP DATABASE; a role that cannot log in) come wrapped
// in a connect error and are outages too.
func TestUnavailableConnectRefusals(t *testing.T) {
	base, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	gone := *base
	gone.Path = "/queen_no_such_database_i23"
	nobody := *base
	nobody.User = url.UserPassword("queen_no_such_role_i23", "x")
	for name, u := range map[string]string{"database does not exist": gone.String(), "login refused": nobody.String()} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := pgconn.Connect(ctx, u)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			t.Fatalf("%s: connected to %s", name, u)
		}
		if !unavailable(err) {
			t.Errorf("%s: %v is not classified unavailable", name, err)
		}
		if !errors.Is(wrapErr("postgres: kv", err), store.ErrUnavailable) {
			t.Errorf("%s: wrapErr does not mark %v as store.ErrUnavailable", name, err)
		}
	}
}

// At start-up the same refusals are a configuration waiting cannot fix:
// Open stops instead of opening a store that waits forever.
func TestOpenStopsOnRefusedLogin(t *testing.T) {
	base, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	gone := *base
	gone.Path = "/queen_no_such_database_i23"
	nobody := *base
	nobody.User = url.UserPassword("queen_no_such_role_i23", "x")
	for name, u := range map[string]string{"database does not exist": gone.String(), "login refused": nobody.String()} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st, err := Open(ctx, Config{URL: u})
		cancel()
		if err == nil {
			st.Close()
			t.Errorf("%s: Open succeeded, want it to stop", name)
		}
	}
}
