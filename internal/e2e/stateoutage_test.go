package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
)

// While the database is unreachable the key/value, timer and ephemeral
// routes answer 503 with Retry-After and a body naming the feature (never a
// 500, never a hang); once it is back they serve again.
func TestStateRoutesDuringOutage(t *testing.T) {
	u := testURL(t)
	schema := newSchema(t)
	px := startProxy(t, dbAddr(t, u))
	br := startBroker(t, "state-outage",
		postgres.Config{URL: proxiedURL(u, px.Addr()), Schema: schema, PoolSize: 4, StatementTimeout: 2 * time.Second},
		server.Config{SpoolDir: t.TempDir()})
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func() (int, []byte, http.Header) {
		req, _ := http.NewRequestWithContext(ctx, "PUT", br.url+"/api/v1/kv/ns/k", strings.NewReader(`{"value":1}`))
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body, resp.Header
	}
	if status, body, _ := put(); status != http.StatusOK {
		t.Fatalf("before the outage: %d %s", status, body)
	}
	px.Cut()
	status, body, header := put()
	if status != http.StatusServiceUnavailable || header.Get("Retry-After") != "5" ||
		!strings.HasPrefix(string(body), `{"error":"kv unavailable: `) {
		t.Fatalf("during the outage: %d %s (Retry-After %q), want 503 kv unavailable with Retry-After 5",
			status, body, header.Get("Retry-After"))
	}
	for _, path := range []string{"/api/v1/timers", "/api/v1/ephemeral"} {
		st, b, err := c.do(ctx, "GET", br.url+path, nil)
		if err != nil || st != http.StatusServiceUnavailable || !strings.Contains(string(b), "unavailable: ") {
			t.Errorf("GET %s during the outage: %d %s %v, want 503", path, st, b, err)
		}
	}
	px.Restore()
	if !waitUntil(20*time.Second, 100*time.Millisecond, func() bool { s, _, _ := put(); return s == http.StatusOK }) {
		t.Fatal("kv still unavailable 20s after the database came back")
	}
}
