package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/testbroker"
	"github.com/queen-go/queen/internal/transfer"
)

// call sends body (JSON, nil for none) to base+path with the headers kv
// (name, value, …) and returns the status and the answer.
func call(t *testing.T, method, url string, body any, kv ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, out
}

// callOK is call that requires the status want and decodes the answer into
// v (unless nil).
func callOK(t *testing.T, want int, method, url string, body, v any, kv ...string) []byte {
	t.Helper()
	status, out := call(t, method, url, body, kv...)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, status, out, want)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, out)
		}
	}
	return out
}

// featureReads are the reads through the HTTP API that show a user the
// state of the broker's own features; a copy must answer each alike.
func featureReads(t *testing.T, base string, timers []string, queryID, partition string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range timers {
		out["timer "+id] = string(callOK(t, http.StatusOK, "GET", base+"/api/v1/timers/"+id, nil, nil))
	}
	out["ephemeral"] = string(callOK(t, http.StatusOK, "GET", base+"/api/v1/ephemeral", nil, nil))
	out["stream query"] = string(callOK(t, http.StatusOK, "GET", base+"/api/v1/streams/queries/counts", nil, nil))
	out["stream state"] = string(callOK(t, http.StatusOK, "POST", base+"/streams/v1/state/get",
		map[string]any{"query_id": queryID, "partition_id": partition}, nil))
	out["ingress"] = string(callOK(t, http.StatusOK, "GET", base+"/api/v1/ingress/queues/hooks", nil, nil))
	out["ingress keys"] = string(callOK(t, http.StatusOK, "GET", base+"/api/v1/ingress/queues/hooks/keys", nil, nil))
	return out
}

// TestMigrateCarriesFeatures moves a broker's timers (one to come, one
// cancelled), an ephemeral queue, a stream query with state and an open
// webhook ingress with its API key from the embedded engine to PostgreSQL
// and from there into a new folder. Each has its own line with matching
// counts; brokers on both targets answer every read as the source did, and
// the API key the source minted is accepted by both. A second copy into
// the PostgreSQL target, which holds no queue but those rows, is refused.
func TestMigrateCarriesFeatures(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	const partition = "0190f0c8-3333-7000-8000-000000000001"
	var timers []string
	var queryID, apiKey string
	var want map[string]string
	t.Run("source", func(t *testing.T) {
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		base := testbroker.Serve(t, server.Config{}, st)

		var cred map[string]any
		callOK(t, http.StatusOK, "PUT", base+"/api/v1/ingress/queues/hooks", map[string]any{"auth": "api_key"}, nil)
		callOK(t, http.StatusCreated, "POST", base+"/api/v1/ingress/queues/hooks/keys", nil, &cred)
		apiKey, _ = cred["apiKey"].(string)

		var v []struct {
			TimerID string `json:"timer_id"`
		}
		at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
		callOK(t, http.StatusCreated, "POST", base+"/api/v1/timers", map[string]any{"items": []any{
			map[string]any{"queue": "later", "payload": map[string]any{"n": 1}, "fireAt": at},
			map[string]any{"queue": "later", "payload": map[string]any{"n": 2}, "fireAt": at},
		}}, &v)
		if len(v) != 2 {
			t.Fatalf("scheduled %+v", v)
		}
		timers = []string{v[0].TimerID, v[1].TimerID}
		callOK(t, http.StatusOK, "DELETE", base+"/api/v1/timers/"+timers[1], nil, nil)

		callOK(t, http.StatusCreated, "POST", base+"/api/v1/ephemeral",
			map[string]any{"name": "replies", "ttlSeconds": 3600, "maxMessages": 5}, nil)

		var reg struct {
			QueryID string `json:"query_id"`
		}
		callOK(t, http.StatusOK, "POST", base+"/streams/v1/queries",
			map[string]any{"name": "counts", "source_queue": "events", "config_hash": "h"}, &reg)
		queryID = reg.QueryID
		callOK(t, http.StatusOK, "POST", base+"/streams/v1/cycle", map[string]any{"query_id": queryID, "partition_id": partition,
			"state_ops": []any{
				map[string]any{"type": "upsert", "key": "a", "value": 1},
				map[string]any{"type": "upsert", "key": "w", "value": map[string]any{"windowEnd": 60, "count": 2}},
			}}, nil)
		want = featureReads(t, base, timers, queryID, partition)
	})
	if t.Failed() {
		return
	}

	url, schema := pgtest.URL(t), pgtest.Schema(t, "migrate_")
	back := filepath.Join(t.TempDir(), "back")
	for _, c := range [][]string{
		{"--from", dir, "--to", url, "--to-schema", schema},
		{"--from", url, "--from-schema", schema, "--to", back},
	} {
		var out, errOut bytes.Buffer
		if err := run(ctx, append([]string{"migrate"}, c...), func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatalf("migrate %v: %v\n%s", c, err, out.String())
		}
		for _, line := range []string{"timers 2 2\n", "ephemeral_queues 1 1\n", "streams_queries 1 1\n",
			"streams_state 2 2\n", "webhooks 2 2\n"} {
			if !strings.Contains(out.String(), line) {
				t.Fatalf("migrate %v printed %q, want a line %q", c, out.String(), line)
			}
		}
	}

	// The PostgreSQL target holds no queue, but timers and the rest: a
	// second copy into it is refused before it writes.
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"migrate", "--from", dir, "--to", url, "--to-schema", schema}, func(string) string { return "" },
		&out, &errOut)
	if !errors.Is(err, transfer.ErrTargetNotEmpty) || exitCode(err) != exitError || !strings.Contains(err.Error(), "timers (2)") {
		t.Fatalf("a second migrate into the target: %v (exit %d), want a refusal naming its timers", err, exitCode(err))
	}

	st, err := sqlite.Open(ctx, sqlite.Config{Dir: back})
	if err != nil {
		t.Fatal(err)
	}
	for name, base := range map[string]string{
		"postgres": testbroker.PostgresSchema(t, url, schema),
		"embedded": testbroker.Serve(t, server.Config{}, st),
	} {
		got := featureReads(t, base, timers, queryID, partition)
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s at the %s target = %s\nwant as at the source: %s", k, name, got[k], w)
			}
		}
		var accepted struct {
			EventID string `json:"eventId"`
		}
		callOK(t, http.StatusAccepted, "POST", base+"/ingress/v1/hooks", map[string]any{"at": name}, &accepted,
			"X-Api-Key", apiKey)
		var pop struct {
			Messages []struct {
				ID   string          `json:"id"`
				Data json.RawMessage `json:"data"`
			} `json:"messages"`
		}
		callOK(t, http.StatusOK, "GET", base+"/api/v1/pop/queue/hooks?batch=5", nil, &pop)
		if len(pop.Messages) != 1 || pop.Messages[0].ID != accepted.EventID ||
			string(pop.Messages[0].Data) != fmt.Sprintf(`{"at":%q}`, name) {
			t.Fatalf("the webhook accepted at the %s target popped as %+v", name, pop.Messages)
		}
	}
}
