package apitest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// measureMessageRoutes fills st with a queue of n messages spread over
// parts partitions (a third of them consumed, a thousand dead-lettered, a
// thousand traced), serves it, and logs the median and 90th percentile
// latency of every control-plane route of messages, the DLQ and traces, as
// a client sees it over HTTP on this machine. It is a measurement, not a
// test of correctness: drivers run it on demand (QUEEN_CONTROL_BENCH=1).
func measureMessageRoutes(t *testing.T, st store.Store, n, parts int) {
	ctx := context.Background()
	const queue, group = "bench", "audit"
	fillStart := time.Now()
	const batch = 5000
	var refs []store.MessageRef // one message per partition, for the routes on one message
	for done := 0; done < n; {
		k := min(batch, n-done)
		items := make([]store.PushItem, k)
		for i := range items {
			id := uuid.Must(uuid.NewV7()).String()
			items[i] = store.PushItem{Queue: queue, Partition: fmt.Sprintf("p%05d", (done+i)%parts), MessageID: id,
				TransactionID: id, Payload: []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, done+i, strings.Repeat("x", 60)))}
		}
		res, err := st.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()})
		if err != nil {
			t.Fatalf("fill: %v", err)
		}
		for i := range res {
			if len(refs) < parts && done+i >= n-parts { // the newest message of each partition
				refs = append(refs, store.MessageRef{PartitionID: res[i].PartitionID, TransactionID: items[i].TransactionID})
			}
		}
		done += k
	}
	t.Logf("filled %d messages over %d partitions in %v", n, parts, time.Since(fillStart).Round(time.Millisecond))

	// Queue mode consumes a third, lanes whole (autoAck).
	consumeStart := time.Now()
	for consumed := 0; consumed < n/3; {
		res, err := st.LanePop(ctx, &store.LanePopParams{Queue: queue, ConsumerGroup: store.QueueMode, Batch: 10000,
			Partitions: 100, AutoAck: true, Now: time.Now(), LeaseID: uuid.Must(uuid.NewV7()).String()})
		if err != nil || len(res.Messages) == 0 {
			t.Fatalf("consume: %v (%d messages)", err, len(res.Messages))
		}
		consumed += len(res.Messages)
	}
	// A bus group joins and reads a little.
	if _, err := st.LanePop(ctx, &store.LanePopParams{Queue: queue, ConsumerGroup: group, Batch: 100, Partitions: 10,
		AutoAck: true, Now: time.Now(), LeaseID: uuid.Must(uuid.NewV7()).String()}); err != nil {
		t.Fatal(err)
	}
	t.Logf("consumed a third in %v", time.Since(consumeStart).Round(time.Millisecond))

	// Dead letters and traces on the messages the routes will touch.
	prepStart := time.Now()
	const dead, traced = 1000, 1000
	for i := range dead {
		if err := st.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: refs[i], Error: "bench",
			Now: time.Now()}); err != nil {
			t.Fatalf("dead letter: %v", err)
		}
	}
	for i := range traced {
		if err := st.TraceRecord(ctx, &store.TraceRecordParams{MessageRef: refs[dead+i], ID: uuid.Must(uuid.NewV7()).String(),
			ConsumerGroup: store.QueueMode, EventType: "info", Data: []byte(`{"step":1}`),
			Names: []string{fmt.Sprintf("flow-%d", i%10)}, Now: time.Now()}); err != nil {
			t.Fatalf("trace: %v", err)
		}
	}
	t.Logf("wrote %d dead letters and %d traces in %v", dead, traced, time.Since(prepStart).Round(time.Millisecond))

	c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-bench"}))
	t.Cleanup(c.hc.CloseIdleConnections)
	const rounds = 41
	type result struct {
		name     string
		p50, p90 time.Duration
	}
	var results []result
	measure := func(name string, req func(i int) (method, path string, body any, want int)) {
		t.Helper()
		ds := make([]time.Duration, 0, rounds)
		for i := range rounds {
			method, path, body, want := req(i)
			start := time.Now()
			r := c.do(t, method, path, body)
			ds = append(ds, time.Since(start))
			if r.Status != want {
				t.Fatalf("%s: %s %s: status %d, want %d; body %.300s", name, method, path, r.Status, want, r.Body)
			}
		}
		slices.Sort(ds)
		results = append(results, result{name, ds[len(ds)/2], ds[len(ds)*9/10]})
	}
	get := func(path string) func(int) (string, string, any, int) {
		return func(int) (string, string, any, int) { return "GET", path, nil, http.StatusOK }
	}
	live := refs[dead+traced:] // untouched messages
	path := func(r store.MessageRef) string {
		return "/api/v1/messages/" + r.PartitionID + "/" + url.PathEscape(r.TransactionID)
	}

	measure("GET /api/v1/messages", get("/api/v1/messages"))
	measure("GET /api/v1/messages?queue=", get("/api/v1/messages?queue="+queue))
	measure("GET /api/v1/messages?queue=&partition=", get("/api/v1/messages?queue="+queue+"&partition=p04242"))
	measure("GET /api/v1/messages?queue=&status=pending", get("/api/v1/messages?queue="+queue+"&status=pending"))
	measure("GET /api/v1/messages?queue=&status=completed", get("/api/v1/messages?queue="+queue+"&status=completed"))
	measure("GET /api/v1/messages?status=dead_letter", get("/api/v1/messages?status=dead_letter&limit=50"))
	measure("GET /api/v1/messages?offset=5000", get("/api/v1/messages?queue="+queue+"&offset=5000&limit=100"))
	measure("GET /api/v1/messages/{p}/{t}", func(i int) (string, string, any, int) {
		return "GET", path(live[i]), nil, http.StatusOK
	})
	measure("POST /api/v1/messages/{p}/{t}/dlq", func(i int) (string, string, any, int) {
		return "POST", path(live[100+i]) + "/dlq", `{}`, http.StatusOK
	})
	measure("POST /api/v1/messages/{p}/{t}/retry", func(i int) (string, string, any, int) {
		return "POST", path(live[100+i]) + "/retry", nil, http.StatusOK
	})
	measure("DELETE /api/v1/messages/{p}/{t}", func(i int) (string, string, any, int) {
		return "DELETE", path(live[200+i]), nil, http.StatusOK
	})
	measure("GET /api/v1/dlq?queue=&consumerGroup=&limit=100", get("/api/v1/dlq?queue="+queue+"&consumerGroup="+
		store.QueueMode+"&limit=100"))
	measure("GET /api/v1/dlq?offset=500", get("/api/v1/dlq?queue="+queue+"&offset=500&limit=100"))
	measure("POST /api/v1/dlq/retry (one id)", func(i int) (string, string, any, int) {
		return "POST", "/api/v1/dlq/retry", map[string]any{"ids": []any{map[string]any{
			"partitionId": refs[i].PartitionID, "transactionId": refs[i].TransactionID}}}, http.StatusOK
	})
	measure("POST /api/v1/dlq/retry (filter, 10)", func(i int) (string, string, any, int) {
		return "POST", "/api/v1/dlq/retry", map[string]any{"queue": queue, "limit": 10}, http.StatusOK
	})
	measure("DELETE /api/v1/dlq?queue=&consumerGroup=", fixedRequest("DELETE", "/api/v1/dlq?queue="+queue+"&consumerGroup=nobody"))
	measure("POST /api/v1/traces", func(i int) (string, string, any, int) {
		r := live[300+i]
		return "POST", "/api/v1/traces", map[string]any{"partitionId": r.PartitionID, "transactionId": r.TransactionID,
			"data": map[string]any{"i": i}, "traceNames": "flow-1"}, http.StatusCreated
	})
	measure("GET /api/v1/traces/{p}/{t}", func(i int) (string, string, any, int) {
		r := refs[dead+i]
		return "GET", "/api/v1/traces/" + r.PartitionID + "/" + url.PathEscape(r.TransactionID), nil, http.StatusOK
	})
	measure("GET /api/v1/traces/by-name/{name}", get("/api/v1/traces/by-name/flow-1"))
	measure("GET /api/v1/traces/names", get("/api/v1/traces/names"))

	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d messages over %d partitions, %d requests per route:\n", st.Engine(), n, parts, rounds)
	for _, r := range results {
		fmt.Fprintf(&b, "  %-52s p50 %8.2f ms   p90 %8.2f ms\n", r.name, msOf(r.p50), msOf(r.p90))
	}
	t.Log(b.String())
}

func fixedRequest(method, path string) func(int) (string, string, any, int) {
	return func(int) (string, string, any, int) { return method, path, nil, http.StatusOK }
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
