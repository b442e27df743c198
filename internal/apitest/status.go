package apitest

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
)

// Status and analytics (management.md §1.5, §4): exact key sets, filters,
// pages, 404 for an unknown queue, tenant scoping. Their series come from
// the metrics sampler, which these servers run fast (a sample every 10 ms,
// rows written every 50 ms), so that a test waits for figures instead of
// a minute.

// Key sets of the status answers.
var (
	statusKeys = []string{"timeRange", "bucketMinutes", "pointCount", "throughput", "queues", "messages", "leases",
		"deadLetterQueue", "workers", "errors", "statsAge"}
	throughputKeys = []string{"timestamp", "ingested", "processed", "popMessages", "ingestedPerSecond",
		"processedPerSecond", "popPerSecond", "avgLagMs", "maxLagMs", "avgEventLoopLagMs", "maxEventLoopLagMs",
		"minFreeSlots", "dbErrors", "ackFailed", "dlqCount", "queenCpuUserPct", "queenCpuSysPct", "queenRssMb",
		"dbPoolActive", "dbPoolIdle", "dbPoolSize"}
	statusWorkerKeys = []string{"hostname", "workerId", "avgEventLoopLagMs", "maxEventLoopLagMs", "freeSlots",
		"dbConnections", "jobQueueSize", "messagesProcessed"}
	statusMessageKeys = []string{"id", "transactionId", "partitionId", "queuePath", "queue", "partition", "status",
		"createdAt"}
	timeRangeKeys = []string{"from", "to"}
)

// metricsConfig is a server configuration whose sampler runs fast.
func metricsConfig() server.Config {
	return server.Config{Version: "0.0.0-apitest", MetricsSampleEvery: 10 * time.Millisecond,
		MetricsAggregateEvery: 50 * time.Millisecond}
}

// metricsServer starts a server whose sampler runs fast.
func (s *suite) metricsServer(t *testing.T) *client {
	t.Helper()
	return s.serverWith(t, metricsConfig())
}

// sumOf sums key over the objects of list.
func sumOf(t testing.TB, list []any, key string) int64 {
	t.Helper()
	var n int64
	for _, e := range list {
		n += num(t, key, obj(t, "element", e)[key])
	}
	return n
}

// waitStatus polls path until cond holds of its JSON answer.
func (c *client) waitJSON(t testing.TB, path, what string, cond func(v any) bool) any {
	t.Helper()
	var last any
	waitFor(t, 15*time.Second, what, func() bool {
		last = c.getJSON(t, path, nil)
		return cond(last)
	})
	return last
}

