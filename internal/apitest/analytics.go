package apitest

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Key sets of the analytics answers.
var (
	gaugeKeys        = []string{"avg", "min", "max", "last"}
	workerSeriesKeys = []string{"timestamp", "pushMessages", "popMessages", "ackMessages", "pushRequests",
		"popRequests", "ackRequests", "jobsDone", "pushPerSecond", "popPerSecond", "ackPerSecond",
		"avgEventLoopLagMs", "maxEventLoopLagMs", "avgFreeSlots", "minFreeSlots", "dbConnections", "avgJobQueueSize",
		"maxJobQueueSize", "backoffSize", "avgLagMs", "maxLagMs", "lagCount", "dbErrors", "ackSuccess", "ackFailed",
		"dlqCount"}
	queueOpsKeys = []string{"bucket", "queueName", "pushRequests", "pushMessages", "popMessages", "popEmpty",
		"ackRequests", "ackSuccess", "ackFailed", "transactions", "partitionsCreated", "partitionsDeleted",
		"partitionCount", "avgLagMs", "maxLagMs", "pushPerSecond", "popPerSecond", "ackPerSecond", "emptyPerSecond",
		"parkedCount", "pending", "processing", "deadLetter"}
	retentionKeys = []string{"retentionMsgs", "completedRetentionMsgs", "evictionMsgs", "totalMsgs", "eventCount"}
)

