package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/streams"
)

// TestOpenAPIDescribesStreams drives the stream routes through the answers
// they document and validates every exchange against openapi.json, as
// TestOpenAPIDescribesAnswers does for the message plane.
func TestOpenAPIDescribesStreams(t *testing.T) {
	f := newOpenAPIFixture(t, broker.Config{})
	sx := streams.New(f.st, streams.Config{Wake: f.b.Notify})
	c := f.serve(httpapi.Config{Streams: sx, MaxBodyBytes: 4096})

	var reg struct {
		QueryID string `json:"query_id"`
	}
	c.decode(c.want(200, "POST", "/streams/v1/queries", `{"name":"counts","source_queue":"events","sink_queue":"totals","config_hash":"h1"}`), &reg)
	c.want(200, "POST", "/streams/v1/queries", `{"name":"counts","source_queue":"events","config_hash":"h1","reset":false,"sink_queue":null}`)
	c.want(409, "POST", "/streams/v1/queries", `{"name":"counts","source_queue":"events","config_hash":"h2"}`)
	c.want(200, "POST", "/streams/v1/queries", `{"name":"counts","source_queue":"events","config_hash":"h2","reset":true}`)
	c.want(400, "POST", "/streams/v1/queries", `{"source_queue":"events","config_hash":"h2"}`)
	c.want(400, "POST", "/streams/v1/queries", `[]`)
	c.want(400, "POST", "/streams/v1/queries", `{`)
	c.want(413, "POST", "/streams/v1/queries", `{"name":"`+strings.Repeat("x", 5000)+`"}`)

	c.want(201, "POST", "/api/v1/push", `{"items":[{"queue":"events","payload":{"k":"a"}},{"queue":"events","payload":{"k":"b"}}]}`)
	var pop struct {
		LeaseID  string
		Messages []struct{ TransactionID, PartitionID string }
	}
	c.decode(c.want(200, "GET", "/api/v1/pop/queue/events?batch=10", ""), &pop)
	m := pop.Messages[1]
	cycle := func(ack string) string {
		return fmt.Sprintf(`{"query_id":"%s","partition_id":"%s","consumer_group":"__QUEUE_MODE__","release_lease":true,`+
			`"state_ops":[{"type":"upsert","key":"w:a","value":{"windowEnd":1000,"count":2}},{"type":"delete","key":"x"},{"type":"upsert","key":"y"}],`+
			`"push_items":[{"queue":"totals","partition":"a","payload":{"count":2}},{"queue":"totals","payload":1,"transactionId":"t1","messageId":null}],`+
			`"ack":%s}`, reg.QueryID, m.PartitionID, ack)
	}
	ack := fmt.Sprintf(`{"transactionId":"%s","leaseId":"%s","status":"completed","count":2}`, m.TransactionID, pop.LeaseID)
	c.want(200, "POST", "/streams/v1/cycle", cycle(`{"transactionId":"nope","leaseId":"`+pop.LeaseID+`"}`))
	c.want(200, "POST", "/streams/v1/cycle", cycle(ack))
	c.want(200, "POST", "/streams/v1/cycle", cycle(ack)) // a replay
	c.want(200, "POST", "/streams/v1/cycle", cycle(`null`))
	c.want(200, "POST", "/streams/v1/cycle", fmt.Sprintf(`{"query_id":"%s","partition_id":"%s"}`, reg.QueryID, m.PartitionID))
	c.want(400, "POST", "/streams/v1/cycle", fmt.Sprintf(`{"query_id":"%s"}`, reg.QueryID))
	// A named cycle with refused contents (a state op "merge") is answered
	// 200 in its envelope; the document describes the cycle a client should
	// send, so that request is not one it accepts, and apitest covers it.
	c.want(400, "POST", "/streams/v1/cycle", `"cycle"`)

	state := fmt.Sprintf(`{"query_id":"%s","partition_id":"%s"`, reg.QueryID, m.PartitionID)
	c.want(200, "POST", "/streams/v1/state/get", state+`}`)
	c.want(200, "POST", "/streams/v1/state/get", state+`,"keys":["w:a","y"],"key_prefix":"w:","ripe_at_or_before":1000}`)
	c.want(200, "POST", "/streams/v1/state/get", state+`,"keys":null,"key_prefix":null,"ripe_at_or_before":null}`)
	c.want(400, "POST", "/streams/v1/state/get", `{"query_id":"`+reg.QueryID+`"}`)
	c.want(400, "POST", "/streams/v1/state/get", state+`,"ripe_at_or_before":"soon"}`)

	c.want(200, "GET", "/api/v1/streams/queries", "")
	c.want(200, "GET", "/api/v1/streams/queries?limit=1&offset=0", "")
	c.want(400, "GET", "/api/v1/streams/queries?limit=0", "")
	c.want(200, "GET", "/api/v1/streams/queries/counts", "")
	c.want(404, "GET", "/api/v1/streams/queries/nope", "")
	c.want(200, "DELETE", "/api/v1/streams/queries/counts", "")
	c.want(200, "DELETE", "/api/v1/streams/queries/counts", "")
	if err := sx.WaitPurged(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStreamRouteAccess pins the access level of every stream route
// (management.md §1.6: queries and cycle read-write, state/get read); the
// control plane reads them read-only and deletes them as admin, as queues.
func TestStreamRouteAccess(t *testing.T) {
	want := map[string]httpapi.Access{
		"POST /streams/v1/queries":              httpapi.AccessReadWrite,
		"POST /streams/v1/cycle":                httpapi.AccessReadWrite,
		"POST /streams/v1/state/get":            httpapi.AccessRead,
		"GET /api/v1/streams/queries":           httpapi.AccessRead,
		"GET /api/v1/streams/queries/{name}":    httpapi.AccessRead,
		"DELETE /api/v1/streams/queries/{name}": httpapi.AccessAdmin,
	}
	for _, rt := range httpapi.Routes() {
		key := rt.Method + " " + rt.Pattern
		if w, ok := want[key]; ok {
			delete(want, key)
			if rt.Access != w {
				t.Errorf("%s: access %v, want %v", key, rt.Access, w)
			}
			if rt.Scope != httpapi.ScopeTenant {
				t.Errorf("%s: scope %v, want tenant", key, rt.Scope)
			}
		}
	}
	for key := range want {
		t.Errorf("%s is not in the route table", key)
	}
}
