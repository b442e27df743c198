package httpapi_test

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/httpapi"
)

// TestOpenAPIDescribesControlPlane drives the queue, partition and
// consumer-group routes through the answers they document and validates
// every exchange against openapi.json, as TestOpenAPIDescribesAnswers does
// for the message plane.
func TestOpenAPIDescribesControlPlane(t *testing.T) {
	f := newOpenAPIFixture(t, broker.Config{})
	ctl := control.New(f.st, control.Config{Wake: f.b.Notify})
	c := f.serve(httpapi.Config{Control: ctl, MaxBodyBytes: 4096})

	c.want(201, "POST", "/api/v1/push", `{"items":[{"queue":"orders","partition":"p1","payload":1,"namespace":"shop","task":"bill"},`+
		`{"queue":"orders","partition":"p2","payload":2},{"queue":"other","payload":3}]}`)
	c.want(200, "GET", "/api/v1/pop/queue/orders/partition/p1?consumerGroup=g", "")
	c.want(200, "GET", "/api/v1/pop/queue/orders?consumerGroup=h&autoAck=true&batch=10&partitions=10", "")

	c.want(200, "GET", "/api/v1/resources/queues", "")
	c.want(200, "GET", "/api/v1/resources/queues?namespace=shop&task=bill&limit=1&offset=0", "")
	c.want(400, "GET", "/api/v1/resources/queues?limit=0", "")
	c.want(400, "GET", "/api/v1/resources/queues?limit=x", "")
	c.want(200, "GET", "/api/v1/resources/queues/orders", "")
	c.want(200, "GET", "/api/v1/resources/queues/orders?limit=1&offset=1", "")
	c.want(404, "GET", "/api/v1/resources/queues/nope", "")
	c.want(200, "GET", "/api/v1/resources/partitions", "")
	c.want(200, "GET", "/api/v1/resources/partitions?queue=orders&limit=1", "")
	c.want(404, "GET", "/api/v1/resources/partitions?queue=nope", "")
	c.want(400, "GET", "/api/v1/resources/partitions?offset=-1", "")
	c.want(200, "GET", "/api/v1/resources/namespaces", "")
	c.want(200, "GET", "/api/v1/resources/tasks?limit=5", "")
	c.want(200, "GET", "/api/v1/resources/overview", "")

	c.want(200, "GET", "/api/v1/consumer-groups", "")
	c.want(200, "GET", "/api/v1/consumer-groups?limit=1&offset=1", "")
	c.want(200, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=0", "")
	c.want(200, "GET", "/api/v1/consumer-groups/lagging", "")
	c.want(400, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=abc", "")
	c.want(200, "GET", "/api/v1/consumer-groups/g", "")
	c.want(404, "GET", "/api/v1/consumer-groups/nobody", "")
	c.want(200, "POST", "/api/v1/consumer-groups/g/queues/orders/seek", `{"timestamp":"1970-01-01T00:00:00Z"}`)
	c.want(200, "POST", "/api/v1/consumer-groups/g/queues/orders/seek", `{"toEnd":true}`)
	c.want(200, "POST", "/api/v1/consumer-groups/new/queues/orders/seek", `{"timestamp":"2026-07-30T09:12:44.031Z"}`)
	c.want(400, "POST", "/api/v1/consumer-groups/g/queues/orders/seek", `{}`)
	c.want(400, "POST", "/api/v1/consumer-groups/g/queues/orders/seek", `{"timestamp":"yesterday"}`)
	c.want(400, "POST", "/api/v1/consumer-groups/g/queues/orders/seek", `{"toEnd":"yes"}`)
	c.want(404, "POST", "/api/v1/consumer-groups/g/queues/nope/seek", `{"toEnd":true}`)
	c.want(200, "POST", "/api/v1/consumer-groups/g/queues/orders/partitions/p1/seek", ``)
	c.want(200, "POST", "/api/v1/consumer-groups/g/queues/orders/partitions/p1/seek", `{"timestamp":"1970-01-01T00:00:00Z"}`)
	c.want(404, "POST", "/api/v1/consumer-groups/g/queues/orders/partitions/nope/seek", `{}`)
	c.want(200, "POST", "/api/v1/consumer-groups/g/subscription", `{"subscriptionTimestamp":"2026-07-30T09:12:44.031Z"}`)
	c.want(400, "POST", "/api/v1/consumer-groups/g/subscription", `{}`)
	c.want(404, "POST", "/api/v1/consumer-groups/nobody/subscription", `{"subscriptionTimestamp":"2026-07-30T09:12:44Z"}`)
	c.want(200, "DELETE", "/api/v1/consumer-groups/h/queues/orders?deleteMetadata=false", "")
	c.want(404, "DELETE", "/api/v1/consumer-groups/h/queues/nope", "")
	c.want(200, "DELETE", "/api/v1/consumer-groups/g?deleteMetadata=true", "")
	c.want(200, "DELETE", "/api/v1/consumer-groups/g", "")
	c.want(400, "DELETE", "/api/v1/consumer-groups/g?deleteMetadata=maybe", "")
	c.want(200, "POST", "/api/v1/stats/refresh", "")

	c.want(200, "DELETE", "/api/v1/queues/orders/clear?partition=p1", "")
	c.want(404, "DELETE", "/api/v1/queues/orders/clear?partition=nope", "")
	c.want(200, "DELETE", "/api/v1/queues/orders/clear", "")
	c.want(404, "DELETE", "/api/v1/queues/nope/clear", "")
	if err := ctl.WaitCleared(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestControlPlaneRouteAccess pins the access level of every control-plane
// route (management.md §1.2–1.3): reads are read, seek and subscription
// read-write, deletes, clear and stats/refresh admin.
func TestControlPlaneRouteAccess(t *testing.T) {
	want := map[string]httpapi.Access{
		"GET /api/v1/resources/queues":                                                    httpapi.AccessRead,
		"GET /api/v1/resources/queues/{queue}":                                            httpapi.AccessRead,
		"GET /api/v1/resources/partitions":                                                httpapi.AccessRead,
		"GET /api/v1/resources/namespaces":                                                httpapi.AccessRead,
		"GET /api/v1/resources/tasks":                                                     httpapi.AccessRead,
		"GET /api/v1/resources/overview":                                                  httpapi.AccessRead,
		"DELETE /api/v1/queues/{queue}/clear":                                             httpapi.AccessAdmin,
		"GET /api/v1/consumer-groups":                                                     httpapi.AccessRead,
		"GET /api/v1/consumer-groups/lagging":                                             httpapi.AccessRead,
		"GET /api/v1/consumer-groups/{group}":                                             httpapi.AccessRead,
		"DELETE /api/v1/consumer-groups/{group}":                                          httpapi.AccessAdmin,
		"DELETE /api/v1/consumer-groups/{group}/queues/{queue}":                           httpapi.AccessAdmin,
		"POST /api/v1/consumer-groups/{group}/subscription":                               httpapi.AccessReadWrite,
		"POST /api/v1/consumer-groups/{group}/queues/{queue}/seek":                        httpapi.AccessReadWrite,
		"POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek": httpapi.AccessReadWrite,
		"POST /api/v1/stats/refresh":                                                      httpapi.AccessAdmin,
	}
	for _, rt := range httpapi.Routes() {
		key := rt.Method + " " + rt.Pattern
		if w, ok := want[key]; ok {
			delete(want, key)
			if rt.Access != w {
				t.Errorf("%s: access %v, want %v", key, rt.Access, w)
			}
		}
	}
	for key := range want {
		t.Errorf("%s is not in the route table", key)
	}
}
