package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
)

// viaEncodingJSON is the pop answer as encoding/json writes api.PopResponse,
// the wire type a client decodes it into: the hand-written encoder must
// write exactly that.
func viaEncodingJSON(t *testing.T, res *broker.PopResponse) []byte {
	first := res.Messages[0]
	out := api.PopResponse{Success: true, Queue: first.Queue, Partition: first.Partition, PartitionID: first.PartitionID,
		LeaseID: nullable(res.LeaseID), ConsumerGroup: res.ConsumerGroup}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, api.PopMessage{ID: m.ID, TransactionID: m.TransactionID,
			TraceID: nullable(m.TraceID), Data: m.Payload, ProducerSub: nullable(m.ProducerSub),
			CreatedAt: api.TimeOf(m.CreatedAt), PartitionID: m.PartitionID, Partition: m.Partition,
			LeaseID: nullable(res.LeaseID), ConsumerGroup: res.ConsumerGroup})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPopBodyIsWhatEncodingJSONWrites(t *testing.T) {
	at := time.Date(2026, 7, 30, 9, 12, 44, 31_400_000, time.FixedZone("x", 3600))
	for name, res := range map[string]*broker.PopResponse{
		"leased, two lanes": {ConsumerGroup: "billing", LeaseID: "0197f2b2-aaaa", Messages: []store.Message{
			{ID: "m1", TransactionID: "order-1", Payload: []byte(`{"id":1,"total":1999}`), CreatedAt: at,
				Queue: "orders", Partition: "acct-42", PartitionID: "p1", TraceID: "t1"},
			{ID: "m2", TransactionID: "order-2", Payload: []byte(`null`), CreatedAt: at,
				Queue: "orders", Partition: "acct 43", PartitionID: "p2", ProducerSub: "svc"},
		}},
		"autoAck, odd names": {ConsumerGroup: "__QUEUE_MODE__", Messages: []store.Message{
			{ID: "m3", TransactionID: `quote " and \ back <tag> & é 日本 ` + "\u2028\n\t\x01", Payload: []byte(`"text"`),
				CreatedAt: at, Queue: "q.with.dots", Partition: "Default", PartitionID: "p3"},
		}},
	} {
		got := appendPopBody(nil, res)
		want := viaEncodingJSON(t, res)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// FuzzAppendString: any string, valid UTF-8 or not, encodes to a JSON string
// that decodes to what encoding/json would decode from its own encoding.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é日本<>&", "\b\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Fatalf("appendString(%q) is not a JSON string: %v", s, err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("appendString(%q) decodes to %q, encoding/json's to %q", s, got, want)
		}
	})
}
