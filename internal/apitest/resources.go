package apitest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"
)

// Shapes of the control plane's answers: exact key sets, as Queen's
// clients read them.
var (
	countsKeys     = []string{"total", "pending", "processing", "completed", "failed", "deadLetter"}
	paginationKeys = []string{"limit", "offset", "total"}
)

// getJSON sends a GET, requires 200 and decodes the body into v (and
// returns it as generic JSON for key checks).
func (c *client) getJSON(t testing.TB, path string, v any) any {
	t.Helper()
	r := c.do(t, "GET", path, nil)
	var raw any
	wantJSON(t, r, http.StatusOK, &raw)
	if v != nil {
		_ = json.Unmarshal(r.Body, v)
	}
	return raw
}

// obj returns m[key] as an object, failing otherwise.
func obj(t testing.TB, what string, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %v is not an object", what, v)
	}
	return m
}

// arr returns v as an array, failing otherwise.
func arr(t testing.TB, what string, v any) []any {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %v is not an array", what, v)
	}
	return a
}

// num returns v as an integer, failing otherwise.
func num(t testing.TB, what string, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) {
		t.Fatalf("%s: %v is not an integer", what, v)
	}
	return int64(f)
}

// wantCounts checks a figures object: exact keys and values (total,
// pending, processing, completed, deadLetter; failed is always 0).
func wantCounts(t testing.TB, what string, v any, total, pending, processing, completed, dead int64) {
	t.Helper()
	m := obj(t, what, v)
	wantKeys(t, what, m, countsKeys...)
	got := []int64{num(t, what, m["total"]), num(t, what, m["pending"]), num(t, what, m["processing"]),
		num(t, what, m["completed"]), num(t, what, m["failed"]), num(t, what, m["deadLetter"])}
	if want := []int64{total, pending, processing, completed, 0, dead}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: total/pending/processing/completed/failed/deadLetter %v, want %v", what, got, want)
	}
}

// clearPath is the clear route of a queue.
func clearPath(queue string) string { return "/api/v1/queues/" + url.PathEscape(queue) + "/clear" }

