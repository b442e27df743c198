package apitest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// measureControlPlane fills st with one queue of messages spread evenly
// over partitions (half of them an hour older than the other half), lets a
// group read the older half of every partition and another none of it,
// then times every control-plane route over HTTP and logs its p50 and p95.
// Every answer must be a 2xx: the point is what a route costs on a big
// queue, which must grow with what it answers (a page), not with the
// messages stored.
func measureControlPlane(t *testing.T, st store.Store, messages, partitions int) {
	ctx := context.Background()
	const q = "big"
	perPart := max(messages/partitions, 2)
	older, newer := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
	fillStart := time.Now()
	payload := fillHalves(t, st, q, partitions, perPart, older, newer)
	t.Logf("filled %s with %d messages over %d partitions in %v", q, perPart*partitions, partitions,
		time.Since(fillStart).Round(time.Second))
	for _, g := range []struct {
		name   string
		target store.SeekTarget
	}{{"behind", store.SeekTarget{Time: older.Add(30 * time.Minute)}}, {"caught-up", store.SeekTarget{ToEnd: true}}} {
		start := time.Now()
		if _, err := st.GroupSeek(ctx, &store.GroupSeekParams{Queue: q, Group: g.name, Target: g.target,
			Now: time.Now()}); err != nil {
			t.Fatalf("seek %s: %v", g.name, err)
		}
		t.Logf("group %s joined with a seek in %v", g.name, time.Since(start).Round(time.Millisecond))
	}
	// A small queue beside it, so that lists have more than one entry.
	if _, err := st.MessagePushMany(ctx, &store.MessagePushManyParams{Now: time.Now(), Items: []store.PushItem{{
		MessageID: uuid.Must(uuid.NewV7()).String(), TransactionID: uuid.Must(uuid.NewV7()).String(),
		Queue: "small", Partition: "p", Payload: payload}}}); err != nil {
		t.Fatal(err)
	}

	c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-control-bench"}))
	t.Cleanup(c.hc.CloseIdleConnections)
	midBody := `{"timestamp":"` + older.Add(30*time.Minute).UTC().Format(time.RFC3339) + `"}`
	routes := []timedRoute{
		{"queue_list", "GET", "/api/v1/resources/queues", nil, 20},
		{"queue_get (1000 partitions)", "GET", "/api/v1/resources/queues/big", nil, 10},
		{"queue_get (limit=100)", "GET", "/api/v1/resources/queues/big?limit=100", nil, 10},
		{"partition_list (queue, first page)", "GET", "/api/v1/resources/partitions?queue=big", nil, 20},
		{"partition_list (queue, last page)", "GET", "/api/v1/resources/partitions?queue=big&offset=9900", nil, 20},
		{"partition_list (all)", "GET", "/api/v1/resources/partitions", nil, 20},
		{"namespace_list", "GET", "/api/v1/resources/namespaces", nil, 20},
		{"task_list", "GET", "/api/v1/resources/tasks", nil, 20},
		{"overview", "GET", "/api/v1/resources/overview", nil, 10},
		{"group_list", "GET", "/api/v1/consumer-groups", nil, 10},
		{"group_lagging", "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=60", nil, 10},
		{"group_get (1000 lanes)", "GET", "/api/v1/consumer-groups/behind", nil, 10},
		{"group_subscription", "POST", "/api/v1/consumer-groups/behind/subscription",
			`{"subscriptionTimestamp":"1970-01-01T00:00:00Z"}`, 20},
		{"group_seek (timestamp)", "POST", "/api/v1/consumer-groups/behind/queues/big/seek", midBody, 10},
		{"group_seek (beginning)", "POST", "/api/v1/consumer-groups/behind/queues/big/seek",
			`{"timestamp":"1970-01-01T00:00:00Z"}`, 10},
		{"group_seek (toEnd)", "POST", "/api/v1/consumer-groups/caught-up/queues/big/seek", `{"toEnd":true}`, 10},
		{"group_partition_seek", "POST", "/api/v1/consumer-groups/behind/queues/big/partitions/p00042/seek", midBody, 20},
		{"group_queue_delete (restart from subscription)", "DELETE", "/api/v1/consumer-groups/behind/queues/big", nil, 5},
		{"stats_refresh", "POST", "/api/v1/stats/refresh", nil, 20},
		{"queue_clear (one partition)", "DELETE", "/api/v1/queues/big/clear?partition=p00007", nil, 5},
		{"group_delete (metadata)", "DELETE", "/api/v1/consumer-groups/caught-up?deleteMetadata=true", nil, 1},
		{"queue_clear (whole queue)", "DELETE", "/api/v1/queues/big/clear", nil, 1},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-48s %10s %10s  (%d messages, %d partitions, engine %s)\n", "route", "p50", "p95",
		perPart*partitions, partitions, st.Engine())
	timeRoutes(t, c, routes, &report)
	t.Log(report.String())
	if r := c.do(t, "GET", "/api/v1/resources/queues/big?limit=1", nil); r.Status != http.StatusOK {
		t.Fatalf("after the clear: %v", r)
	}
}