func (s *suite) testAnalytics(t *testing.T) {
	t.Run("system-metrics and worker-metrics: the broker's process and work", func(t *testing.T) {
		t.Parallel()
		c := s.metricsServer(t)
		q := uniq("wm")
		c.pushN(t, q, "", 7)
		p := c.popOK(t, queuePath(q)+"?batch=7")
		c.ackAll(t, "", p)
		raw := c.waitJSON(t, "/api/v1/analytics/worker-metrics", "seven pushes and acks", func(v any) bool {
			sum := obj(t, "summary", obj(t, "wm", v)["summary"])
			return num(t, "push", sum["totalPushMessages"]) == 7 && num(t, "ack", sum["totalAckMessages"]) == 7
		})
		wm := obj(t, "worker-metrics", raw)
		wantKeys(t, "worker-metrics", wm, "timeRange", "bucketMinutes", "pointCount", "timeSeries", "workers",
			"queues", "summary")
		ts := arr(t, "timeSeries", wm["timeSeries"])
		if n := num(t, "pointCount", wm["pointCount"]); n != int64(len(ts)) || n < 60 {
			t.Errorf("pointCount %d, %d points", n, len(ts))
		}
		for _, e := range ts {
			wantKeys(t, "worker point", obj(t, "point", e), workerSeriesKeys...)
		}
		if got := sumOf(t, ts, "popMessages"); got != 7 {
			t.Errorf("popMessages over the series: %d", got)
		}
		ws := arr(t, "workers", wm["workers"])
		if len(ws) != 1 {
			t.Fatalf("workers %v", ws)
		}
		wantKeys(t, "worker", obj(t, "w", ws[0]), "hostname", "workerId", "avgEventLoopLagMs", "maxEventLoopLagMs",
			"freeSlots", "dbConnections", "jobQueueSize", "backoffSize", "messagesProcessed", "lastSeen")
		qs := arr(t, "queues", wm["queues"])
		if len(qs) != 1 {
			t.Fatalf("queues %v", qs)
		}
		ql := obj(t, "queue", qs[0])
		wantKeys(t, "queue", ql, "queueName", "tenant", "popCount", "avgLagMs", "maxLagMs")
		if ql["queueName"] != q || num(t, "popCount", ql["popCount"]) != 7 {
			t.Errorf("queue %v", ql)
		}
		sum := obj(t, "summary", wm["summary"])
		wantKeys(t, "summary", sum, "totalPushMessages", "totalPopMessages", "totalAckMessages", "totalPushRequests",
			"totalPopRequests", "totalAckRequests", "totalDbErrors", "totalAckFailed", "totalDlq", "pendingMessages")
		if num(t, "pending", sum["pendingMessages"]) != 0 || num(t, "push requests", sum["totalPushRequests"]) != 1 {
			t.Errorf("summary %v", sum)
		}
		host := obj(t, "w", ws[0])["hostname"].(string)
		worker := obj(t, "w", ws[0])["workerId"].(string)

		sm := obj(t, "system-metrics", c.getJSON(t, "/api/v1/analytics/system-metrics", nil))
		wantKeys(t, "system-metrics", sm, "timeRange", "replicas", "replicaCount", "bucketMinutes", "pointCount")
		reps := arr(t, "replicas", sm["replicas"])
		if len(reps) != 1 || num(t, "replicaCount", sm["replicaCount"]) != 1 {
			t.Fatalf("replicas %v", reps)
		}
		rep := obj(t, "replica", reps[0])
		wantKeys(t, "replica", rep, "hostname", "port", "workerId", "pid", "timeSeries")
		if rep["hostname"] != host || rep["workerId"] != worker || num(t, "port", rep["port"]) == 0 {
			t.Errorf("replica %v", rep)
		}
		pts := arr(t, "timeSeries", rep["timeSeries"])
		if len(pts) == 0 {
			t.Fatal("no process points")
		}
		pt := obj(t, "point", pts[len(pts)-1])
		wantKeys(t, "point", pt, "timestamp", "sampleCount", "metrics")
		metrics := obj(t, "metrics", pt["metrics"])
		wantKeys(t, "metrics", metrics, "cpu", "memory", "database", "threadpool", "runtime", "long_polls", "spool")
		rss := obj(t, "rss", obj(t, "memory", metrics["memory"])["rss_bytes"])
		wantKeys(t, "rss_bytes", rss, gaugeKeys...)
		if rss["max"].(float64) <= 0 || num(t, "sampleCount", pt["sampleCount"]) < 1 {
			t.Errorf("memory %v, samples %v", rss, pt["sampleCount"])
		}
		wantKeys(t, "cpu", obj(t, "cpu", metrics["cpu"]), "user_us", "system_us")
		wantKeys(t, "database", obj(t, "database", metrics["database"]), "pool_size", "pool_idle", "pool_active",
			"pool_open")
		if size := obj(t, "size", obj(t, "db", metrics["database"])["pool_size"]); size["last"].(float64) < 1 {
			t.Errorf("pool size %v", size)
		}
		filtered := obj(t, "filtered", c.getJSON(t, "/api/v1/analytics/system-metrics?hostname="+url.QueryEscape(host)+
			"&workerId="+url.QueryEscape(worker), nil))
		if len(arr(t, "replicas", filtered["replicas"])) != 1 {
			t.Errorf("this broker's filter: %v", filtered["replicas"])
		}
		other := obj(t, "other", c.getJSON(t, "/api/v1/analytics/system-metrics?workerId=nobody", nil))
		if len(arr(t, "replicas", other["replicas"])) != 0 {
			t.Errorf("workerId nobody: %v", other["replicas"])
		}
		wm = obj(t, "wm", c.getJSON(t, "/api/v1/analytics/worker-metrics?hostname=nobody", nil))
		if len(arr(t, "workers", wm["workers"])) != 0 || num(t, "push", obj(t, "s", wm["summary"])["totalPushMessages"]) != 0 {
			t.Errorf("hostname nobody: %v", wm["summary"])
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/analytics/worker-metrics?from=x", nil), http.StatusBadRequest,
			"bad query: from")
	})

	t.Run("queue-lag, queue-ops and parked replicas: per queue and bucket", func(t *testing.T) {
		t.Parallel()
		c := s.metricsServer(t)
		q, idle := uniq("qo"), uniq("idle")
		c.pushN(t, q, "p1", 5)
		c.pushN(t, q, "p2", 5)
		c.popOK(t, queuePath(q)+"?batch=4&autoAck=true")
		// A long poll parked on an empty queue while the sampler looks.
		done := make(chan *response, 1)
		go func() {
			r, _ := c.send(context.Background(), "GET", queuePath(idle)+"?wait=true&timeout=3000", nil)
			done <- r
		}()
		raw := c.waitJSON(t, "/api/v1/analytics/queue-parked-replicas", "the parked poll", func(v any) bool {
			return len(arr(t, "series", obj(t, "p", v)["series"])) > 0
		})
		pr := obj(t, "parked", raw)
		wantKeys(t, "queue-parked-replicas", pr, "timeRange", "bucketMinutes", "series", "replicas")
		pt := obj(t, "point", arr(t, "series", pr["series"])[0])
		wantKeys(t, "parked point", pt, "bucket", "queueName", "hostname", "workerId", "parkedCount")
		if pt["queueName"] != idle || num(t, "parkedCount", pt["parkedCount"]) != 1 {
			t.Errorf("parked %v", pt)
		}
		reps := arr(t, "replicas", pr["replicas"])
		if len(reps) != 1 {
			t.Errorf("replicas %v", reps)
		}
		wantKeys(t, "replica", obj(t, "r", reps[0]), "hostname", "workerId")
		if r := <-done; r == nil || r.Status != http.StatusNoContent {
			t.Errorf("the long poll: %v", r)
		}

		lag := arr(t, "lag", c.waitJSON(t, "/api/v1/analytics/queue-lag?queue="+url.QueryEscape(q), "the pop's lag",
			func(v any) bool { return len(arr(t, "lag", v)) > 0 }))
		row := obj(t, "row", lag[0])
		wantKeys(t, "queue-lag row", row, "queueName", "popCount", "avgLagMs", "maxLagMs", "bucketTime")
		if row["queueName"] != q || num(t, "popCount", row["popCount"]) != 4 {
			t.Errorf("lag row %v", row)
		}
		wantTimestamp(t, "bucketTime", row["bucketTime"].(string))
		if got := arr(t, "lag", c.getJSON(t, "/api/v1/analytics/queue-lag?queue="+url.QueryEscape(idle), nil)); len(got) != 0 {
			t.Errorf("lag of a queue nobody popped: %v", got)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/analytics/queue-lag?limit=0", nil), http.StatusBadRequest,
			"bad query: limit")

		raw = c.waitJSON(t, "/api/v1/analytics/queue-ops?queue="+url.QueryEscape(q), "ten pushes and the queue's figures",
			func(v any) bool {
				series := arr(t, "series", obj(t, "ops", v)["series"])
				return sumOf(t, series, "pushMessages") == 10 && obj(t, "last", series[len(series)-1])["pending"] != nil
			})
		ops := obj(t, "queue-ops", raw)
		wantKeys(t, "queue-ops", ops, "timeRange", "bucketMinutes", "series", "queues", "omittedQueues")
		series := arr(t, "series", ops["series"])
		last := obj(t, "point", series[len(series)-1])
		wantKeys(t, "queue-ops point", last, queueOpsKeys...)
		if last["queueName"] != q || num(t, "partitionCount", last["partitionCount"]) != 2 ||
			num(t, "pending", last["pending"]) != 6 || sumOf(t, series, "popMessages") != 4 ||
			sumOf(t, series, "pushRequests") != 2 {
			t.Errorf("queue-ops of %s: %v", q, series)
		}
		if qs := arr(t, "queues", ops["queues"]); len(qs) != 1 || qs[0] != q {
			t.Errorf("queues %v", qs)
		}
		all := obj(t, "all", c.getJSON(t, "/api/v1/analytics/queue-ops", nil))
		if qs := arr(t, "queues", all["queues"]); len(qs) != 2 || qs[0] != q {
			t.Errorf("busiest first: %v", qs)
		}
	})

	t.Run("retention: empty series and zero totals without history", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		r := obj(t, "retention", c.getJSON(t, "/api/v1/analytics/retention?queue="+uniq("q"), nil))
		wantKeys(t, "retention", r, "timeRange", "bucketMinutes", "series", "totals")
		wantKeys(t, "totals", obj(t, "totals", r["totals"]), retentionKeys...)
		if len(arr(t, "series", r["series"])) != 0 || sumOf(t, []any{r["totals"]}, "totalMsgs") != 0 {
			t.Errorf("retention %v", r)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/analytics/retention?to=never", nil), http.StatusBadRequest,
			"bad query: to")
	})

	t.Run("postgres-stats: the engine's own figures", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		c.pushN(t, uniq("ps"), "", 3)
		ps := obj(t, "postgres-stats", c.getJSON(t, "/api/v1/analytics/postgres-stats", nil))
		wantKeys(t, "postgres-stats", ps, "timestamp", "engine", "database", "databaseCache", "tableCache",
			"indexCache", "cacheSummary", "deadTuples", "hotUpdates", "activeQueries", "autovacuumStatus",
			"bufferConfig", "bufferUsage", "tableSizes")
		if ps["engine"] != c.engine {
			t.Errorf("engine %v, want %s", ps["engine"], c.engine)
		}
		db := obj(t, "database", ps["database"])
		if num(t, "sizeBytes", db["sizeBytes"]) <= 0 || num(t, "pageSize", db["pageSize"]) <= 0 {
			t.Errorf("database %v", db)
		}
		wantKeys(t, "databaseCache", obj(t, "cache", ps["databaseCache"]), "hits", "reads", "hitRatio")
		if len(arr(t, "bufferConfig", ps["bufferConfig"])) == 0 {
			t.Error("no settings")
		}
		if c.engine == "postgres" {
			var tables []string
			for _, e := range arr(t, "tableSizes", ps["tableSizes"]) {
				tables = append(tables, obj(t, "t", e)["table"].(string))
			}
			if !strings.Contains(strings.Join(tables, ","), "messages") {
				t.Errorf("tables %v", tables)
			}
		} else if num(t, "pageCount", db["pageCount"]) <= 0 {
			t.Errorf("pages %v", db)
		}
	})
}

