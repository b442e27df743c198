package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
)

// A broker whose database is dropped under it (DROP DATABASE … WITH
// (FORCE): its connections are terminated, new ones are refused with
// "database … does not exist") is a broker whose database is out of reach:
// the key/value route answers 503 with Retry-After, never a 500, and a
// push is taken into the spool.
func TestDatabaseDroppedIsUnavailable(t *testing.T) {
	u := testURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := fmt.Sprintf("queen_e2e_gone_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.Path = "/" + name
	br := startBroker(t, "db-gone", postgres.Config{URL: pu.String(), PoolSize: 4, StatementTimeout: 2 * time.Second},
		server.Config{SpoolDir: t.TempDir()})
	c := newClient(t)
	put := func() (int, string, string) {
		req, _ := http.NewRequestWithContext(ctx, "PUT", br.url+"/api/v1/kv/ns/k", strings.NewReader(`{"value":1}`))
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Retry-After")
	}
	if st, body, _ := put(); st != http.StatusOK {
		t.Fatalf("before the drop: %d %s", st, body)
	}
	if _, err := c.push(ctx, br.url, []pushItem{{Queue: "gone", Payload: 1}}); err != nil {
		t.Fatalf("push before the drop: %v", err)
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	// Several rounds: the first meets a terminated connection, the later
	// ones a refused connect.
	for i := range 5 {
		st, body, retry := put()
		if st != http.StatusServiceUnavailable || retry == "" {
			t.Fatalf("PUT kv %d after the drop: %d %s (Retry-After %q), want 503 with Retry-After", i, st, body, retry)
		}
	}
	res, err := c.push(ctx, br.url, []pushItem{{Queue: "gone", Payload: 2}})
	if err != nil {
		t.Fatalf("push after the drop: %v", err)
	}
	if res[0].Status != "buffered" {
		t.Fatalf("push after the drop: %+v, want buffered (the spool)", res[0])
	}
}
