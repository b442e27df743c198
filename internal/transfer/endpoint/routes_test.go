package endpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/testbroker"
	"github.com/queen-go/queen/internal/transfer"
	"github.com/queen-go/queen/internal/transfer/endpoint"
)

const password = "s3cret-m26-never-shown"

// call sends a JSON request and returns the status and body; no body ever
// shows the target's password.
func call(t *testing.T, method, u string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, rd)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if strings.Contains(string(b), password) {
		t.Fatalf("%s %s answered the password: %s", method, u, b)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return res.StatusCode, m
}

// TestMigrationRoutes: start copies an embedded broker's data to a target
// PostgreSQL in the background (202), status goes from idle through dumping
// and restoring to complete with the elapsed seconds, validate matches every count, a
// second start is refused (409, the target holds queues), a broker on the
// target serves the data where the group left it, push maintenance is on
// so that a push meanwhile waits in the spool, and reset returns to idle.
func TestMigrationRoutes(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var items []store.PushItem
	for i := range 300 {
		items = append(items, storetest.Item("routes", fmt.Sprintf("p%d", i%3), i))
	}
	storetest.PushItems(t, st, now, items...)
	p := storetest.PopParams("routes", "g", now)
	p.Batch, p.AutoAck, p.Partition = 40, true, "p0"
	if got := storetest.Pop(t, st, p); len(got) != 40 {
		t.Fatalf("popped %d", len(got))
	}
	base := testbroker.Serve(t, server.Config{MigrationOpen: endpoint.OpenPostgres, SpoolDir: t.TempDir()}, st)

	pgURL, schema := pgtest.URL(t), pgtest.Schema(t, "routes_")
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	target := map[string]any{"host": u.Hostname(), "port": u.Port(), "database": strings.TrimPrefix(u.Path, "/"),
		"user": u.User.Username(), "password": password, "schema": schema}
	if pw, ok := u.User.Password(); ok {
		t.Skipf("the test database needs a password (%d characters); this test sends its own", len(pw))
	}

	if code, m := call(t, "GET", base+"/api/v1/migration/status", nil); code != 200 || m["status"] != "idle" {
		t.Fatalf("status before: %d %v", code, m)
	}
	if code, m := call(t, "POST", base+"/api/v1/migration/start", map[string]any{"host": "x"}); code != 400 {
		t.Fatalf("start without database and user: %d %v", code, m)
	}
	code, m := call(t, "POST", base+"/api/v1/migration/start", target)
	if code != 202 || m["status"] != "started" || m["message"] == "" {
		t.Fatalf("start: %d %v", code, m)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		_, m = call(t, "GET", base+"/api/v1/migration/status", nil)
		if m["status"] == "complete" || m["status"] == "error" {
			break
		}
		if m["status"] != "dumping" && m["status"] != "restoring" {
			t.Fatalf("status while copying: %v, want Queen's dumping or restoring", m)
		}
		if code, r := call(t, "POST", base+"/api/v1/migration/reset", nil); code != 409 {
			t.Fatalf("reset while running: %d %v", code, r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the copy did not end: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m["status"] != "complete" || m["elapsedSeconds"] == nil {
		t.Fatalf("status at the end: %v", m)
	}

	code, m = call(t, "POST", base+"/api/v1/migration/validate", target)
	if code != 200 || m["success"] != true || m["allMatch"] != true {
		t.Fatalf("validate: %d %v", code, m)
	}
	var names []string
	for _, tb := range m["tables"].([]any) {
		names = append(names, fmt.Sprint(tb.(map[string]any)["table"]))
	}
	if fmt.Sprint(names) != fmt.Sprint(transfer.Entities) {
		t.Fatalf("validate tables: %v, want one each of %v", m["tables"], transfer.Entities)
	}
	code, m = call(t, "POST", base+"/api/v1/migration/start", target)
	if code != 409 || !strings.Contains(fmt.Sprint(m), "already holds queues") {
		t.Fatalf("start into the filled target: %d %v", code, m)
	}

	// Push maintenance is on: a push now waits in the spool.
	code, m = call(t, "GET", base+"/api/v1/system/maintenance", nil)
	if code != 200 || m["maintenanceMode"] != true {
		t.Fatalf("maintenance after the copy: %d %v", code, m)
	}

	// A broker on the target serves the data where the group left it.
	tb := testbroker.PostgresSchema(t, pgURL, schema)
	res, err := http.Get(tb + "/api/v1/pop/queue/routes/partition/p0?batch=1000&autoAck=true&consumerGroup=g")
	if err != nil {
		t.Fatal(err)
	}
	var popped struct {
		Messages []struct{ Data struct{ N int } }
	}
	err = json.NewDecoder(res.Body).Decode(&popped)
	res.Body.Close()
	if err != nil || len(popped.Messages) != 60 || popped.Messages[0].Data.N != 120 {
		t.Fatalf("the target's broker popped %d messages (%v), want the 60 after the first 40", len(popped.Messages), err)
	}

	code, m = call(t, "POST", base+"/api/v1/migration/reset", nil)
	if code != 200 || m["status"] != "idle" || m["message"] != "Migration state reset" {
		t.Fatalf("reset: %d %v", code, m)
	}
	if _, m := call(t, "GET", base+"/api/v1/migration/status", nil); m["status"] != "idle" {
		t.Fatalf("status after reset: %v", m)
	}
}