// scrape reads /metrics/prometheus with the official text parser.
func (c *client) scrape(t testing.TB) map[string]*dto.MetricFamily {
	t.Helper()
	r := c.do(t, "GET", "/metrics/prometheus", nil)
	wantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics/prometheus: %v", err)
	}
	return mfs
}

// series returns the value of family's series whose labels include the
// pairs, and whether there is one.
func series(mfs map[string]*dto.MetricFamily, family string, labels ...string) (float64, bool) {
	mf := mfs[family]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		}
	}
	return 0, false
}

func (s *suite) testMetrics(t *testing.T) {
	t.Run("/metrics: Queen's JSON snapshot with real figures", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		c.pushN(t, uniq("mj"), "", 3)
		done := make(chan struct{})
		idle := uniq("idle")
		go func() {
			defer close(done)
			_, _ = c.send(context.Background(), "GET", queuePath(idle)+"?wait=true&timeout=2000", nil)
		}()
		raw := c.waitJSON(t, "/metrics", "the parked poll in /metrics", func(v any) bool {
			return num(t, "waiting", obj(t, "lp", obj(t, "m", v)["longPolls"])["waiting"]) == 1
		})
		m := obj(t, "metrics", raw)
		wantKeys(t, "metrics", m, "uptime", "requests", "messages", "database", "memory", "cpu", "longPolls")
		wantKeys(t, "memory", obj(t, "memory", m["memory"]), "rss", "virtual", "heapTotal", "heapUsed", "external",
			"arrayBuffers")
		wantKeys(t, "database", obj(t, "database", m["database"]), "engine", "poolSize", "idleConnections",
			"activeConnections", "waitingRequests")
		wantKeys(t, "cpu", obj(t, "cpu", m["cpu"]), "user", "system")
		mem, cpu, db := obj(t, "memory", m["memory"]), obj(t, "cpu", m["cpu"]), obj(t, "database", m["database"])
		if mem["rss"].(float64) <= 0 || mem["heapUsed"].(float64) <= 0 ||
			cpu["user"].(float64)+cpu["system"].(float64) <= 0 || num(t, "poolSize", db["poolSize"]) < 1 ||
			db["engine"] != c.engine {
			t.Errorf("figures: memory %v cpu %v database %v", mem, cpu, db)
		}
		if num(t, "messages", obj(t, "messages", m["messages"])["total"]) != 3 ||
			num(t, "requests", obj(t, "requests", m["requests"])["total"]) < 1 {
			t.Errorf("counters: %v %v", m["messages"], m["requests"])
		}
		<-done
	})

	t.Run("/metrics/prometheus: per-queue gauges for the deepest queues, the cap honoured", func(t *testing.T) {
		t.Parallel()
		cfg := metricsConfig()
		cfg.MetricsMaxQueues = 2
		c := s.serverWith(t, cfg)
		deep, mid, shallow := uniq("deep"), uniq("mid"), uniq("shallow")
		c.pushN(t, deep, "p1", 5)
		c.pushN(t, deep, "p2", 4)
		c.pushN(t, mid, "", 3)
		c.pushN(t, shallow, "", 1)
		p := c.popOK(t, partitionPath(deep, "p1")+"?batch=2")
		c.ack(t, "", ackOf(p.Messages[0], "dlq"))        // one dead letter; the lease is released
		c.popOK(t, partitionPath(deep, "p1")+"?batch=2") // 2 in flight
		mfs := c.scrape(t)
		for family, want := range map[string]float64{"queen_queue_depth": 6, "queen_queue_in_flight": 2,
			"queen_dlq_depth_by_queue": 1, "queen_queue_partitions": 2, "queen_queue_consumer_lag_messages": 8,
			"queen_queue_spool_pending": 0, "queen_queue_parked_consumers": 0} {
			if v, ok := series(mfs, family, "queue", deep); !ok || v != want {
				t.Errorf("%s{queue=%q}: %v (present %v), want %v", family, deep, v, ok, want)
			}
		}
		if v, ok := series(mfs, "queen_queue_oldest_message_age_seconds", "queue", deep); !ok || v < 0 || v > 60 {
			t.Errorf("oldest age of %s: %v %v", deep, v, ok)
		}
		if v, ok := series(mfs, "queen_queue_depth", "queue", mid); !ok || v != 3 {
			t.Errorf("depth of %s: %v %v", mid, v, ok)
		}
		if _, ok := series(mfs, "queen_queue_depth", "queue", shallow); ok {
			t.Errorf("%s has a series beyond the cap of 2", shallow)
		}
		for family, want := range map[string]float64{"queen_queue_metrics_omitted_queues": 1, "queen_queues": 3,
			"queen_queue_metrics_max_queues": 2} {
			if v, ok := series(mfs, family); !ok || v != want {
				t.Errorf("%s: %v (present %v), want %v", family, v, ok, want)
			}
		}
		if v, ok := series(mfs, "queen_dlq_depth", "scope", "cluster"); !ok || v != 1 {
			t.Errorf("queen_dlq_depth: %v %v", v, ok)
		}
		for _, family := range []string{"queen_cpu_user_microseconds_total", "queen_process_resident_memory_bytes",
			"queen_db_pool_size", "queen_db_pool_idle", "queen_db_pool_active", "queen_pop_waiting",
			"queen_messages_pushed_total", "queen_uptime_seconds", "queen_db_errors_total"} {
			if _, ok := series(mfs, family); !ok {
				t.Errorf("%s missing", family)
			}
		}
		if v, _ := series(mfs, "queen_process_resident_memory_bytes"); v <= 0 {
			t.Errorf("resident memory %v", v)
		}
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "queen_queue_") && len(mf.Metric) > 0 {
				for _, l := range mf.Metric[0].Label {
					if l.GetName() == "tenant" {
						t.Errorf("%s has a tenant label with tenancy off", mf.GetName())
					}
				}
			}
		}
	})

	t.Run("/metrics/prometheus: a tenant label when tenancy is on", func(t *testing.T) {
		t.Parallel()
		cfg := metricsConfig()
		cfg.TenancyEnabled = true
		c := s.serverWith(t, cfg)
		q := uniq("tenanted")
		c.with("x-queen-tenant", tenantA).pushN(t, q, "", 2)
		c.with("x-queen-tenant", tenantB).pushN(t, q, "", 1)
		mfs := c.scrape(t)
		if v, ok := series(mfs, "queen_queue_depth", "tenant", tenantA, "queue", q); !ok || v != 2 {
			t.Errorf("tenant A's %s: %v %v", q, v, ok)
		}
		if v, ok := series(mfs, "queen_queue_depth", "tenant", tenantB, "queue", q); !ok || v != 1 {
			t.Errorf("tenant B's %s: %v %v", q, v, ok)
		}
	})
}