// testResources covers GET /api/v1/resources/* and the clear route
// (management.md §1.2, §3).
func (s *suite) testResources(t *testing.T) {
	t.Run("queue list: Queen's keys, newest first, pages, filters", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		first, second := uniq("qa"), uniq("qb")
		c.push(t, item(first, 1, "partition", "p1", "namespace", "shop", "task", "bill"),
			item(first, 2, "partition", "p2"))
		nextMillisecond(time.Now())
		c.configure(t, second, nil) // no namespace (a push would derive one from the name)
		c.push(t, item(second, 3))
		raw := obj(t, "list", c.getJSON(t, "/api/v1/resources/queues", nil))
		wantKeys(t, "queue list", raw, "queues", "pagination")
		wantKeys(t, "pagination", obj(t, "pagination", raw["pagination"]), paginationKeys...)
		qs := arr(t, "queues", raw["queues"])
		if len(qs) != 2 {
			t.Fatalf("queues: %v, want 2", qs)
		}
		newest, oldest := obj(t, "queue", qs[0]), obj(t, "queue", qs[1])
		for _, q := range []map[string]any{newest, oldest} {
			wantKeys(t, "queue", q, "id", "name", "namespace", "task", "createdAt", "partitions", "messages",
				"oldestUnreadAt", "oldestUnreadAgeSeconds")
			wantKeys(t, "queue messages", obj(t, "messages", q["messages"]), "total", "pending", "processing",
				"deadLetter")
			wantUUIDv7(t, "queue id", q["id"].(string))
			wantTimestamp(t, "createdAt", q["createdAt"].(string))
		}
		if newest["name"] != second || oldest["name"] != first {
			t.Fatalf("order %v, %v: want %s (newest) then %s", newest["name"], oldest["name"], second, first)
		}
		if newest["namespace"] != nil || newest["task"] != nil || oldest["namespace"] != "shop" || oldest["task"] != "bill" {
			t.Errorf("namespace/task: %v/%v and %v/%v, want null/null and shop/bill", newest["namespace"],
				newest["task"], oldest["namespace"], oldest["task"])
		}
		if num(t, "partitions", oldest["partitions"]) != 2 || num(t, "total", obj(t, "m", oldest["messages"])["total"]) != 2 ||
			num(t, "pending", obj(t, "m", oldest["messages"])["pending"]) != 2 {
			t.Errorf("queue %s: %v", first, oldest)
		}
		var page struct {
			Queues     []struct{ Name string }
			Pagination struct{ Limit, Offset, Total int }
		}
		c.getJSON(t, "/api/v1/resources/queues?limit=1&offset=1", &page)
		if len(page.Queues) != 1 || page.Queues[0].Name != first || page.Pagination.Limit != 1 ||
			page.Pagination.Offset != 1 || page.Pagination.Total != 2 {
			t.Errorf("page 2 of 1: %+v", page)
		}
		c.getJSON(t, "/api/v1/resources/queues?namespace=shop", &page)
		if len(page.Queues) != 1 || page.Queues[0].Name != first || page.Pagination.Total != 1 {
			t.Errorf("namespace=shop: %+v", page)
		}
		c.getJSON(t, "/api/v1/resources/queues?task=nope", &page)
		if len(page.Queues) != 0 || page.Pagination.Total != 0 {
			t.Errorf("task=nope: %+v", page)
		}
	})

	t.Run("queue list: dead letters and the oldest unread message, by the broker's clock", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, idle, empty := uniq("qdl"), uniq("qidle"), uniq("qempty")
		c.configure(t, q, map[string]any{"retryLimit": 0})
		c.configure(t, empty, nil)
		c.push(t, item(q, 1, "transactionId", "first"))
		nextMillisecond(time.Now())
		c.push(t, item(q, 2, "transactionId", "second"))
		c.push(t, item(idle, 3, "transactionId", "idle-1"))
		// Queue mode dead-letters the first: the oldest it has still to
		// read is the second. Nobody reads idle: its oldest message.
		if m := c.failToDLQ(t, q, "", 0); m.TransactionID != "first" {
			t.Fatalf("dead-lettered %s, want first", m.TransactionID)
		}
		created := map[string]string{}
		for _, name := range []string{q, idle} {
			for _, m := range c.listMessages(t, "queue="+url.QueryEscape(name)).Messages {
				created[m.TransactionID] = m.CreatedAt
			}
		}
		type listed struct {
			Name     string
			Messages struct{ Total, Pending, Processing, DeadLetter int64 }
			OldestAt *string `json:"oldestUnreadAt"`
			Age      float64 `json:"oldestUnreadAgeSeconds"`
		}
		var page struct{ Queues []listed }
		before := time.Now()
		c.getJSON(t, "/api/v1/resources/queues", &page)
		byName := map[string]listed{}
		for _, l := range page.Queues {
			byName[l.Name] = l
		}
		check := func(name string, dead int64, oldest string) {
			t.Helper()
			l, ok := byName[name]
			if !ok {
				t.Fatalf("%s is not listed: %+v", name, page.Queues)
			}
			if l.Messages.DeadLetter != dead {
				t.Errorf("%s: deadLetter %d, want %d", name, l.Messages.DeadLetter, dead)
			}
			if oldest == "" {
				if l.OldestAt != nil || l.Age != 0 {
					t.Errorf("%s: oldest unread %v, age %v; want null and 0", name, l.OldestAt, l.Age)
				}
				return
			}
			if l.OldestAt == nil || *l.OldestAt != oldest {
				t.Fatalf("%s: oldestUnreadAt %v, want %s", name, l.OldestAt, oldest)
			}
			at, _ := time.Parse(time.RFC3339Nano, oldest)
			// The age is the broker's now less the message's createdAt: at
			// least what had passed before the request, at most what had
			// passed after it.
			if lo, hi := before.Sub(at).Seconds()-0.002, time.Since(at).Seconds()+0.002; l.Age < lo || l.Age > hi {
				t.Errorf("%s: oldestUnreadAgeSeconds %v, want between %v and %v", name, l.Age, lo, hi)
			}
		}
		check(q, 1, created["second"])
		check(idle, 0, created["idle-1"])
		check(empty, 0, "")
		// Once queue mode has read the second too, nothing is unread.
		c.ackAll(t, "", c.popOK(t, queuePath(q)))
		c.getJSON(t, "/api/v1/resources/queues", &page)
		for _, l := range page.Queues {
			byName[l.Name] = l
		}
		check(q, 1, "")
	})

	t.Run("queue describe: {name, partitions[]} with figures; 404 Queue not found", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("desc")
		c.pushN(t, q, "b", 3)
		c.pushN(t, q, "a", 1)
		g := uniq("g")
		p := c.popOK(t, partitionPath(q, "b")+"?batch=2&consumerGroup="+g)
		a := c.ack(t, g, ackOf(p.Messages[0], "dlq")) // one dead letter, the lease released
		if !a.DLQ {
			t.Fatalf("dlq ack: %v", a)
		}
		raw := obj(t, "queue", c.getJSON(t, "/api/v1/resources/queues/"+url.PathEscape(q), nil))
		wantKeys(t, "queue", raw, "id", "name", "namespace", "task", "createdAt", "partitions", "totals", "pagination")
		if raw["name"] != q {
			t.Fatalf("name %v, want %s", raw["name"], q)
		}
		parts := arr(t, "partitions", raw["partitions"])
		if len(parts) != 2 {
			t.Fatalf("partitions %v", parts)
		}
		for i, name := range []string{"a", "b"} {
			pm := obj(t, "partition", parts[i])
			wantKeys(t, "partition", pm, "id", "name", "createdAt", "stats", "oldestMessage", "newestMessage", "lastActivity")
			if pm["name"] != name {
				t.Fatalf("partition %d: %v, want %s (by name)", i, pm["name"], name)
			}
			wantUUIDv7(t, "partition id", pm["id"].(string))
			wantTimestamp(t, "oldestMessage", pm["oldestMessage"].(string))
			wantTimestamp(t, "newestMessage", pm["newestMessage"].(string))
		}
		// a: nobody reads it yet. b: g committed the dead-lettered first
		// message; two are left.
		wantCounts(t, "partition a", obj(t, "a", parts[0])["stats"], 1, 1, 0, 0, 0)
		wantCounts(t, "partition b", obj(t, "b", parts[1])["stats"], 3, 2, 0, 1, 1)
		wantCounts(t, "totals", raw["totals"], 4, 3, 0, 1, 1)

		var page struct {
			Partitions []struct{ Name string }
			Pagination struct{ Limit, Offset, Total int }
		}
		c.getJSON(t, "/api/v1/resources/queues/"+url.PathEscape(q)+"?limit=1&offset=1", &page)
		if len(page.Partitions) != 1 || page.Partitions[0].Name != "b" || page.Pagination.Total != 2 {
			t.Errorf("partitions page 2: %+v", page)
		}
		r := c.do(t, "GET", "/api/v1/resources/queues/"+uniq("missing"), nil)
		if msg := wantPlainError(t, r, http.StatusNotFound, "Queue not found"); msg != "Queue not found" {
			t.Errorf("unknown queue: %q, want exactly Queue not found", msg)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/resources/queues/a%01b", nil), http.StatusBadRequest, "bad path: queue")
		// A page larger than the broker serves is clamped, as Queen does,
		// not refused: Queen's CLI asks for 10,000 and more.
		c.getJSON(t, "/api/v1/resources/queues/"+url.PathEscape(q)+"?limit=100000", &page)
		if len(page.Partitions) != 2 || page.Pagination.Limit != 10000 {
			t.Errorf("limit=100000: %+v, want both partitions and pagination.limit 10000", page)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/resources/queues/"+url.PathEscape(q)+"?limit=0", nil),
			http.StatusBadRequest, "bad query: limit: 0 is out of range")
	})

	t.Run("partitions: of a queue or all, paged; 404 Queue not found", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q1, q2 := uniq("pa"), uniq("pb")
		c.pushN(t, q1, "y", 2)
		c.pushN(t, q1, "x", 1)
		c.pushN(t, q2, "z", 1)
		raw := obj(t, "list", c.getJSON(t, "/api/v1/resources/partitions?queue="+url.QueryEscape(q1), nil))
		wantKeys(t, "partition list", raw, "partitions", "pagination")
		ps := arr(t, "partitions", raw["partitions"])
		if len(ps) != 2 {
			t.Fatalf("partitions of %s: %v", q1, ps)
		}
		x := obj(t, "x", ps[0])
		wantKeys(t, "partition", x, "id", "name", "queue", "createdAt", "lastActivity", "messages")
		if x["name"] != "x" || x["queue"] != q1 || obj(t, "y", ps[1])["name"] != "y" {
			t.Fatalf("partitions %v, want x then y of %s", ps, q1)
		}
		wantCounts(t, "y", obj(t, "y", ps[1])["messages"], 2, 2, 0, 0, 0)
		var page struct {
			Partitions []struct{ Name, Queue string }
			Pagination struct{ Limit, Offset, Total int }
		}
		c.getJSON(t, "/api/v1/resources/partitions?limit=2&offset=1", &page)
		if page.Pagination.Total != 3 || len(page.Partitions) != 2 || page.Partitions[0].Name != "y" ||
			page.Partitions[1].Queue != q2 {
			t.Errorf("all partitions, page from 1: %+v", page)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/resources/partitions?queue="+uniq("missing"), nil),
			http.StatusNotFound, "Queue not found")
		wantPlainError(t, c.do(t, "GET", "/api/v1/resources/partitions?limit=abc", nil), http.StatusBadRequest,
			"bad query: limit")
	})

	t.Run("namespaces, tasks and overview", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q1, q2, q3 := uniq("n1"), uniq("n2"), uniq("n3")
		c.push(t, item(q1, 1, "namespace", "billing", "task", "invoice"), item(q2, 2, "namespace", "billing"),
			item(q3, 3, "task", "invoice"), item(q3, 4, "partition", "p2"))
		raw := obj(t, "namespaces", c.getJSON(t, "/api/v1/resources/namespaces", nil))
		wantKeys(t, "namespaces", raw, "namespaces", "pagination")
		ns := arr(t, "namespaces", raw["namespaces"])
		if len(ns) != 1 {
			t.Fatalf("namespaces %v, want billing only", ns)
		}
		n := obj(t, "namespace", ns[0])
		wantKeys(t, "namespace", n, "namespace", "queues", "partitions", "messages")
		wantKeys(t, "namespace messages", obj(t, "m", n["messages"]), "total", "pending")
		if n["namespace"] != "billing" || num(t, "queues", n["queues"]) != 2 || num(t, "partitions", n["partitions"]) != 2 ||
			num(t, "total", obj(t, "m", n["messages"])["total"]) != 2 {
			t.Errorf("namespace billing: %v", n)
		}
		raw = obj(t, "tasks", c.getJSON(t, "/api/v1/resources/tasks", nil))
		wantKeys(t, "tasks", raw, "tasks", "pagination")
		ts := arr(t, "tasks", raw["tasks"])
		if len(ts) != 1 || obj(t, "task", ts[0])["task"] != "invoice" || num(t, "q", obj(t, "task", ts[0])["queues"]) != 2 {
			t.Errorf("tasks %v, want invoice with 2 queues", ts)
		}
		wantKeys(t, "task", obj(t, "task", ts[0]), "task", "queues", "partitions", "messages")

		o := obj(t, "overview", c.getJSON(t, "/api/v1/resources/overview", nil))
		wantKeys(t, "overview", o, "queues", "partitions", "namespaces", "tasks", "messages", "lag", "throughput",
			"timestamp", "statsAge")
		wantCounts(t, "overview messages", o["messages"], 4, 4, 0, 0, 0)
		if num(t, "queues", o["queues"]) != 3 || num(t, "partitions", o["partitions"]) != 4 ||
			num(t, "namespaces", o["namespaces"]) != 1 || num(t, "tasks", o["tasks"]) != 1 {
			t.Errorf("overview counts %v", o)
		}
		lag := obj(t, "lag", o["lag"])
		wantKeys(t, "lag", lag, "time", "offset")
		for _, k := range []string{"time", "offset"} {
			wantKeys(t, "lag."+k, obj(t, k, lag[k]), "avg", "median", "min", "max")
		}
		wantKeys(t, "throughput", obj(t, "throughput", o["throughput"]), "ingestedPerSecond", "processedPerSecond")
		wantTimestamp(t, "timestamp", o["timestamp"].(string))
	})

	t.Run("clear: unreachable at once, new messages flow, one partition or all", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("clear")
		c.pushN(t, q, "p1", 3)
		c.pushN(t, q, "p2", 2)
		held := c.popOK(t, partitionPath(q, "p1")+"?batch=10")

		r := c.do(t, "DELETE", clearPath(q)+"?partition=p1", nil)
		var m map[string]any
		wantJSON(t, r, http.StatusOK, &m)
		wantKeys(t, "clear", m, "cleared", "queue", "partition", "messagesDeleted")
		if m["cleared"] != true || m["queue"] != q || m["partition"] != "p1" || num(t, "deleted", m["messagesDeleted"]) != 3 {
			t.Fatalf("clear of p1: %v", m)
		}
		c.popNone(t, partitionPath(q, "p1"))
		if a := c.ack(t, "", ackOf(held.Messages[0], "completed")); a.Success {
			t.Errorf("ack under a lease the clear dropped: %v", a)
		}
		p := c.popOK(t, partitionPath(q, "p2")+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("p2 after clearing p1: %v", got)
		}
		c.ackAll(t, "", p)
		c.push(t, item(q, map[string]any{"n": 7}, "partition", "p1"))
		p = c.popOK(t, partitionPath(q, "p1"))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{7}) {
			t.Fatalf("p1 after its clear and a push: %v, want [7]", got)
		}

		c.pushN(t, q, "p2", 2)
		r = c.do(t, "DELETE", clearPath(q), nil)
		m = nil
		wantJSON(t, r, http.StatusOK, &m)
		if m["partition"] != nil || num(t, "deleted", m["messagesDeleted"]) != 5 {
			t.Errorf("clear of the queue: %v, want partition null and 5 messages (p1's 1, p2's 4)", m)
		}
		c.popNone(t, queuePath(q)+"?partitions=10")
		var d struct{ Totals map[string]int64 }
		c.getJSON(t, "/api/v1/resources/queues/"+url.PathEscape(q), &d)
		if d.Totals["total"] != 0 || d.Totals["pending"] != 0 {
			t.Errorf("totals after the clear: %v", d.Totals)
		}

		wantPlainError(t, c.do(t, "DELETE", clearPath(uniq("missing")), nil), http.StatusNotFound, "Queue not found")
		wantPlainError(t, c.do(t, "DELETE", clearPath(q)+"?partition=nope", nil), http.StatusNotFound,
			"Partition not found")
		wantPlainError(t, c.do(t, "DELETE", clearPath(q)+"?partition=a%00b", nil), http.StatusBadRequest,
			"bad query: partition")
	})
}