func (s *suite) testStatus(t *testing.T) {
	t.Run("status: Queen's keys; throughput from the sampler; live figures", func(t *testing.T) {
		t.Parallel()
		c := s.metricsServer(t)
		q := uniq("st")
		c.pushN(t, q, "p1", 6)
		c.pushN(t, q, "p2", 4)
		p := c.popOK(t, partitionPath(q, "p1")+"?batch=3")
		c.ack(t, "", ackOf(p.Messages[0], "dlq"))                       // releases the lease: p1's 2 others are pending again
		held := c.popOK(t, partitionPath(q, "p2")+"?batch=2")           // a live lease on 2 of p2's
		c.ackAll(t, "", c.popOK(t, partitionPath(q, "p1")+"?batch=10")) // 5 acked
		raw := c.waitJSON(t, "/api/v1/status", "ten pushes and five acks in the series", func(v any) bool {
			tp := arr(t, "throughput", obj(t, "status", v)["throughput"])
			return sumOf(t, tp, "ingested") == 10 && sumOf(t, tp, "processed") >= 6
		})
		st := obj(t, "status", raw)
		wantKeys(t, "status", st, statusKeys...)
		wantKeys(t, "timeRange", obj(t, "timeRange", st["timeRange"]), timeRangeKeys...)
		if num(t, "bucketMinutes", st["bucketMinutes"]) != 1 {
			t.Errorf("bucketMinutes %v, want 1 for the default hour", st["bucketMinutes"])
		}
		tp := arr(t, "throughput", st["throughput"])
		if n := num(t, "pointCount", st["pointCount"]); n != int64(len(tp)) || n < 60 || n > 61 {
			t.Errorf("pointCount %d for %d points, want 60 or 61 (every minute of the hour)", n, len(tp))
		}
		for i := range tp {
			pt := obj(t, "throughput point", tp[i])
			wantKeys(t, "throughput point", pt, throughputKeys...)
			at := wantTimestamp(t, "timestamp", pt["timestamp"].(string))
			if i > 0 && !at.Before(wantTimestamp(t, "previous", obj(t, "prev", tp[i-1])["timestamp"].(string))) {
				t.Fatalf("throughput is not newest first at %d", i)
			}
		}
		if got := sumOf(t, tp, "popMessages"); got != 10 { // 3, then 2, then p1's 5 left
			t.Errorf("popMessages %d, want 10", got)
		}
		if got := sumOf(t, tp, "dlqCount"); got != 1 {
			t.Errorf("dlqCount %d, want 1", got)
		}
		m := obj(t, "messages", st["messages"])
		wantKeys(t, "messages", m, "total", "pending", "processing", "completed", "failed", "deadLetter", "requests",
			"batchEfficiency")
		wantKeys(t, "requests", obj(t, "requests", m["requests"]), "push", "pop", "ack")
		wantKeys(t, "batchEfficiency", obj(t, "batchEfficiency", m["batchEfficiency"]), "push", "pop", "ack")
		// Live: p1 is fully read (6, one dead letter), p2 has 2 leased and
		// 2 pending.
		if num(t, "total", m["total"]) != 10 || num(t, "processing", m["processing"]) != 2 ||
			num(t, "pending", m["pending"]) != 2 || num(t, "deadLetter", m["deadLetter"]) != 1 {
			t.Errorf("messages %v", m)
		}
		if push := obj(t, "requests", m["requests"])["push"].(float64); push != 2 {
			t.Errorf("push requests %v, want 2", push)
		}
		if eff := obj(t, "batchEfficiency", m["batchEfficiency"])["push"].(float64); eff != 5 {
			t.Errorf("push batch efficiency %v, want 5", eff)
		}
		l := obj(t, "leases", st["leases"])
		wantKeys(t, "leases", l, "active", "partitionsWithLeases", "totalBatchSize", "totalAcked")
		if num(t, "active", l["active"]) != 1 || num(t, "partitionsWithLeases", l["partitionsWithLeases"]) != 1 ||
			num(t, "totalBatchSize", l["totalBatchSize"]) != 2 {
			t.Errorf("leases %v (lease %s held)", l, held.lease())
		}
		d := obj(t, "deadLetterQueue", st["deadLetterQueue"])
		wantKeys(t, "deadLetterQueue", d, "totalMessages", "affectedPartitions", "topErrors")
		if num(t, "totalMessages", d["totalMessages"]) != 1 {
			t.Errorf("deadLetterQueue %v", d)
		}
		qs := arr(t, "queues", st["queues"])
		if len(qs) != 1 {
			t.Fatalf("queues %v", qs)
		}
		wantKeys(t, "queue", obj(t, "queue", qs[0]), "id", "name", "namespace", "task", "partitions", "totalConsumed")
		ws := arr(t, "workers", st["workers"])
		if len(ws) != 1 {
			t.Fatalf("workers %v, want this broker", ws)
		}
		w := obj(t, "worker", ws[0])
		wantKeys(t, "worker", w, statusWorkerKeys...)
		if w["hostname"] == "" || w["workerId"] == "" {
			t.Errorf("worker %v", w)
		}
		e := obj(t, "errors", st["errors"])
		wantKeys(t, "errors", e, "dbErrors", "ackFailed", "dlqMessages")
		if num(t, "dlqMessages", e["dlqMessages"]) != 1 || num(t, "statsAge", st["statsAge"]) != 0 {
			t.Errorf("errors %v", e)
		}
	})

	t.Run("status: queue, namespace and task filters; 404 and 400", func(t *testing.T) {
		t.Parallel()
		c := s.metricsServer(t)
		a, b := uniq("fa"), uniq("fb")
		c.push(t, item(a, 1, "namespace", "shop", "task", "bill"), item(a, 2, "namespace", "shop", "task", "bill"))
		c.configure(t, b, nil, "namespace", "shop", "task", "ship")
		c.pushN(t, b, "", 3)
		ingested := func(query string) int64 {
			st := obj(t, "status", c.getJSON(t, "/api/v1/status"+query, nil))
			return sumOf(t, arr(t, "throughput", st["throughput"]), "ingested")
		}
		waitFor(t, 15*time.Second, "five pushes in the series", func() bool { return ingested("") == 5 })
		for query, want := range map[string]int64{"?queue=" + url.QueryEscape(a): 2, "?namespace=shop": 5,
			"?namespace=shop&task=ship": 3, "?task=bill": 2, "?namespace=other": 0} {
			if got := ingested(query); got != want {
				t.Errorf("%s: ingested %d, want %d", query, got, want)
			}
		}
		st := obj(t, "status", c.getJSON(t, "/api/v1/status?queue="+url.QueryEscape(b), nil))
		if num(t, "total", obj(t, "m", st["messages"])["total"]) != 3 || len(arr(t, "queues", st["queues"])) != 1 {
			t.Errorf("queue %s: %v", b, st["messages"])
		}
		st = obj(t, "status", c.getJSON(t, "/api/v1/status?task=ship", nil))
		if num(t, "total", obj(t, "m", st["messages"])["total"]) != 3 {
			t.Errorf("task ship: %v", st["messages"])
		}
		if msg := wantPlainError(t, c.do(t, "GET", "/api/v1/status?queue="+uniq("nope"), nil), http.StatusNotFound,
			"Queue not found"); msg != "Queue not found" {
			t.Errorf("unknown queue: %q", msg)
		}
		// Windows: buckets by Queen's rule; bad windows are 400.
		for query, want := range map[string]int64{"?from=" + url.QueryEscape(time.Now().Add(-5*time.Hour).Format(time.RFC3339)): 5,
			"?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z": 15, "?from=2026-01-01&to=2026-01-05": 60,
			"?from=2026-01-01&to=2026-03-01": 360} {
			st := obj(t, "status", c.getJSON(t, "/api/v1/status"+query, nil))
			if got := num(t, "bucketMinutes", st["bucketMinutes"]); got != want {
				t.Errorf("%s: bucketMinutes %d, want %d", query, got, want)
			}
		}
		for _, query := range []string{"?from=yesterday", "?to=2026-13-01", "?from=2026-01-02&to=2026-01-01",
			"?from=2020-01-01&to=2026-01-01", "?queue=a%01b"} {
			wantPlainError(t, c.do(t, "GET", "/api/v1/status"+query, nil), http.StatusBadRequest, "bad ")
		}
	})

	t.Run("status/queues and status/queues/{queue}: Queen's keys, pages, 404", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("sq")
		c.configure(t, q, map[string]any{"leaseTime": 30, "retryLimit": 7, "maxSize": 100, "priority": 4,
			"deadLetterQueue": true}, "namespace", "ns", "task", "tk")
		c.pushN(t, q, "b", 3)
		c.pushN(t, q, "a", 2)
		p := c.popOK(t, partitionPath(q, "b")+"?batch=2")
		c.ackAll(t, "", p)
		list := obj(t, "list", c.getJSON(t, "/api/v1/status/queues?namespace=ns", nil))
		wantKeys(t, "status/queues", list, "queues", "pagination")
		qs := arr(t, "queues", list["queues"])
		if len(qs) != 1 || obj(t, "q", qs[0])["name"] != q {
			t.Fatalf("status/queues?namespace=ns: %v", qs)
		}
		wantKeys(t, "queue", obj(t, "queue", qs[0]), "id", "name", "namespace", "task", "createdAt", "partitions",
			"messages", "oldestUnreadAt", "oldestUnreadAgeSeconds") // the list of /resources/queues
		wantKeys(t, "pagination", obj(t, "pagination", list["pagination"]), paginationKeys...)
		if got := arr(t, "queues", obj(t, "l", c.getJSON(t, "/api/v1/status/queues?namespace=other", nil))["queues"]); len(got) != 0 {
			t.Errorf("namespace other: %v", got)
		}

		raw := obj(t, "detail", c.getJSON(t, "/api/v1/status/queues/"+url.PathEscape(q)+"?includePartitions=true", nil))
		wantKeys(t, "status/queues/{queue}", raw, "queue", "partitions", "totals", "pagination")
		head := obj(t, "queue", raw["queue"])
		wantKeys(t, "queue", head, "id", "name", "namespace", "task", "priority", "createdAt", "config")
		cfg := obj(t, "config", head["config"])
		wantKeys(t, "config", cfg, "leaseTime", "retryLimit", "retryDelay", "ttl", "maxQueueSize", "deadLetterQueue")
		if num(t, "leaseTime", cfg["leaseTime"]) != 30 || num(t, "retryLimit", cfg["retryLimit"]) != 7 ||
			num(t, "maxQueueSize", cfg["maxQueueSize"]) != 100 || cfg["deadLetterQueue"] != true ||
			num(t, "priority", head["priority"]) != 4 || head["namespace"] != "ns" {
			t.Errorf("queue head %v", head)
		}
		// Configure made the Default partition; pushes made a and b.
		parts := arr(t, "partitions", raw["partitions"])
		if len(parts) != 3 {
			t.Fatalf("partitions %v", parts)
		}
		parts = parts[1:]
		for i, name := range []string{"a", "b"} {
			pm := obj(t, "partition", parts[i])
			wantKeys(t, "partition", pm, "id", "name", "createdAt", "messages", "stats", "cursor", "lastActivity",
				"oldestMessage", "newestMessage")
			wantKeys(t, "cursor", obj(t, "cursor", pm["cursor"]), "totalConsumed", "batchesConsumed")
			if pm["name"] != name {
				t.Fatalf("partition %d: %v, want %s", i, pm["name"], name)
			}
		}
		wantCounts(t, "b's messages", obj(t, "b", parts[1])["messages"], 3, 1, 0, 2, 0)
		wantCounts(t, "b's stats", obj(t, "b", parts[1])["stats"], 3, 1, 0, 2, 0)
		if num(t, "totalConsumed", obj(t, "c", obj(t, "b", parts[1])["cursor"])["totalConsumed"]) != 2 {
			t.Errorf("b's cursor %v", obj(t, "b", parts[1])["cursor"])
		}
		tot := obj(t, "totals", raw["totals"])
		wantKeys(t, "totals", tot, append([]string{"messages"}, countsKeys...)...)
		wantCounts(t, "totals.messages", tot["messages"], 5, 3, 0, 2, 0)
		if num(t, "total", tot["total"]) != 5 {
			t.Errorf("totals %v", tot)
		}
		page := obj(t, "page", c.getJSON(t, "/api/v1/status/queues/"+url.PathEscape(q)+"?limit=1&offset=2", nil))
		if ps := arr(t, "partitions", page["partitions"]); len(ps) != 1 || obj(t, "p", ps[0])["name"] != "b" {
			t.Errorf("page 3 of 1: %v", ps)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/status/queues/"+uniq("nope"), nil), http.StatusNotFound, "Queue not found")
		wantPlainError(t, c.do(t, "GET", "/api/v1/status/queues/"+url.PathEscape(q)+"?limit=0", nil),
			http.StatusBadRequest, "bad query: limit")
	})

	t.Run("status/queues/{queue}/messages: a bare array, newest first, paged, with statuses", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("sm")
		var pushed []pushResult
		for i := range 5 { // one push each, in order: newest first is the reverse
			pushed = append(pushed, c.push(t, item(q, i, "partition", []string{"p1", "p2"}[i%2]))...)
			nextMillisecond(time.Now())
		}
		path := "/api/v1/status/queues/" + url.PathEscape(q) + "/messages"
		list := arr(t, "messages", c.getJSON(t, path, nil))
		if len(list) != 5 {
			t.Fatalf("%d messages, want 5", len(list))
		}
		for i, e := range list {
			m := obj(t, "message", e)
			wantKeys(t, "message", m, statusMessageKeys...)
			want := pushed[4-i]
			if m["id"] != want.MessageID || m["transactionId"] != want.TransactionID || m["queue"] != q ||
				m["queuePath"] != q+"/"+m["partition"].(string) || m["status"] != "pending" {
				t.Errorf("message %d: %v, want %s pending", i, m, want.MessageID)
			}
			wantUUIDv7(t, "partitionId", m["partitionId"].(string))
			wantTimestamp(t, "createdAt", m["createdAt"].(string))
		}
		page := arr(t, "page", c.getJSON(t, path+"?limit=2&offset=1", nil))
		if len(page) != 2 || obj(t, "m", page[0])["id"] != pushed[3].MessageID || obj(t, "m", page[1])["id"] != pushed[2].MessageID {
			t.Errorf("limit 2 offset 1: %v", page)
		}
		// Queue mode: p1 (0, 2, 4): 0 dead-lettered, 2 completed, 4 leased.
		p := c.popOK(t, partitionPath(q, "p1")+"?batch=1")
		c.ack(t, "", ackOf(p.Messages[0], "dlq"))
		p = c.popOK(t, partitionPath(q, "p1")+"?batch=1")
		c.ackAll(t, "", p)
		c.popOK(t, partitionPath(q, "p1")+"?batch=1")
		want := map[string]string{pushed[0].MessageID: "dead_letter", pushed[2].MessageID: "completed",
			pushed[4].MessageID: "processing", pushed[1].MessageID: "pending", pushed[3].MessageID: "pending"}
		for _, e := range arr(t, "messages", c.getJSON(t, path, nil)) {
			m := obj(t, "message", e)
			if m["status"] != want[m["id"].(string)] {
				t.Errorf("message %v: status %v, want %s", m["id"], m["status"], want[m["id"].(string)])
			}
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/status/queues/"+uniq("nope")+"/messages", nil), http.StatusNotFound,
			"Queue not found")
		wantPlainError(t, c.do(t, "GET", path+"?offset=9990&limit=20", nil), http.StatusBadRequest, "bad query: offset")
		wantPlainError(t, c.do(t, "GET", path+"?limit=0", nil), http.StatusBadRequest, "bad query: limit: 0 is out of range")
		if got := arr(t, "messages", c.getJSON(t, path+"?limit=100000", nil)); len(got) != 5 {
			t.Errorf("limit=100000 (clamped): %d messages, want all 5", len(got))
		}
	})

	t.Run("status/queues/{queue}/messages: judged by queue mode alone, whatever bus groups have read", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("smbus")
		txns := c.pushSeries(t, q, "", 3)
		path := "/api/v1/status/queues/" + url.PathEscape(q) + "/messages"
		statuses := func() map[string]string {
			t.Helper()
			out := map[string]string{}
			for _, e := range arr(t, "messages", c.getJSON(t, path, nil)) {
				m := obj(t, "message", e)
				out[m["transactionId"].(string)] = m["status"].(string)
			}
			return out
		}
		listed := func() map[string]string {
			t.Helper()
			out := map[string]string{}
			for _, m := range c.listMessages(t, "queue="+url.QueryEscape(q)).Messages {
				out[m.TransactionID] = m.Status
			}
			return out
		}
		// A bus group reads all three: every group's view (the listing)
		// calls them completed, the status view (queue mode) pending.
		c.ackAll(t, "bus", c.popOK(t, queuePath(q)+"?batch=3&consumerGroup=bus"))
		all := map[string]string{txns[0]: "completed", txns[1]: "completed", txns[2]: "completed"}
		if got := listed(); !reflect.DeepEqual(got, all) {
			t.Errorf("listing after the bus group read all: %v, want %v", got, all)
		}
		none := map[string]string{txns[0]: "pending", txns[1]: "pending", txns[2]: "pending"}
		if got := statuses(); !reflect.DeepEqual(got, none) {
			t.Errorf("status view of a queue only a bus group read: %v, want %v", got, none)
		}
		// Queue mode commits all three and a fourth the bus group has not
		// read: the status view calls all four completed, the listing the
		// fourth pending.
		c.ackAll(t, "", c.popOK(t, queuePath(q)+"?batch=2"))
		more := c.pushSeries(t, q, "", 1)
		c.ackAll(t, "", c.popOK(t, queuePath(q)+"?batch=2"))
		want := map[string]string{txns[0]: "completed", txns[1]: "completed", txns[2]: "completed",
			more[0]: "completed"}
		if got := statuses(); !reflect.DeepEqual(got, want) {
			t.Errorf("status view after queue mode committed all: %v, want %v", got, want)
		}
		want[more[0]] = "pending" // the bus group has still to read it
		if got := listed(); !reflect.DeepEqual(got, want) {
			t.Errorf("listing with the bus group behind: %v, want %v", got, want)
		}
	})

	t.Run("status/analytics: messages pushed per interval, every interval", func(t *testing.T) {
		t.Parallel()
		c := s.metricsServer(t)
		q := uniq("sa")
		c.pushN(t, q, "", 4)
		raw := c.waitJSON(t, "/api/v1/status/analytics?interval=minute&from="+
			url.QueryEscape(time.Now().Add(-10*time.Minute).Format(time.RFC3339)), "four pushes", func(v any) bool {
			return sumOf(t, arr(t, "points", obj(t, "a", v)["dataPoints"]), "messages") == 4
		})
		a := obj(t, "analytics", raw)
		wantKeys(t, "status/analytics", a, "dataPoints", "interval", "from", "to")
		pts := arr(t, "dataPoints", a["dataPoints"])
		if a["interval"] != "minute" || len(pts) < 10 || len(pts) > 11 {
			t.Errorf("interval %v, %d points for 10 minutes", a["interval"], len(pts))
		}
		wantKeys(t, "data point", obj(t, "point", pts[0]), "timestamp", "messages")
		day := obj(t, "day", c.getJSON(t, "/api/v1/status/analytics", nil))
		if day["interval"] != "hour" || len(arr(t, "points", day["dataPoints"])) < 24 {
			t.Errorf("default: %v with %d points", day["interval"], len(arr(t, "points", day["dataPoints"])))
		}
		if got := sumOf(t, arr(t, "points", obj(t, "q", c.getJSON(t, "/api/v1/status/analytics?queue="+uniq("other"),
			nil))["dataPoints"]), "messages"); got != 0 {
			t.Errorf("another queue: %d", got)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/status/analytics?interval=week", nil), http.StatusBadRequest,
			"bad query: interval")
		wantPlainError(t, c.do(t, "GET", "/api/v1/status/analytics?interval=minute&from=2025-01-01&to=2026-01-01", nil),
			http.StatusBadRequest, "bad query: interval")
	})

	t.Run("tenancy: every status and analytics route sees its tenant's queues only", func(t *testing.T) {
		t.Parallel()
		cfg := metricsConfig()
		cfg.TenancyEnabled = true
		c := s.serverWith(t, cfg)
		a, b := c.with("x-queen-tenant", tenantA), c.with("x-queen-tenant", tenantB)
		q := uniq("tq")
		a.pushN(t, q, "", 3)
		a.popOK(t, queuePath(q)+"?batch=3&autoAck=true")
		b.pushN(t, uniq("tb"), "", 1)
		a.waitJSON(t, "/api/v1/analytics/queue-lag", "tenant A's pops in its lag rows", func(v any) bool {
			return len(arr(t, "lag", v)) == 1
		})
		if got := arr(t, "lag", b.getJSON(t, "/api/v1/analytics/queue-lag", nil)); len(got) != 0 {
			t.Errorf("tenant B sees lag rows %v", got)
		}
		ingested := func(cl *client) int64 {
			st := obj(t, "status", cl.getJSON(t, "/api/v1/status", nil))
			return sumOf(t, arr(t, "throughput", st["throughput"]), "ingested")
		}
		waitFor(t, 15*time.Second, "tenant B's push in its series", func() bool { return ingested(b) == 1 })
		if got := ingested(a); got != 3 {
			t.Errorf("tenant A's status counts %d pushes, want its 3", got)
		}
		stB := obj(t, "status", b.getJSON(t, "/api/v1/status", nil))
		if n := num(t, "total", obj(t, "m", stB["messages"])["total"]); n != 1 {
			t.Errorf("tenant B's status: %d messages", n)
		}
		wantPlainError(t, b.do(t, "GET", "/api/v1/status?queue="+url.QueryEscape(q), nil), http.StatusNotFound,
			"Queue not found")
		wantPlainError(t, b.do(t, "GET", "/api/v1/status/queues/"+url.PathEscape(q), nil), http.StatusNotFound,
			"Queue not found")
		wantPlainError(t, b.do(t, "GET", "/api/v1/status/queues/"+url.PathEscape(q)+"/messages", nil),
			http.StatusNotFound, "Queue not found")
		if l := arr(t, "queues", obj(t, "l", b.getJSON(t, "/api/v1/status/queues", nil))["queues"]); len(l) != 1 {
			t.Errorf("tenant B's status/queues: %v", l)
		}
		for _, path := range []string{"/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-parked-replicas"} {
			raw := obj(t, path, b.getJSON(t, path, nil))
			for _, e := range arr(t, "series", raw["series"]) {
				if obj(t, "point", e)["queueName"] == q {
					t.Errorf("%s: tenant B sees tenant A's %s", path, q)
				}
			}
		}
		// The process's routes need no tenant.
		for _, path := range []string{"/api/v1/analytics/system-metrics", "/api/v1/analytics/worker-metrics",
			"/api/v1/analytics/postgres-stats", "/api/v1/status/buffers"} {
			wantStatus(t, c.do(t, "GET", path, nil), http.StatusOK)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/status", nil), http.StatusBadRequest, "tenant required")
	})

	t.Run("access: read-only tokens read; write-only tokens do not", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{Tokens: apiTokens(t, "")}})
		for _, path := range []string{"/api/v1/status", "/api/v1/status/queues", "/api/v1/status/analytics",
			"/api/v1/analytics/queue-ops", "/api/v1/analytics/system-metrics", "/api/v1/analytics/postgres-stats"} {
			wantStatus(t, c.with("Authorization", bearer(apiTokenReadOnly)).do(t, "GET", path, nil), http.StatusOK)
			wantPlainError(t, c.with("Authorization", bearer(apiTokenWriteOnly)).do(t, "GET", path, nil),
				http.StatusForbidden, "Insufficient permissions")
			wantStatus(t, c.do(t, "GET", path, nil), http.StatusUnauthorized)
		}
		for _, path := range []string{"/metrics", "/metrics/prometheus"} {
			wantStatus(t, c.do(t, "GET", path, nil), http.StatusOK)
		}
	})
}
