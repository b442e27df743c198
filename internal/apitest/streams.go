package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// The stream routes as Queen's stream SDKs call them (management.md §1.6
// and §10): register a query, commit cycles, read state; and the control
// plane's stream queries.

// streamsRegistered is a 200 answer of POST /streams/v1/queries.
type streamsRegistered struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	Fresh      bool   `json:"fresh"`
	Reset      bool   `json:"reset"`
}

// register registers a query and requires a 200 of exactly Queen's keys.
func (c *client) register(t testing.TB, name, source, sink, hash string, reset bool) streamsRegistered {
	t.Helper()
	body := map[string]any{"name": name, "source_queue": source, "config_hash": hash, "reset": reset}
	if sink != "" {
		body["sink_queue"] = sink
	}
	r := c.do(t, "POST", "/streams/v1/queries", body)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what, raw, "success", "query_id", "name", "config_hash", "fresh", "reset")
	var out streamsRegistered
	_ = json.Unmarshal(r.Body, &out)
	if !out.Success || out.Name != name || out.ConfigHash != hash {
		t.Fatalf("%s: %s, want success for %s/%s", r.what, r.Body, name, hash)
	}
	wantUUIDv7(t, r.what+" query_id", out.QueryID)
	return out
}

// cycleAnswer is the answer of POST /streams/v1/cycle.
type cycleAnswer struct {
	Success         bool         `json:"success"`
	QueryID         string       `json:"query_id"`
	PartitionID     string       `json:"partition_id"`
	QueueName       *string      `json:"queueName"`
	StateOpsApplied int          `json:"state_ops_applied"`
	PushResults     []pushResult `json:"push_results"`
	AckResult       *struct {
		Success       bool `json:"success"`
		Count         int  `json:"count"`
		LeaseReleased bool `json:"lease_released"`
		DLQ           bool `json:"dlq"`
	} `json:"ack_result"`
	Error *string `json:"error"`
}

// cycle posts a cycle and checks the envelope: always 200, exactly the
// documented keys (error only on a failure), push results in the push
// route's shape.
func (c *client) cycle(t testing.TB, body map[string]any) cycleAnswer {
	t.Helper()
	r := c.do(t, "POST", "/streams/v1/cycle", body)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	var out cycleAnswer
	_ = json.Unmarshal(r.Body, &out)
	keys := []string{"success", "query_id", "partition_id", "queueName", "state_ops_applied", "push_results", "ack_result"}
	if !out.Success {
		keys = append(keys, "error")
		if out.Error == nil || *out.Error == "" {
			t.Fatalf("%s: a failure without an error; body %s", r.what, r.Body)
		}
		wantHumanError(t, r.what, *out.Error)
		if out.StateOpsApplied != 0 || len(out.PushResults) != 0 || out.AckResult != nil {
			t.Fatalf("%s: a failure that reports writes; body %s", r.what, r.Body)
		}
	}
	wantKeys(t, r.what, raw, keys...)
	if res, ok := raw["push_results"].([]any); !ok || res == nil {
		t.Fatalf("%s: push_results is not an array; body %s", r.what, r.Body)
	}
	for i, e := range raw["push_results"].([]any) {
		wantKeys(t, fmt.Sprintf("%s push result %d", r.what, i), e.(map[string]any),
			"index", "message_id", "transaction_id", "queueName", "status")
	}
	if a, ok := raw["ack_result"].(map[string]any); ok {
		wantKeys(t, r.what+" ack_result", a, "success", "count", "lease_released", "dlq")
	}
	if out.QueryID != body["query_id"] || out.PartitionID != body["partition_id"] {
		t.Fatalf("%s: ids %s/%s, want the request's; body %s", r.what, out.QueryID, out.PartitionID, r.Body)
	}
	return out
}

// cycleOK posts a cycle and requires it to commit.
func (c *client) cycleOK(t testing.TB, body map[string]any) cycleAnswer {
	t.Helper()
	out := c.cycle(t, body)
	if !out.Success {
		t.Fatalf("cycle failed: %s", strp(out.Error))
	}
	return out
}

// cycleFails posts a cycle and requires it to fail with reason.
func (c *client) cycleFails(t testing.TB, body map[string]any, reason string) {
	t.Helper()
	out := c.cycle(t, body)
	if out.Success || out.Error == nil || *out.Error != reason {
		t.Fatalf("cycle: success %v error %s, want failure %q", out.Success, strp(out.Error), reason)
	}
}

// stateRow is one row of POST /streams/v1/state/get.
type stateRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

