package apitest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// measureStatus fills st with one queue of messages spread evenly over
// partitions (half of them an hour older than the other half; queue mode
// has read the older half), 99 small queues beside it, and a day of
// metrics rows as two brokers would have written them (every queue active
// every minute), then times every status and analytics route over HTTP
// and logs its p50 and p95. Every answer must be a 2xx. The point: a route
// costs what it answers (a page, a window of per-minute rows), never the
// messages stored.
func measureStatus(t *testing.T, st store.Store, messages, partitions int) {
	ctx := context.Background()
	const q = "big"
	perPart := max(messages/partitions, 2)
	older, newer := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
	fillStart := time.Now()
	payload := fillHalves(t, st, q, partitions, perPart, older, newer)
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	var small []store.PushItem
	for i := range 99 {
		small = append(small, store.PushItem{MessageID: newID(), TransactionID: newID(), Queue: fmt.Sprintf("small-%02d", i),
			Partition: "p", Payload: payload})
	}
	if _, err := st.MessagePushMany(ctx, &store.MessagePushManyParams{Items: small, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GroupSeek(ctx, &store.GroupSeekParams{Queue: q, Group: store.QueueMode,
		Target: store.SeekTarget{Time: older.Add(30 * time.Minute)}, Now: time.Now()}); err != nil {
		t.Fatalf("seek: %v", err)
	}
	t.Logf("filled %s with %d messages over %d partitions in %v", q, perPart*partitions, partitions,
		time.Since(fillStart).Round(time.Second))

	// A day of rows: two brokers, 100 queues, every minute.
	rowsStart := time.Now()
	day := time.Now().Truncate(time.Minute).Add(-24 * time.Hour)
	for m := range 24 * 60 {
		minute := day.Add(time.Duration(m) * time.Minute)
		p := &store.StatsRecordParams{}
		for _, b := range []string{"w1", "w2"} {
			for i := range 100 {
				name := q
				if i > 0 {
					name = fmt.Sprintf("small-%02d", i-1)
				}
				p.Queues = append(p.Queues, store.QueueMinute{Queue: name, Minute: minute, Hostname: "bench", WorkerID: b,
					Ops: store.QueueOps{PushRequests: 10, PushMessages: 1000, PopRequests: 20, PopMessages: 900,
						AckRequests: 10, AckSuccess: 900, LagCount: 900, LagSumMs: 90000, LagMaxMs: 400}, Parked: 2})
			}
			p.Workers = append(p.Workers, store.WorkerMinute{Hostname: "bench", WorkerID: b, Minute: minute, PID: 1,
				Port: 6632, Ops: store.QueueOps{PushRequests: 1000, PushMessages: 100000},
				Gauges: map[string]store.GaugeStat{control.GaugeRSS: {Avg: 1e8, Min: 1e8, Max: 1e8, Last: 1e8, N: 60},
					control.GaugeCPUUser:  {Avg: 5000, Min: 0, Max: 9000, Last: 100, N: 60},
					control.GaugePoolIdle: {Avg: 5, Min: 1, Max: 10, Last: 5, N: 60}}})
		}
		p.States = []store.QueueState{{Queue: q, Minute: minute, Pending: int64(messages / 2), Partitions: partitions}}
		if err := st.StatsRecord(ctx, p); err != nil {
			t.Fatalf("metrics rows: %v", err)
		}
	}
	if err := st.StatsRollup(ctx, &store.StatsRollupParams{From: day, To: time.Now()}); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote a day of metrics rows (%d queue rows, %d broker rows) in %v", 24*60*200, 24*60*2,
		time.Since(rowsStart).Round(time.Second))

	c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-status-bench"}))
	t.Cleanup(c.hc.CloseIdleConnections)
	dayAgo := "from=" + url.QueryEscape(time.Now().Add(-24*time.Hour).UTC().Format(time.RFC3339))
	routes := []timedRoute{
		{"status (hour)", "GET", "/api/v1/status", nil, 20},
		{"status (day)", "GET", "/api/v1/status?" + dayAgo, nil, 10},
		{"status (queue=big)", "GET", "/api/v1/status?queue=big", nil, 10},
		{"status_queues", "GET", "/api/v1/status/queues", nil, 20},
		{"status_queue (1000 partitions)", "GET", "/api/v1/status/queues/big", nil, 10},
		{"status_queue (limit=100)", "GET", "/api/v1/status/queues/big?limit=100", nil, 10},
		{"status_queue_messages (first page)", "GET", "/api/v1/status/queues/big/messages", nil, 20},
		{"status_queue_messages (offset=1000)", "GET", "/api/v1/status/queues/big/messages?offset=1000", nil, 10},
		{"status_queue_messages (offset=9950)", "GET", "/api/v1/status/queues/big/messages?offset=9950", nil, 10},
		{"status_analytics (day, hourly)", "GET", "/api/v1/status/analytics", nil, 20},
		{"status_analytics (day, by minute)", "GET", "/api/v1/status/analytics?interval=minute", nil, 10},
		{"analytics_system_metrics (hour)", "GET", "/api/v1/analytics/system-metrics", nil, 20},
		{"analytics_system_metrics (day)", "GET", "/api/v1/analytics/system-metrics?" + dayAgo, nil, 10},
		{"analytics_worker_metrics (hour)", "GET", "/api/v1/analytics/worker-metrics", nil, 10},
		{"analytics_worker_metrics (day)", "GET", "/api/v1/analytics/worker-metrics?" + dayAgo, nil, 10},
		{"analytics_queue_lag (hour)", "GET", "/api/v1/analytics/queue-lag", nil, 20},
		{"analytics_queue_ops (hour)", "GET", "/api/v1/analytics/queue-ops", nil, 20},
		{"analytics_queue_ops (day)", "GET", "/api/v1/analytics/queue-ops?" + dayAgo, nil, 10},
		{"analytics_queue_parked_replicas (hour)", "GET", "/api/v1/analytics/queue-parked-replicas", nil, 20},
		{"analytics_retention (hour)", "GET", "/api/v1/analytics/retention", nil, 20},
		{"analytics_postgres_stats", "GET", "/api/v1/analytics/postgres-stats", nil, 10},
		{"metrics (JSON)", "GET", "/metrics", nil, 20},
		{"metrics_prometheus (cached)", "GET", "/metrics/prometheus", nil, 20},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-48s %10s %10s  (%d messages, %d partitions, engine %s)\n", "route", "p50", "p95",
		perPart*partitions, partitions, st.Engine())
	timeRoutes(t, c, routes, &report)
	// What a scrape costs when its cached figures are stale: the source read.
	ctl := control.New(st, control.Config{})
	var lats []time.Duration
	for i := range 6 {
		start := time.Now()
		if _, err := ctl.QueueMetrics(ctx, control.DefaultMaxQueues, nil); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			lats = append(lats, time.Since(start))
		}
	}
	slices.Sort(lats)
	fmt.Fprintf(&report, "%-48s %10v %10v\n", "metrics_prometheus (figures read, every 5 s)",
		lats[len(lats)/2].Round(10*time.Microsecond), lats[len(lats)-1].Round(10*time.Microsecond))
	t.Log(report.String())
}
