package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func TestRedactSQL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`select pg_sleep(4), 'ALTER ROLE app PASSWORD ''hunter2''' as q`, `select pg_sleep(?), ? as q`},
		{`ALTER ROLE app PASSWORD 'hunter2'`, `ALTER ROLE app PASSWORD ?`},
		{`SELECT * FROM t WHERE tok = E'se\'cret' AND n = 42 AND f = 1.5e-3`, `SELECT * FROM t WHERE tok = ? AND n = ? AND f = ?`},
		{`SELECT $body$ secret $body$, $$x$$, $1, $12`, `SELECT ?, ?, $1, $12`},
		{`SELECT "col 1", t2.c3 FROM t2 -- token=abc` + "\nWHERE x = X'ff'", `SELECT "col 1", t2.c3 FROM t2 ` + "\nWHERE x = ?"},
		{`SELECT 1 /* secret /* nested */ still */ + 2`, `SELECT ?   + ?`},
		{`SELECT 'unterminated secret`, `SELECT ?`},
		{`SELECT name FROM queues WHERE id = ANY ($1)`, `SELECT name FROM queues WHERE id = ANY ($1)`},
	} {
		if got := redactSQL(tc.in); got != tc.want {
			t.Errorf("redactSQL(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	long := "SELECT " + strings.Repeat("é", 300)
	if got := redactSQL(long); len(got) > maxActivityQuery || !strings.HasPrefix(got, "SELECT é") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("long query: %d bytes %q", len(got), got)
	}
}

func FuzzRedactSQL(f *testing.F) {
	f.Add(`SELECT 'a''b', E'\'', $t$x$t$, "q""i", 1.5, $1 -- c`)
	f.Fuzz(func(t *testing.T, s string) {
		out := redactSQL(s)
		if strings.Contains(s, "'") && strings.Count(out, "'") > 0 && !strings.Contains(s, `"`) && !strings.Contains(s, "--") && !strings.Contains(s, "/*") {
			t.Fatalf("a quote survived: %q -> %q", s, out)
		}
	})
}

// TestStatsEngineRedactsLiterals: a session running a statement with a
// password literal shows in the activity, without the literal.
func TestStatsEngineRedactsLiterals(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.pool.Exec(ctx, `SELECT pg_sleep(30), 'ALTER ROLE app PASSWORD ''hunter2''' AS q`)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := s.StatsEngine(context.Background(), &store.StatsEngineParams{})
		if err != nil {
			t.Fatal(err)
		}
		seen := false
		for _, a := range st.Activity {
			if strings.Contains(a.Query, "hunter2") {
				t.Fatalf("activity shows the literal: %q", a.Query)
			}
			if strings.Contains(a.Query, "pg_sleep") {
				seen = true
				if !strings.Contains(a.Query, "pg_sleep(?)") {
					t.Fatalf("activity %q, want the statement with its literals redacted", a.Query)
				}
			}
		}
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleeping session never showed in %+v", st.Activity)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
}