// state reads state and requires a 200 of Queen's shape; it returns the
// rows as key=value strings, in order.
func (c *client) state(t testing.TB, body map[string]any) []string {
	t.Helper()
	r := c.do(t, "POST", "/streams/v1/state/get", body)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what, raw, "success", "rows")
	var out struct {
		Success bool       `json:"success"`
		Rows    []stateRow `json:"rows"`
	}
	_ = json.Unmarshal(r.Body, &out)
	if rows, ok := raw["rows"].([]any); !ok || rows == nil || !out.Success {
		t.Fatalf("%s: body %s, want success and a rows array", r.what, r.Body)
	}
	kv := make([]string, len(out.Rows))
	for i, row := range out.Rows {
		wantKeys(t, fmt.Sprintf("%s row %d", r.what, i), raw["rows"].([]any)[i].(map[string]any), "key", "value", "updated_at")
		wantTimestamp(t, r.what+" updated_at", row.UpdatedAt)
		kv[i] = row.Key + "=" + string(row.Value)
	}
	return kv
}

func wantRows(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Fatalf("%s: rows %q, want %q", what, got, want)
	}
}

// streamQuery is the control plane's description of a query.
type streamQuery struct {
	QueryID     string  `json:"queryId"`
	Name        string  `json:"name"`
	SourceQueue string  `json:"sourceQueue"`
	SinkQueue   *string `json:"sinkQueue"`
	ConfigHash  string  `json:"configHash"`
	CreatedAt   string  `json:"createdAt"`
	UpdatedAt   string  `json:"updatedAt"`
	State       struct {
		Partitions int   `json:"partitions"`
		Rows       int64 `json:"rows"`
		Bytes      int64 `json:"bytes"`
	} `json:"state"`
}

// streamQueryGet describes a query and requires a 200.
func (c *client) streamQueryGet(t testing.TB, name string) streamQuery {
	t.Helper()
	r := c.do(t, "GET", "/api/v1/streams/queries/"+url.PathEscape(name), nil)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what, raw, "queryId", "name", "sourceQueue", "sinkQueue", "configHash", "createdAt", "updatedAt", "state")
	var q streamQuery
	_ = json.Unmarshal(r.Body, &q)
	wantTimestamp(t, r.what+" createdAt", q.CreatedAt)
	wantTimestamp(t, r.what+" updatedAt", q.UpdatedAt)
	return q
}

// sourceBatch pushes n messages {"k":key(i),"n":i} to queue (one partition)
// and pops them all for group; it returns the pop.
func (c *client) sourceBatch(t testing.TB, queue, group string, n int, key func(i int) string) *popResp {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = item(queue, map[string]any{"k": key(i), "n": i}, "partition", "p")
	}
	c.push(t, items...)
	path := partitionPath(queue, "p") + fmt.Sprintf("?batch=%d", n)
	if group != "" {
		path += "&consumerGroup=" + url.QueryEscape(group)
	}
	return c.popOK(t, path)
}

// ackOfLast is the ack of a popped batch's last message.
func ackOfLast(p *popResp, extra ...any) map[string]any {
	m := p.Messages[len(p.Messages)-1]
	a := map[string]any{"transactionId": m.TransactionID, "leaseId": p.lease(), "count": len(p.Messages)}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i].(string)] = extra[i+1]
	}
	return a
}

