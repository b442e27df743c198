package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/metrics"
)

// TestOpenAPIDescribesStatus drives the status and analytics routes
// through the answers they document, with series the sampler wrote, and
// validates every exchange against openapi.json.
func TestOpenAPIDescribesStatus(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	f := newOpenAPIFixture(t, broker.Config{Metrics: m})
	st, b := f.st, f.b
	ctl := control.New(st, control.Config{Wake: b.Notify})
	sampler := control.NewSampler(st, m, control.SamplerConfig{Hostname: "h", WorkerID: "w"})
	c := f.serve(httpapi.Config{Control: ctl, Metrics: m, MaxBodyBytes: 4096})

	c.want(201, "POST", "/api/v1/push", `{"items":[{"queue":"orders","partition":"p1","payload":1,"namespace":"shop","task":"bill"},`+
		`{"queue":"orders","partition":"p2","payload":2},{"queue":"other","payload":3}]}`)
	var pop struct {
		LeaseID  string
		Messages []struct{ TransactionID, PartitionID string }
	}
	c.decode(c.want(200, "GET", "/api/v1/pop/queue/orders/partition/p1", ""), &pop)
	c.want(200, "POST", "/api/v1/ack", `{"transactionId":"`+pop.Messages[0].TransactionID+`","partitionId":"`+
		pop.Messages[0].PartitionID+`","leaseId":"`+pop.LeaseID+`","status":"dlq"}`)
	c.want(200, "GET", "/api/v1/pop/queue/orders?autoAck=true", "")
	c.want(204, "GET", "/api/v1/pop/queue/other?consumerGroup=g&subscriptionMode=new", "")
	if err := sampler.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	now := time.Now().UTC()
	from := now.Add(-2 * time.Hour).Format(time.RFC3339)
	c.want(200, "GET", "/api/v1/status", "")
	c.want(200, "GET", "/api/v1/status?from="+from, "")
	c.want(200, "GET", "/api/v1/status?queue=orders", "")
	c.want(200, "GET", "/api/v1/status?namespace=shop&task=bill", "")
	c.want(404, "GET", "/api/v1/status?queue=nope", "")
	c.want(400, "GET", "/api/v1/status?from=yesterday", "")
	c.want(400, "GET", "/api/v1/status?from=2026-07-30T10:00:00Z&to=2026-07-30T09:00:00Z", "")
	c.want(400, "GET", "/api/v1/status?from=2020-01-01&to=2026-01-01", "")
	c.want(200, "GET", "/api/v1/status/queues", "")
	c.want(200, "GET", "/api/v1/status/queues?namespace=shop&limit=1", "")
	c.want(400, "GET", "/api/v1/status/queues?limit=0", "")
	c.want(200, "GET", "/api/v1/status/queues/orders", "")
	c.want(200, "GET", "/api/v1/status/queues/orders?includePartitions=true&limit=1", "")
	c.want(404, "GET", "/api/v1/status/queues/nope", "")
	c.want(200, "GET", "/api/v1/status/queues/orders/messages", "")
	c.want(200, "GET", "/api/v1/status/queues/orders/messages?limit=1&offset=1", "")
	c.want(400, "GET", "/api/v1/status/queues/orders/messages?offset=9999&limit=2", "")
	c.want(404, "GET", "/api/v1/status/queues/nope/messages", "")
	c.want(200, "GET", "/api/v1/status/analytics", "")
	c.want(200, "GET", "/api/v1/status/analytics?interval=minute&from="+from, "")
	c.want(400, "GET", "/api/v1/status/analytics?interval=week", "")
	c.want(400, "GET", "/api/v1/status/analytics?interval=minute&from=2025-01-01&to=2026-01-01", "")
	c.want(200, "GET", "/api/v1/analytics/system-metrics", "")
	c.want(200, "GET", "/api/v1/analytics/system-metrics?hostname=h&workerId=w&from="+from, "")
	c.want(200, "GET", "/api/v1/analytics/worker-metrics", "")
	c.want(200, "GET", "/api/v1/analytics/worker-metrics?hostname=nobody", "")
	c.want(200, "GET", "/api/v1/analytics/queue-lag", "")
	c.want(200, "GET", "/api/v1/analytics/queue-lag?queue=orders&limit=5", "")
	c.want(400, "GET", "/api/v1/analytics/queue-lag?limit=0", "")
	c.want(200, "GET", "/api/v1/analytics/queue-ops", "")
	c.want(200, "GET", "/api/v1/analytics/queue-ops?queue=orders", "")
	c.want(200, "GET", "/api/v1/analytics/queue-parked-replicas", "")
	c.want(200, "GET", "/api/v1/analytics/retention", "")
	c.want(200, "GET", "/api/v1/analytics/retention?queue=orders", "")
	c.want(400, "GET", "/api/v1/analytics/retention?to=never", "")
	c.want(200, "GET", "/api/v1/analytics/postgres-stats", "")
	c.want(200, "GET", "/metrics", "")
}

// TestStatusRouteAccess pins the access level of the status and analytics
// routes (management.md §1.5): all read.
func TestStatusRouteAccess(t *testing.T) {
	want := map[string]httpapi.Access{
		"GET /api/v1/status":                          httpapi.AccessRead,
		"GET /api/v1/status/queues":                   httpapi.AccessRead,
		"GET /api/v1/status/queues/{queue}":           httpapi.AccessRead,
		"GET /api/v1/status/queues/{queue}/messages":  httpapi.AccessRead,
		"GET /api/v1/status/analytics":                httpapi.AccessRead,
		"GET /api/v1/status/buffers":                  httpapi.AccessRead,
		"GET /api/v1/analytics/system-metrics":        httpapi.AccessRead,
		"GET /api/v1/analytics/worker-metrics":        httpapi.AccessRead,
		"GET /api/v1/analytics/queue-lag":             httpapi.AccessRead,
		"GET /api/v1/analytics/queue-ops":             httpapi.AccessRead,
		"GET /api/v1/analytics/queue-parked-replicas": httpapi.AccessRead,
		"GET /api/v1/analytics/retention":             httpapi.AccessRead,
		"GET /api/v1/analytics/postgres-stats":        httpapi.AccessRead,
		"GET /metrics":                                httpapi.AccessPublic,
		"GET /metrics/prometheus":                     httpapi.AccessPublic,
	}
	process := map[string]bool{"GET /api/v1/status/buffers": true, "GET /api/v1/analytics/system-metrics": true,
		"GET /api/v1/analytics/worker-metrics": true, "GET /api/v1/analytics/postgres-stats": true,
		"GET /metrics": true, "GET /metrics/prometheus": true}
	for _, rt := range httpapi.Routes() {
		key := rt.Method + " " + rt.Pattern
		w, ok := want[key]
		if !ok {
			continue
		}
		delete(want, key)
		if rt.Access != w {
			t.Errorf("%s: access %v, want %v", key, rt.Access, w)
		}
		if (rt.Scope == httpapi.ScopeProcess) != process[key] {
			t.Errorf("%s: scope %v", key, rt.Scope)
		}
	}
	for key := range want {
		t.Errorf("%s is not in the route table", key)
	}
}
