package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Fuzz targets of the stream routes' decoders, as fuzz_test.go's: they never
// panic; a body they accept decodes to something the service can use; a body
// they reject gets a 400 whose text is "bad body: …" or one of Queen's
// texts for the stream routes. `go test` runs the seeds.

var (
	seedStreamsRegister = []string{
		`{"name":"orders.per_customer_per_min","source_queue":"orders","sink_queue":"orders.totals","config_hash":"9f2c","reset":false}`,
		`{"name":"q","source_queue":"s","config_hash":"h","sink_queue":null,"reset":null}`,
		`{"name":"q","source_queue":"s"}`,
		`{"name":5,"source_queue":"s","config_hash":"h"}`,
		`{"name":"q","source_queue":"s","config_hash":"h","reset":"yes"}`,
		`[]`, `null`, `"x"`, ``, `{`,
	}
	seedStreamsCycle = []string{
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002",` +
			`"consumer_group":"streams.q","release_lease":false,` +
			`"state_ops":[{"type":"upsert","key":"tumb:60\u001fk\u001f1","value":{"count":3,"windowEnd":1}},{"type":"delete","key":"x"}],` +
			`"push_items":[{"queue":"sink","partition":"k","payload":{"n":1},"transactionId":"t","messageId":"0197f2b0-0000-7000-8000-000000000003"}],` +
			`"ack":{"transactionId":"t0","leaseId":"l","status":"completed","count":12}}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","ack":null,"state_ops":null,"push_items":null}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","ack":{"transactionId":"t","status":"dlq","error":"bad"}}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"p"}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001"}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","state_ops":[{"type":"merge","key":"k"}]}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","state_ops":[{"type":"upsert"}]}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","push_items":[{"queue":1,"payload":1}]}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","ack":{"transactionId":"t","count":"3"}}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","ack":{"transactionId":"t","status":"retry"}}`,
		`[]`, `null`, ``,
	}
	seedStreamsStateGet = []string{
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","keys":["a","b"],"key_prefix":"tumb:60\u001f","ripe_at_or_before":1717000000000}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","keys":null}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","keys":[1]}`,
		`{"query_id":"0197f2b0-0000-7000-8000-000000000001","partition_id":"0197f2b0-0000-7000-8000-000000000002","ripe_at_or_before":"x"}`,
		`{"partition_id":"0197f2b0-0000-7000-8000-000000000002"}`,
		`[]`, `{}`,
	}
)

// streamsTexts are the stream routes' 400 texts that do not start with
// "bad body: ".
func streamsText(msg string) bool {
	return msg == "request body must be a JSON object" || strings.HasSuffix(msg, " is required")
}

func checkStreamsErr(t *testing.T, body []byte, err error) {
	t.Helper()
	if err != nil && streamsText(err.Error()) {
		if _, ok := err.(*api.Error); !ok {
			t.Fatalf("body %q: error %v (%T) is not a bad request", body, err, err)
		}
		return
	}
	checkErr(t, body, err, false)
}

func FuzzDecodeStreamsRegister(f *testing.F) {
	for _, s := range seedStreamsRegister {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.StreamsRegisterRequest{})
		r, err := DecodeStreamsRegister(body)
		if err != nil {
			checkStreamsErr(t, body, err)
			return
		}
		if r.Name == "" || r.SourceQueue == "" || r.ConfigHash == "" {
			t.Fatalf("body %q: accepted as %+v", body, r)
		}
	})
}

func FuzzDecodeStreamsCycle(f *testing.F) {
	for _, s := range seedStreamsCycle {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.StreamsCycleRequest{})
		cy, err := DecodeStreamsCycle(body)
		if invalid := (*InvalidCycleError)(nil); errors.As(err, &invalid) {
			// Refused contents of a named cycle: answered in its envelope,
			// so the cycle and its ids come back with the error.
			if cy == nil || len(cy.QueryID) != 36 || len(cy.PartitionID) != 36 {
				t.Fatalf("body %q: refused contents without the named cycle: %+v", body, cy)
			}
			checkStreamsErr(t, body, invalid.Err)
			return
		}
		if err != nil {
			checkStreamsErr(t, body, err)
			return
		}
		if len(cy.QueryID) != 36 || len(cy.PartitionID) != 36 {
			t.Fatalf("body %q: ids %q %q are not canonical UUIDs", body, cy.QueryID, cy.PartitionID)
		}
		for i, op := range cy.StateOps {
			if !op.Delete && !json.Valid(op.Value) {
				t.Fatalf("body %q: state op %d value %q is not valid JSON", body, i, op.Value)
			}
		}
		checkItems(t, body, clearIDs(cy.Pushes))
		if a := cy.Ack; a != nil && (a.TransactionID == "" || a.Count < 0) {
			t.Fatalf("body %q: ack %+v", body, *a)
		}
	})
}

func FuzzDecodeStreamsStateGet(f *testing.F) {
	for _, s := range seedStreamsStateGet {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.StreamsStateGetRequest{})
		q, err := DecodeStreamsStateGet(body)
		if err != nil {
			checkStreamsErr(t, body, err)
			return
		}
		if len(q.QueryID) != 36 || len(q.PartitionID) != 36 {
			t.Fatalf("body %q: ids %q %q are not canonical UUIDs", body, q.QueryID, q.PartitionID)
		}
	})
}

// clearIDs returns items without the messageIds a cycle's client may choose
// (checkItems refuses server-side fields).
func clearIDs(items []store.PushItem) []store.PushItem {
	out := make([]store.PushItem, len(items))
	for i, it := range items {
		if it.MessageID != "" && len(it.MessageID) != 36 {
			panic("a client messageId that is not a canonical UUID: " + it.MessageID)
		}
		it.MessageID = ""
		out[i] = it
	}
	return out
}
