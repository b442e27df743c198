package e2e

import (
	"context"
	"io/fs"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store/postgres"
)

// The broker binary started while PostgreSQL is unreachable comes up and
// serves: /health answers 503, a push is spooled (201 buffered), a pop
// fails with a JSON error. Once the database answers, /health turns 200
// within a few seconds, the schema is migrated, and the spooled message is
// delivered exactly once.
func TestStartDuringOutage(t *testing.T) {
	u := testURL(t)
	schema := newSchema(t)
	const queue = "e2e-start-outage"
	px := startProxy(t, dbAddr(t, u))
	px.Cut() // before the broker ever reaches the database
	p := startProcess(t,
		"QUEEN_DATABASE_URL="+proxiedURL(u, px.Addr()),
		"QUEEN_PG_SCHEMA="+schema,
		"FILE_BUFFER_DIR="+t.TempDir(),
		"DB_POOL_SIZE=4",
		"DB_STATEMENT_TIMEOUT=2000",
	)
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var health map[string]any
	status, body, err := c.getJSON(ctx, p.url+"/health", &health)
	switch {
	case err != nil:
		t.Fatalf("during the outage: /health: %v", err)
	case status != http.StatusServiceUnavailable || health["status"] != "unhealthy" || health["database"] != "disconnected":
		t.Errorf("during the outage: /health %d %s, want 503 with status unhealthy and database disconnected", status, body)
	}

	res, err := c.push(ctx, p.url, []pushItem{{Queue: queue, TransactionID: "pushed-during-outage", Payload: map[string]any{"n": 1}}})
	if err != nil {
		t.Fatalf("during the outage: %v", err)
	}
	if res[0].Status != "buffered" || res[0].MessageID == "" {
		t.Fatalf("during the outage: push answered %+v, want buffered with a message id", res[0])
	}
	id := res[0].MessageID

	status, body, err = c.do(ctx, "GET", p.url+queuePath(queue)+"?batch=10", nil)
	if err == nil {
		err = outageError(status, body)
	}
	if err != nil {
		t.Errorf("during the outage: pop: %v", err)
	} else {
		t.Logf("during the outage: pop %d %s", status, body)
	}

	var m map[string]any
	if _, body, err := c.getJSON(ctx, p.url+"/api/v1/system/maintenance", &m); err != nil || m["bufferedMessages"] != float64(1) {
		t.Errorf("during the outage: maintenance status %s (%v), want bufferedMessages 1", body, err)
	}
	if n := schemaTables(t, ctx, u, schema); n != 0 {
		t.Errorf("during the outage: schema %s has %d tables; the broker cannot have reached the database", schema, n)
	}

	px.Restore()
	restored := time.Now()
	if !waitUntil(5*time.Second, 50*time.Millisecond, func() bool {
		health = nil
		status, body, err = c.getJSON(ctx, p.url+"/health", &health)
		return err == nil && status == http.StatusOK
	}) {
		t.Fatalf("5s after the database came back: /health %d %s (%v), want 200", status, body, err)
	}
	t.Logf("/health turned 200 %v after the database came back", time.Since(restored).Round(time.Millisecond))
	if health["status"] != "healthy" || health["database"] != "connected" {
		t.Errorf("after the outage: /health 200 %s, want status healthy and database connected", body)
	}

	// Migrated: every embedded migration is recorded.
	wantVersions, err := fs.Glob(postgres.Migrations(), "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&applied); err != nil {
		t.Errorf("after the outage: schema %s not migrated: %v", schema, err)
	} else if applied != len(wantVersions) {
		t.Errorf("after the outage: %d migrations applied to %s, want %d", applied, schema, len(wantVersions))
	}

	// The buffered message, once.
	var got *popResponse
	if !waitUntil(10*time.Second, 0, func() bool {
		got, err = c.pop(ctx, p.url, queuePath(queue)+"?batch=10&wait=true&timeout=1000")
		return err != nil || got != nil
	}) || err != nil {
		t.Fatalf("after the outage: the buffered message was not delivered within 10s (last error %v)", err)
	}
	if len(got.Messages) != 1 || got.Messages[0].ID != id || got.Messages[0].TransactionID != "pushed-during-outage" {
		t.Fatalf("after the outage: pop delivered %+v, want only message %s (pushed-during-outage)", got.Messages, id)
	}
	if err := c.ackAll(ctx, p.url, got); err != nil {
		t.Fatal(err)
	}
	if again, err := c.pop(ctx, p.url, queuePath(queue)+"?batch=10"); err != nil || again != nil {
		t.Errorf("after the ack: pop %+v (%v), want 204", again, err)
	}
	if _, body, err := c.getJSON(ctx, p.url+"/api/v1/system/maintenance", &m); err != nil || m["bufferedMessages"] != float64(0) {
		t.Errorf("after the outage: maintenance status %s (%v), want bufferedMessages 0", body, err)
	}
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "messages"}.Sanitize()).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("after the outage: %d rows in %s.messages (%v), want 1", rows, schema, err)
	}

	// Fresh pushes go straight to the database.
	if res, err := c.push(ctx, p.url, []pushItem{{Queue: queue, Payload: map[string]any{"n": 2}}}); err != nil || res[0].Status != "queued" {
		t.Errorf("after the outage: push %+v (%v), want queued", res, err)
	}

	if err := p.stop(20 * time.Second); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
}

// schemaTables counts the tables in schema, reading the database directly.
func schemaTables(t testing.TB, ctx context.Context, u, schema string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