func (s *suite) testStreams(t *testing.T) {
	t.Run("register", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		name, src := uniq("orders.per_minute"), uniq("orders")
		first := c.register(t, name, src, "", "h1", false)
		if !first.Fresh || first.Reset {
			t.Fatalf("first registration: %+v, want fresh", first)
		}
		again := c.register(t, name, src, uniq("totals"), "h1", false)
		if again.Fresh || again.Reset || again.QueryID != first.QueryID {
			t.Fatalf("same hash: %+v, want the same query", again)
		}
		r := c.do(t, "POST", "/streams/v1/queries", map[string]any{"name": name, "source_queue": src, "config_hash": "h2"})
		var conflict map[string]any
		wantJSON(t, r, http.StatusConflict, &conflict)
		wantKeys(t, r.what, conflict, "success", "query_id", "name", "error")
		want := "config_hash mismatch: operator chain changed for queryId '" + name +
			"'. Pass reset:true to wipe existing state, or use a new queryId."
		if conflict["success"] != false || conflict["query_id"] != first.QueryID || conflict["name"] != name || conflict["error"] != want {
			t.Fatalf("%s: %s, want Queen's conflict", r.what, r.Body)
		}
		reset := c.register(t, name, src, "", "h2", true)
		if reset.Fresh || !reset.Reset || reset.QueryID != first.QueryID {
			t.Fatalf("reset: %+v, want a reset of the same query", reset)
		}
		if q := c.streamQueryGet(t, name); q.ConfigHash != "h2" || q.SinkQueue != nil || q.SourceQueue != src {
			t.Fatalf("query after the reset: %+v", q)
		}
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"source_queue": src, "config_hash": "h"}, "name is required"},
			{map[string]any{"name": "", "source_queue": src, "config_hash": "h"}, "name is required"},
			{map[string]any{"name": name, "config_hash": "h"}, "source_queue is required"},
			{map[string]any{"name": name, "source_queue": src}, "config_hash is required"},
			{[]any{}, "request body must be a JSON object"},
			{"42", "request body must be a JSON object"},
			{"{", "bad body: "},
			{map[string]any{"name": "a\x01b", "source_queue": src, "config_hash": "h"}, "bad body: name contains the control character U+0001"},
			{map[string]any{"name": name, "source_queue": src, "config_hash": "h", "reset": "yes"}, "bad body: reset"},
		} {
			wantPlainError(t, c.do(t, "POST", "/streams/v1/queries", tc.body), http.StatusBadRequest, tc.msg)
		}
	})

	t.Run("cycle commits state, pushes and ack together", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, sink, group := uniq("events"), uniq("totals"), uniq("streams.counts")
		q := c.register(t, uniq("counts"), src, sink, "h", false).QueryID
		p := c.sourceBatch(t, src, group, 3, func(i int) string { return "a" })
		pid := p.Messages[0].PartitionID
		chosen := "0190f0c8-1111-7abc-8def-000000000001"
		res := c.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid, "consumer_group": group,
			"state_ops": []any{
				map[string]any{"type": "upsert", "key": "tumb:1\u001fa\u001f1000", "value": map[string]any{"windowEnd": 1000, "count": 3}},
				map[string]any{"type": "upsert", "key": "__wm__", "value": map[string]any{"eventTimeMs": 999}},
				map[string]any{"type": "delete", "key": "never-there"},
			},
			"push_items": []any{
				item(sink, map[string]any{"key": "a", "count": 3}, "partition", "a"),
				map[string]any{"queue": sink, "partition": "a", "payload": 1, "messageId": chosen, "transactionId": "out-1"},
			},
			"ack": ackOfLast(p, "status", "completed")})
		if res.QueueName == nil || *res.QueueName != src || res.StateOpsApplied != 3 {
			t.Fatalf("cycle: queueName %s, state_ops_applied %d; want %s and 3", strp(res.QueueName), res.StateOpsApplied, src)
		}
		if a := res.AckResult; a == nil || !a.Success || a.Count != 3 || !a.LeaseReleased || a.DLQ {
			t.Fatalf("ack_result %+v, want success, count 3, lease released", res.AckResult)
		}
		if len(res.PushResults) != 2 || res.PushResults[0].Status != "queued" || res.PushResults[1].MessageID != chosen ||
			res.PushResults[1].TransactionID != "out-1" || res.PushResults[0].QueueName != sink || res.PushResults[1].Index != 1 {
			t.Fatalf("push_results %+v", res.PushResults)
		}
		wantUUIDv7(t, "stamped messageId", res.PushResults[0].MessageID)
		out := c.popOK(t, partitionPath(sink, "a")+"?batch=10")
		if len(out.Messages) != 2 || out.Messages[0].ID != res.PushResults[0].MessageID || out.Messages[1].ID != chosen {
			t.Fatalf("sink delivered %+v, want the cycle's two messages in order", out.Messages)
		}
		c.popNone(t, partitionPath(src, "p")+"?consumerGroup="+url.QueryEscape(group))
		rows := c.state(t, map[string]any{"query_id": q, "partition_id": pid})
		wantRows(t, "state", rows, `__wm__={"eventTimeMs":999}`, "tumb:1\u001fa\u001f1000="+`{"count":3,"windowEnd":1000}`)
	})

	t.Run("a failed cycle writes nothing", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, sink := uniq("events"), uniq("totals")
		q := c.register(t, uniq("counts"), src, sink, "h", false).QueryID
		p := c.sourceBatch(t, src, "", 2, func(i int) string { return "a" })
		pid := p.Messages[0].PartitionID
		body := func(ack map[string]any) map[string]any {
			return map[string]any{"query_id": q, "partition_id": pid,
				"state_ops":  []any{map[string]any{"type": "upsert", "key": "k", "value": 1}},
				"push_items": []any{item(sink, 1), item(src, 2, "partition", "p")},
				"ack":        ack}
		}
		c.cycleFails(t, body(ackOfLast(p, "leaseId", "0190f0c8-0000-7000-8000-00000000dead")), "Invalid or expired lease")
		c.cycleFails(t, body(ackOfLast(p, "transactionId", "no-such-message")), "Message not found")
		other := body(ackOfLast(p))
		other["query_id"] = "0190f0c8-0000-7000-8000-00000000beef"
		c.cycleFails(t, other, "Query not found")
		other["push_items"], other["ack"] = nil, nil
		c.cycleFails(t, other, "Query not found")

		wantRows(t, "state after failed cycles", c.state(t, map[string]any{"query_id": q, "partition_id": pid}))
		c.popNone(t, queuePath(sink))
		if q := c.streamQueryGet(t, c.queryName(t, q)); q.State.Rows != 0 || q.State.Bytes != 0 || q.State.Partitions != 0 {
			t.Fatalf("state size after failed cycles: %+v", q.State)
		}
		// The ack was not applied: the same ack commits now (a replay would
		// write nothing), and the source holds only what was pushed before.
		res := c.cycleOK(t, body(ackOfLast(p)))
		if res.StateOpsApplied != 1 || len(res.PushResults) != 2 || res.AckResult == nil || res.AckResult.Count != 2 {
			t.Fatalf("the cycle after the failures: %+v, want it applied whole", res)
		}
		again := c.popOK(t, partitionPath(src, "p")+"?batch=10")
		if len(again.Messages) != 1 || string(again.Messages[0].Data) != "2" {
			t.Fatalf("source after the cycle: %d messages, want only the one it pushed", len(again.Messages))
		}
	})

	t.Run("a cycle without an ack gives way to the lease and to a closed window", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, sink := uniq("events"), uniq("totals")
		q := c.register(t, uniq("counts"), src, sink, "h", false).QueryID
		group := uniq("streams.counts")
		p := c.sourceBatch(t, src, group, 2, func(i int) string { return "a" })
		pid := p.Messages[0].PartitionID
		win := "tumb:1\u001f1000"
		flush := func(ops ...any) map[string]any {
			return map[string]any{"query_id": q, "partition_id": pid, "consumer_group": group, "state_ops": ops,
				"push_items": []any{item(sink, map[string]any{"count": 2})}}
		}
		up := map[string]any{"type": "upsert", "key": win, "value": map[string]any{"count": 2, "windowEnd": 1000}}
		del := map[string]any{"type": "delete", "key": win}
		// While the batch is leased, its holder decides the partition's
		// windows: a flush gives way, whatever it writes.
		c.cycleFails(t, flush(up), api.ReasonCycleLeased)
		c.cycleFails(t, map[string]any{"query_id": q, "partition_id": pid, "consumer_group": group,
			"state_ops": []any{up}}, api.ReasonCycleLeased)
		wantRows(t, "state after the refused flush", c.state(t, map[string]any{"query_id": q, "partition_id": pid}))
		c.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid, "consumer_group": group,
			"state_ops": []any{up}, "ack": ackOfLast(p)})
		// Another group's lease is not this lane's.
		c.sourceBatch(t, src, "", 1, func(i int) string { return "b" })
		// Unleased, the flush closes the window once; the same flush again
		// finds it gone and fails, pushing nothing.
		if res := c.cycleOK(t, flush(del)); res.StateOpsApplied != 1 || len(res.PushResults) != 1 || res.AckResult != nil {
			t.Fatalf("flush: %+v, want the window deleted and emitted", res)
		}
		out := c.cycle(t, flush(del))
		if out.Success || out.Error == nil || !strings.HasPrefix(*out.Error, api.ReasonCycleStateGone) {
			t.Fatalf("the flush again: success %v error %s, want %q", out.Success, strp(out.Error), api.ReasonCycleStateGone)
		}
		if got := c.popOK(t, queuePath(sink)+"?batch=10"); len(got.Messages) != 1 {
			t.Fatalf("sink holds %d emissions, want 1", len(got.Messages))
		}
		// A delete, then an upsert of the same key, must find it too; a cycle
		// that pushes nothing may delete a missing key.
		out = c.cycle(t, flush(del, up))
		if out.Success {
			t.Fatalf("a flush deleting a gone key before writing it committed")
		}
		c.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid, "consumer_group": group,
			"state_ops": []any{del}})
	})

	t.Run("a replayed cycle writes nothing again", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, sink := uniq("events"), uniq("totals")
		q := c.register(t, uniq("counts"), src, sink, "h", false).QueryID
		p := c.sourceBatch(t, src, "", 2, func(i int) string { return "a" })
		body := map[string]any{"query_id": q, "partition_id": p.Messages[0].PartitionID,
			"state_ops":  []any{map[string]any{"type": "upsert", "key": "count", "value": 2}},
			"push_items": []any{item(sink, 2)}, "ack": ackOfLast(p)}
		c.cycleOK(t, body)
		res := c.cycleOK(t, body)
		if res.StateOpsApplied != 0 || len(res.PushResults) != 0 || res.AckResult == nil || res.AckResult.Count != 0 ||
			res.AckResult.LeaseReleased {
			t.Fatalf("replay: %+v, want success with nothing written", res)
		}
		out := c.popOK(t, queuePath(sink)+"?batch=10")
		if len(out.Messages) != 1 {
			t.Fatalf("sink holds %d messages after a replay, want 1", len(out.Messages))
		}
		body["ack"] = map[string]any{"transactionId": p.Messages[0].TransactionID}
		c.cycleFails(t, body, "already committed")
	})

	t.Run("failed and dlq acks dead-letter", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src := uniq("events")
		q := c.register(t, uniq("counts"), src, "", "h", false).QueryID
		for _, status := range []string{"failed", "dlq"} {
			p := c.sourceBatch(t, src, "", 1, func(i int) string { return status })
			res := c.cycleOK(t, map[string]any{"query_id": q, "partition_id": p.Messages[0].PartitionID,
				"ack": ackOfLast(p, "status", status, "error", "cannot parse "+status)})
			if a := res.AckResult; a == nil || !a.DLQ || !a.LeaseReleased || a.Count != 0 {
				t.Fatalf("%s ack: %+v, want a dead letter", status, res.AckResult)
			}
		}
		r := c.do(t, "GET", "/api/v1/dlq?queue="+url.QueryEscape(src), nil)
		var dlq struct {
			Messages []struct {
				ErrorMessage string `json:"errorMessage"`
			} `json:"messages"`
		}
		wantJSON(t, r, http.StatusOK, &dlq)
		if len(dlq.Messages) != 2 {
			t.Fatalf("%s: %s, want 2 dead letters", r.what, r.Body)
		}
		c.popNone(t, queuePath(src))
	})

	t.Run("partial acks keep or release the lease", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, group := uniq("events"), uniq("streams.gate")
		q := c.register(t, uniq("gate"), src, "", "h", false).QueryID
		p := c.sourceBatch(t, src, group, 4, func(i int) string { return "a" })
		ack := func(i int) map[string]any {
			return map[string]any{"transactionId": p.Messages[i].TransactionID, "leaseId": p.lease(), "count": 1}
		}
		base := map[string]any{"query_id": q, "partition_id": p.Messages[0].PartitionID, "consumer_group": group}
		with := func(kv ...any) map[string]any {
			m := map[string]any{}
			for k, v := range base {
				m[k] = v
			}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		res := c.cycleOK(t, with("ack", ack(1), "release_lease", false))
		if res.AckResult.LeaseReleased {
			t.Fatal("a partial ack with release_lease false released the lease")
		}
		pop := partitionPath(src, "p") + "?consumerGroup=" + url.QueryEscape(group) + "&batch=10"
		c.popNone(t, pop)
		res = c.cycleOK(t, with("ack", ack(2)))
		if !res.AckResult.LeaseReleased {
			t.Fatal("a partial ack with release_lease defaulting to true kept the lease")
		}
		rest := c.popOK(t, pop)
		if len(rest.Messages) != 1 || rest.Messages[0].ID != p.Messages[3].ID {
			t.Fatalf("pop after the release: %d messages, want the last one", len(rest.Messages))
		}
	})

	t.Run("state filters", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := c.register(t, uniq("counts"), uniq("events"), "", "h", false).QueryID
		pid := "0190f0c8-2222-7000-8000-000000000001"
		ops := []any{}
		for i, k := range []string{"w:c", "w:a", "w:b", "x", "w%_"} {
			ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": map[string]any{"windowEnd": 1000 * (i + 1)}})
		}
		ops = append(ops, map[string]any{"type": "upsert", "key": "s", "value": map[string]any{"windowEnd": "3000"}},
			map[string]any{"type": "upsert", "key": "n", "value": nil})
		c.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid, "state_ops": ops})
		get := func(kv ...any) []string {
			body := map[string]any{"query_id": q, "partition_id": pid}
			for i := 0; i+1 < len(kv); i += 2 {
				body[kv[i].(string)] = kv[i+1]
			}
			return c.state(t, body)
		}
		wantRows(t, "all", get(), "n=null", `s={"windowEnd":"3000"}`, `w%_={"windowEnd":5000}`, `w:a={"windowEnd":2000}`,
			`w:b={"windowEnd":3000}`, `w:c={"windowEnd":1000}`, `x={"windowEnd":4000}`)
		wantRows(t, "keys", get("keys", []string{"x", "n", "zz"}), "n=null", `x={"windowEnd":4000}`)
		wantRows(t, "prefix", get("key_prefix", "w:"), `w:a={"windowEnd":2000}`, `w:b={"windowEnd":3000}`, `w:c={"windowEnd":1000}`)
		wantRows(t, "prefix with wildcards", get("key_prefix", "w%"), `w%_={"windowEnd":5000}`)
		wantRows(t, "ripe", get("ripe_at_or_before", 3000), `w:a={"windowEnd":2000}`, `w:b={"windowEnd":3000}`, `w:c={"windowEnd":1000}`)
		wantRows(t, "all three", get("keys", []string{"w:a", "w:c", "x"}, "key_prefix", "w", "ripe_at_or_before", 1500),
			`w:c={"windowEnd":1000}`)
		wantRows(t, "another partition", c.state(t, map[string]any{"query_id": q, "partition_id": "0190f0c8-2222-7000-8000-000000000002"}))
		wantRows(t, "an unknown query", c.state(t, map[string]any{"query_id": "0190f0c8-2222-7000-8000-000000000003", "partition_id": pid}))
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"partition_id": pid}, "query_id is required"},
			{map[string]any{"query_id": q}, "partition_id is required"},
			{map[string]any{"query_id": "q1", "partition_id": pid}, "bad body: query_id is not a UUID"},
			{map[string]any{"query_id": q, "partition_id": pid, "keys": "x"}, "bad body: "},
			{map[string]any{"query_id": q, "partition_id": pid, "ripe_at_or_before": "soon"}, "bad body: "},
			{map[string]any{"query_id": q, "partition_id": pid, "keys": []string{"a\x00"}}, "bad body: keys[0] contains a NUL character"},
			{[]any{}, "request body must be a JSON object"},
		} {
			wantPlainError(t, c.do(t, "POST", "/streams/v1/state/get", tc.body), http.StatusBadRequest, tc.msg)
		}
	})

	t.Run("cycle bad input", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := c.register(t, uniq("counts"), uniq("events"), "", "h", false).QueryID
		pid := "0190f0c8-3333-7000-8000-000000000001"
		with := func(kv ...any) map[string]any {
			m := map[string]any{"query_id": q, "partition_id": pid}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"partition_id": pid}, "query_id is required"},
			{map[string]any{"query_id": q}, "partition_id is required"},
			{with("partition_id", "Default"), "bad body: partition_id is not a UUID"},
			{with("state_ops", "upsert"), "bad body: "},
			{[]any{}, "request body must be a JSON object"},
		} {
			wantPlainError(t, c.do(t, "POST", "/streams/v1/cycle", tc.body), http.StatusBadRequest, tc.msg)
		}
	})

	t.Run("cycle contents refused: 200 in the cycle's envelope, nothing applied", func(t *testing.T) {
		// Queen's stream SDKs read success and error of the envelope: a
		// named cycle whose push item, state op, ack or consumer group is
		// wrong is answered there, never as a 400.
		t.Parallel()
		c := s.server(t)
		q := c.register(t, uniq("counts"), uniq("events"), "", "h", false).QueryID
		pid := "0190f0c8-3333-7000-8000-000000000002"
		out := uniq("out")
		with := func(kv ...any) map[string]any {
			m := map[string]any{"query_id": q, "partition_id": pid,
				"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": 1}}}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		for _, tc := range []struct {
			body any
			msg  string
		}{
			{with("state_ops", []any{map[string]any{"type": "merge", "key": "k"}}), `bad body: state_ops[0].type: expected upsert or delete, got "merge"`},
			{with("state_ops", []any{map[string]any{"type": "upsert"}}), "bad body: state_ops[0].key is missing"},
			{with("push_items", []any{map[string]any{"queue": out, "payload": 1}, map[string]any{"payload": 1}}), "bad body: push_items[1].queue is missing"},
			{with("push_items", []any{map[string]any{"payload": 1}}), "bad body: push_items[0].queue is missing"},
			{with("push_items", []any{map[string]any{"queue": "q"}}), "bad body: push_items[0].payload is missing"},
			{with("push_items", []any{map[string]any{"queue": "q", "payload": 1, "messageId": "m1"}}), "bad body: push_items[0].messageId is not a UUID"},
			{with("ack", map[string]any{"status": "completed"}), "bad body: ack.transactionId is missing"},
			{with("ack", map[string]any{"transactionId": "t", "status": "retry"}), `bad body: ack.status: expected completed, success, failed or dlq, got "retry"`},
			{with("ack", map[string]any{"transactionId": "t", "count": -1}), "bad body: ack.count: -1 is out of range"},
			{with("consumer_group", "a\tb"), "bad body: consumer_group contains the control character U+0009"},
		} {
			r := c.do(t, "POST", "/streams/v1/cycle", tc.body)
			var raw map[string]any
			wantJSON(t, r, http.StatusOK, &raw)
			if raw["success"] != false || raw["query_id"] != q || raw["partition_id"] != pid || raw["state_ops_applied"] != 0.0 {
				t.Errorf("%s: %s, want success false for the named cycle, nothing applied", tc.msg, r.Body)
			}
			if e, _ := raw["error"].(string); !strings.HasPrefix(e, tc.msg) {
				t.Errorf("error %q, want %q", e, tc.msg)
			}
			if pr, ok := raw["push_results"].([]any); !ok || len(pr) != 0 {
				t.Errorf("%s: push_results %v, want []", tc.msg, raw["push_results"])
			}
		}
		if rows := c.state(t, map[string]any{"query_id": q, "partition_id": pid}); len(rows) != 0 {
			t.Fatalf("state after refused cycles: %q, want none", rows)
		}
		c.popNone(t, queuePath(out)+"?wait=false")
	})

	t.Run("concurrent cycles on one partition serialise", func(t *testing.T) {
		t.Parallel()
		const workers, rounds, keys = 8, 6, 30
		c := s.server(t)
		name := uniq("counts")
		q := c.register(t, name, uniq("events"), "", "h", false).QueryID
		pid := "0190f0c8-4444-7000-8000-000000000001"
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					ops := make([]any, 0, keys)
					for i := range keys {
						k := fmt.Sprintf("k%02d", (i+5*w)%keys)
						if (w+r)%2 == 0 {
							ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": map[string]any{"w": w, "r": r}})
						} else {
							ops = append(ops, map[string]any{"type": "delete", "key": k})
						}
					}
					if res := c.cycle(t, map[string]any{"query_id": q, "partition_id": pid, "state_ops": ops}); !res.Success {
						t.Errorf("worker %d round %d: %s", w, r, strp(res.Error))
					}
				}
			})
		}
		wg.Wait()
		rows := c.state(t, map[string]any{"query_id": q, "partition_id": pid})
		var bytes int64
		for _, kv := range rows {
			bytes += int64(len(kv) - 1)
			if kv[len("k00="):] != rows[0][len("k00="):] {
				t.Fatalf("rows %q hold several cycles' values: the cycles interleaved", rows)
			}
		}
		if len(rows) != 0 && len(rows) != keys {
			t.Fatalf("%d rows, want none or %d", len(rows), keys)
		}
		if st := c.streamQueryGet(t, name).State; st.Rows != int64(len(rows)) || st.Bytes != bytes {
			t.Fatalf("state size %+v, the state holds %d rows of %d bytes", st, len(rows), bytes)
		}
	})

	t.Run("control plane", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src := uniq("events")
		names := []string{uniq("b-query"), uniq("a-query")}
		var ids []string
		for _, n := range names {
			ids = append(ids, c.register(t, n, src, "sink", "h", false).QueryID)
		}
		pid := "0190f0c8-5555-7000-8000-000000000001"
		c.cycleOK(t, map[string]any{"query_id": ids[0], "partition_id": pid, "state_ops": []any{
			map[string]any{"type": "upsert", "key": "ab", "value": "xyz"}, map[string]any{"type": "upsert", "key": "c", "value": 1}}})
		c.cycleOK(t, map[string]any{"query_id": ids[0], "partition_id": "0190f0c8-5555-7000-8000-000000000002",
			"state_ops": []any{map[string]any{"type": "upsert", "key": "d"}}})
		q := c.streamQueryGet(t, names[0])
		if q.QueryID != ids[0] || q.SourceQueue != src || q.SinkQueue == nil || *q.SinkQueue != "sink" || q.ConfigHash != "h" ||
			q.State.Partitions != 2 || q.State.Rows != 3 || q.State.Bytes != int64(len(`ab"xyz"c1d{}`)) {
			t.Fatalf("query %+v", q)
		}
		r := c.do(t, "GET", "/api/v1/streams/queries?limit=1", nil)
		var list struct {
			Queries    []streamQuery                      `json:"queries"`
			Pagination struct{ Limit, Offset, Total int } `json:"pagination"`
		}
		wantJSON(t, r, http.StatusOK, &list)
		if len(list.Queries) != 1 || list.Queries[0].Name != names[1] || list.Pagination.Total != 2 || list.Pagination.Limit != 1 {
			t.Fatalf("%s: %s, want the first of 2 by name", r.what, r.Body)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/streams/queries/nope", nil), http.StatusNotFound, "Query not found")
		wantPlainError(t, c.do(t, "GET", "/api/v1/streams/queries?limit=x", nil), http.StatusBadRequest, "bad query: ")
		for _, existed := range []bool{true, false} {
			r := c.do(t, "DELETE", "/api/v1/streams/queries/"+names[0], nil)
			var del map[string]any
			wantJSON(t, r, http.StatusOK, &del)
			wantKeys(t, r.what, del, "deleted", "name")
			if del["deleted"] != existed || del["name"] != names[0] {
				t.Fatalf("%s: %s, want deleted %v", r.what, r.Body, existed)
			}
		}
		wantRows(t, "state of a deleted query", c.state(t, map[string]any{"query_id": ids[0], "partition_id": pid}))
		c.cycleFails(t, map[string]any{"query_id": ids[0], "partition_id": pid}, "Query not found")
		if again := c.register(t, names[0], src, "", "other", false); !again.Fresh || again.QueryID == ids[0] {
			t.Fatalf("registering a deleted query's name: %+v, want a fresh query", again)
		}
	})

	t.Run("queue options apply to a cycle's pushes", func(t *testing.T) {
		t.Parallel()
		st := s.newStore(t)
		sealed, full := uniq("sealed-sink"), uniq("full-sink")
		if _, err := st.QueueConfigure(context.Background(), &store.QueueConfigureParams{Name: sealed, Now: time.Now(),
			Options: func() store.QueueOptions { o := store.DefaultQueueOptions(); o.EncryptionEnabled = true; return o }()}); err != nil {
			t.Fatal(err)
		}
		c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-apitest", Encryption: keyring(t, testKeyNew)}))
		t.Cleanup(c.hc.CloseIdleConnections)
		q := c.register(t, uniq("counts"), uniq("events"), sealed, "h", false).QueryID
		pid := "0190f0c8-7777-7000-8000-000000000001"
		c.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid,
			"push_items": []any{item(sealed, map[string]any{"card": "4111-cycle-plaintext-marker"})}})
		stored := storedPayloads(t, st, sealed)
		if len(stored) != 1 || bytes.Contains(stored[0], []byte("plaintext-marker")) || !crypt.Sealed(stored[0]) {
			t.Fatalf("a cycle's push to an encrypted queue stored %s, want the sealed shape", stored)
		}
		c.configure(t, full, map[string]any{"maxSize": 1})
		c.push(t, item(full, 1))
		c.cycleFails(t, map[string]any{"query_id": q, "partition_id": pid,
			"state_ops":  []any{map[string]any{"type": "upsert", "key": "k", "value": 1}},
			"push_items": []any{item(full, 2, "transactionId", "over")}},
			"push of transactionId over to queue "+full+" partition Default failed: queue full (maxSize 1)")
		wantRows(t, "state after a push refused by maxSize", c.state(t, map[string]any{"query_id": q, "partition_id": pid}))

		// A broker without a key never stores a sealing queue's payload in
		// plaintext: the cycle fails whole.
		st2 := s.newStore(t)
		if _, err := st2.QueueConfigure(context.Background(), &store.QueueConfigureParams{Name: sealed, Now: time.Now(),
			Options: func() store.QueueOptions { o := store.DefaultQueueOptions(); o.EncryptionEnabled = true; return o }()}); err != nil {
			t.Fatal(err)
		}
		keyless := newClient(StartServer(t, st2, server.Config{Version: "0.0.0-apitest"}))
		t.Cleanup(keyless.hc.CloseIdleConnections)
		q2 := keyless.register(t, uniq("counts"), uniq("events"), sealed, "h", false).QueryID
		keyless.cycleFails(t, map[string]any{"query_id": q2, "partition_id": pid,
			"state_ops":  []any{map[string]any{"type": "upsert", "key": "k", "value": 1}},
			"push_items": []any{item(sealed, map[string]any{"card": "4111-cycle-plaintext-marker"}, "transactionId", "out-1")}},
			"push of transactionId out-1: queue "+sealed+" encrypts its payloads (encryptionEnabled) and this broker has no "+
				"QUEEN_ENCRYPTION_KEY: not stored")
		wantRows(t, "state after a refused seal", keyless.state(t, map[string]any{"query_id": q2, "partition_id": pid}))
		if stored := storedPayloads(t, st2, sealed); len(stored) != 0 {
			t.Fatalf("a keyless broker stored %s", stored)
		}
	})

	t.Run("tenants and access", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true,
			Auth: auth.Config{Tokens: apiTokens(t, "")}})
		rw := c.with("Authorization", bearer(apiTokenReadWrite), "X-Queen-Tenant", tenantA)
		ro := c.with("Authorization", bearer(apiTokenReadOnly), "X-Queen-Tenant", tenantA)
		wo := c.with("Authorization", bearer(apiTokenWriteOnly), "X-Queen-Tenant", tenantA)
		otherTenant := c.with("Authorization", bearer(apiTokenReadWrite), "X-Queen-Tenant", tenantB)
		name := uniq("counts")
		q := rw.register(t, name, "events", "", "h", false).QueryID
		pid := "0190f0c8-6666-7000-8000-000000000001"
		rw.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid, "state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": 1}}})
		wantRows(t, "read-only reads", ro.state(t, map[string]any{"query_id": q, "partition_id": pid}), "k=1")
		wantRows(t, "another tenant reads nothing", otherTenant.state(t, map[string]any{"query_id": q, "partition_id": pid}))
		otherTenant.cycleFails(t, map[string]any{"query_id": q, "partition_id": pid}, "Query not found")
		wantPlainError(t, otherTenant.do(t, "GET", "/api/v1/streams/queries/"+name, nil), http.StatusNotFound, "Query not found")
		if b := otherTenant.register(t, name, "events", "", "other-hash", false); !b.Fresh || b.QueryID == q {
			t.Fatalf("the same name in another tenant: %+v, want its own query", b)
		}
		cycle := map[string]any{"query_id": q, "partition_id": pid}
		for _, tc := range []struct {
			c            *client
			method, path string
			body         any
		}{
			{ro, "POST", "/streams/v1/cycle", cycle},
			{ro, "POST", "/streams/v1/queries", map[string]any{"name": name, "source_queue": "events", "config_hash": "h"}},
			{wo, "POST", "/streams/v1/state/get", cycle},
			{wo, "POST", "/streams/v1/cycle", cycle},
			{rw, "DELETE", "/api/v1/streams/queries/" + name, nil},
		} {
			wantPlainError(t, tc.c.do(t, tc.method, tc.path, tc.body), http.StatusForbidden, "Insufficient permissions")
		}
		wantPlainError(t, c.with("X-Queen-Tenant", tenantA).do(t, "POST", "/streams/v1/state/get", cycle), http.StatusUnauthorized, "")
	})
}

// queryName returns the name of the query with id q, from the listing.
func (c *client) queryName(t testing.TB, q string) string {
	t.Helper()
	r := c.do(t, "GET", "/api/v1/streams/queries?limit=1000", nil)
	var list struct {
		Queries []streamQuery `json:"queries"`
	}
	wantJSON(t, r, http.StatusOK, &list)
	for _, s := range list.Queries {
		if s.QueryID == q {
			return s.Name
		}
	}
	t.Fatalf("query %s is not listed", q)
	return ""
}
