package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// The fuzz targets check the request decoders against arbitrary bodies:
// they never panic; a body they accept decodes to something the broker can
// use; a body they reject gets a 400 whose text is "bad body: …" or one of the
// documented pre-flight messages. `go test` runs the seeds below and the
// committed corpus under testdata/fuzz; `go test -fuzz=FuzzDecodePush` explores.

// Real requests, from the seeds (001) and message-plane.md.
var (
	seedPush = []string{
		`{"items":[{"queue":"orders","partition":"acct-42","transactionId":"order-1-created","payload":{"id":1,"total":1999}}]}`,
		`{ "items": [ { "queue": "orders", "partition": "acct-42", "transactionId": "order-1-created",
               "traceId": "0197f2b1-0000-7000-8000-000000000000", "payload": { "id": 1 } } ] }`,
		`{"items":[{"queue":"q","payload":null}]}`,
		`{"items":[]}`,
		`{"items":[{"queue":"q","payload":"text"},{"queue":"q","payload":[1,2,{"a":null}],"namespace":"ns","task":"t"}]}`,
		`{"items":[{"queue":"q"}]}`,
		`{"items":[{"payload":1}]}`,
		`{"items":[{"queue":5,"payload":1}]}`,
		`{"items":{}}`,
		`{}`,
		``,
		`{"items":[{"queue":"q","payload":{ "spaced" : [ 1 , 2 ] }}]}`,
	}
	seedAck = []string{
		`{"transactionId":"order-1-created","partitionId":"0197f2b0-...","leaseId":"0197f2b2-...","status":"completed","consumerGroup":"billing","error":null}`,
		`{"transactionId":"t-1","partitionId":"p","status":"dlq","error":"unparseable payload"}`,
		`{"transactionId":"t-1","partitionId":"p","status":null}`,
		`{"transactionId":"t-1"}`,
		`{"partitionId":"p"}`,
		`{"transactionId":"","partitionId":"p"}`,
		`{"transactionId":1,"partitionId":"p"}`,
		`null`,
		`[]`,
	}
	seedAckBatch = []string{
		`{"consumerGroup":"billing","acknowledgments":[` +
			`{"transactionId":"order-1-created","partitionId":"0197f2b0-...","leaseId":"0197f2b2-...","status":"completed"},` +
			`{"transactionId":"order-2-created","partitionId":"0197f2b0-...","leaseId":"0197f2b2-...","status":"dlq","error":"unparseable payload"}]}`,
		`{"acknowledgments":[]}`,
		`{"acknowledgments":[null]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","consumerGroup":"own"}],"consumerGroup":""}`,
		`{"acknowledgments":{}}`,
		`{"consumerGroup":"g"}`,
		`{"acknowledgments":[{"transactionId":"t"}]}`,
	}
	seedTransaction = []string{
		`{"operations":[` +
			`{"type":"push","items":[{"queue":"stage-2","partition":"acct-42","payload":{"value":2}}]},` +
			`{"type":"ack","transactionId":"order-1-created","partitionId":"0197f2b0-...","status":"completed","consumerGroup":"billing"}],` +
			`"requiredLeases":["0197f2b2-..."]}`,
		`{"operations":[{"type":"push","items":[{"queue":"stage-2","partition":"acct-42","payload":{"value":2},"transactionId":"t","traceId":"x"}]},` +
			`{"type":"ack","transactionId":"order-1-created","partitionId":"p","status":"completed","consumerGroup":"billing","leaseId":"l","error":null}],` +
			`"requiredLeases":["l"]}`,
		`{"operations":[]}`,
		`{"operations":[{"type":"pop"}]}`,
		`{"operations":[{"type":"push"}]}`,
		`{"operations":[{"type":"push","items":[]}]}`,
		`{"operations":[{"type":"ack"}]}`,
		`{"operations":[{}]}`,
		`{"operations":null}`,
		`{"requiredLeases":[null]}`,
		`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","items":[{"queue":"q","payload":1}]}]}`,
	}
	seedConfigure = []string{
		`{"queue":"orders","namespace":"billing","task":"process-invoice","options":{"leaseTime":300,"retryLimit":3,"priority":5,"encryptionEnabled":false}}`,
		`{"queue":"q"}`,
		`{"queue":"q","options":null}`,
		`{"queue":"q","options":{"leaseTime":"abc"}}`,
		`{"queue":"q","options":{"retryLimit":1.5}}`,
		`{"queue":"q","options":"fast"}`,
		`{"queue":""}`,
		`{"options":{}}`,
	}
	seedExtend = []string{``, `{}`, `{"seconds":60}`, `{"seconds":"60"}`, `{"seconds":-1}`, `[]`, `null`}
)

// preflight are the documented 400 texts that do not start with "bad body: ".
func preflight(msg string) bool {
	return msg == "operations array cannot be empty" || strings.HasPrefix(msg, "unsupported operation type ")
}

// quoted matches a Go-quoted string.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// checkErr checks that a decoder's error is a 400 with a documented text.
func checkErr(t *testing.T, body []byte, err error, allowPreflight bool) {
	t.Helper()
	var br *api.Error
	if !errors.As(err, &br) {
		t.Fatalf("body %q: error %v (%T) is not a bad request", body, err, err)
	}
	msg := err.Error()
	// Quoted parts echo the client's own text; the rest is ours and must
	// speak JSON, not Go.
	for _, typ := range []string{"httpapi.", "store.", "broker.", "*string", "*int", "[]", "struct", "json.", "map["} {
		if strings.Contains(quoted.ReplaceAllString(msg, `""`), typ) {
			t.Fatalf("body %q: error text %q names a Go type (%q)", body, msg, typ)
		}
	}
	if strings.HasPrefix(msg, "bad body: ") && len(msg) > len("bad body: ") {
		return
	}
	if allowPreflight && preflight(msg) {
		return
	}
	t.Fatalf("body %q: error text %q is neither \"bad body: …\" nor a documented pre-flight message", body, msg)
}

// checkWalk checks that whenever encoding/json reports a type error for
// body decoded into v, typeMismatch finds the misfit too, so a client never
// gets the fallback text.
func checkWalk(t *testing.T, body []byte, v any) {
	t.Helper()
	var typ *json.UnmarshalTypeError
	if err := json.Unmarshal(body, v); errors.As(err, &typ) {
		if _, _, ok := typeMismatch(body, reflect.TypeOf(v)); !ok {
			t.Fatalf("body %q: encoding/json reports %v, the walk finds no misfit", body, err)
		}
	}
}

// checkAgrees checks that the hot routes' fast decoder accepts no body
// that encoding/json refuses and decodes every body it accepts as
// encoding/json does (a body it refuses goes to encoding/json anyway).
// Bodies that are not UTF-8 are refused before decoding.
func checkAgrees[T any](t *testing.T, body []byte) {
	t.Helper()
	if checkUTF8(body) != nil || !nestsWithin(body, maxNesting) {
		return
	}
	var fast, std T
	errFast := fastjson.Unmarshal(body, &fast)
	errStd := json.Unmarshal(body, &std)
	switch {
	case errFast == nil && errStd != nil:
		t.Fatalf("body %q: the fast decoder accepts it, encoding/json says %v", body, errStd)
	case errFast == nil && !reflect.DeepEqual(fast, std):
		t.Fatalf("body %q: the fast decoder reads %+v, encoding/json %+v", body, fast, std)
	}
}

func checkItems(t *testing.T, body []byte, items []store.PushItem) {
	t.Helper()
	for i, it := range items {
		if it.Queue == "" {
			t.Fatalf("body %q: item %d decoded with an empty queue", body, i)
		}
		if !json.Valid(it.Payload) {
			t.Fatalf("body %q: item %d payload %q is not valid JSON", body, i, it.Payload)
		}
		if it.MessageID != "" || it.ProducerSub != "" {
			t.Fatalf("body %q: item %d came with server-side fields set: %+v", body, i, it)
		}
	}
}

func checkAck(t *testing.T, body []byte, a store.Ack) {
	t.Helper()
	if a.TransactionID == "" || a.PartitionID == "" {
		t.Fatalf("body %q: ack decoded with transactionId %q partitionId %q", body, a.TransactionID, a.PartitionID)
	}
	if a.Status < store.AckCompleted || a.Status > store.AckDLQ {
		t.Fatalf("body %q: ack status %d out of range", body, a.Status)
	}
}

func FuzzDecodePush(f *testing.F) {
	for _, s := range seedPush {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.PushRequest{})
		checkAgrees[api.PushRequest](t, body)
		items, err := DecodePush(body)
		if err != nil {
			checkErr(t, body, err, false)
			return
		}
		if items == nil {
			t.Fatalf("body %q: nil items and no error", body)
		}
		checkItems(t, body, items)
	})
}

func FuzzDecodeAck(f *testing.F) {
	for _, s := range seedAck {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.Ack{})
		checkAgrees[api.Ack](t, body)
		a, err := DecodeAck(body)
		if err != nil {
			checkErr(t, body, err, false)
			return
		}
		checkAck(t, body, a)
	})
}

func FuzzDecodeAckBatch(f *testing.F) {
	for _, s := range seedAckBatch {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.AckBatchRequest{})
		checkAgrees[api.AckBatchRequest](t, body)
		acks, err := DecodeAckBatch(body)
		if err != nil {
			checkErr(t, body, err, false)
			return
		}
		if acks == nil {
			t.Fatalf("body %q: nil acks and no error", body)
		}
		for _, a := range acks {
			checkAck(t, body, a)
		}
	})
}

func FuzzDecodeTransaction(f *testing.F) {
	for _, s := range seedTransaction {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkWalk(t, body, &api.TransactionRequest{})
		tx, err := DecodeTransaction(body)
		if err != nil {
			checkErr(t, body, err, true)
			return
		}
		if tx == nil || len(tx.Ops) == 0 {
			t.Fatalf("body %q: decoded a transaction without operations", body)
		}
		for i, op := range tx.Ops {
			switch {
			case op.Ack != nil && op.Items != nil:
				t.Fatalf("body %q: operation %d is both an ack and a push", body, i)
			case op.Ack != nil:
				checkAck(t, body, *op.Ack)
			case op.Items != nil:
				checkItems(t, body, op.Items)
			default:
				t.Fatalf("body %q: operation %d is neither an ack nor a push", body, i)
			}
		}
	})
}

func FuzzDecodeConfigure(f *testing.F) {
	for _, s := range seedConfigure {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		opts := wireOptions(store.DefaultQueueOptions())
		checkWalk(t, body, &api.ConfigureRequest{Options: &opts})
		c, err := DecodeConfigure(body)
		if err != nil {
			checkErr(t, body, err, false)
			return
		}
		if c.Queue == "" {
			t.Fatalf("body %q: configure decoded with an empty queue", body)
		}
	})
}

func FuzzDecodeExtend(f *testing.F) {
	for _, s := range seedExtend {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := DecodeExtend(body); err != nil {
			checkErr(t, body, err, false)
		}
	})
}

// TestDecodeSeeds pins the verdict on a few seed requests, so that a decoder
// that rejects everything cannot pass the fuzz properties.
func TestDecodeSeeds(t *testing.T) {
	items, err := DecodePush([]byte(seedPush[0]))
	if err != nil || len(items) != 1 || items[0].Queue != "orders" || items[0].Partition != "acct-42" ||
		items[0].TransactionID != "order-1-created" || string(items[0].Payload) != `{"id":1,"total":1999}` {
		t.Errorf("seed push: got %+v, %v", items, err)
	}
	if items, err := DecodePush([]byte(`{"items":[{"queue":"q","payload":null}]}`)); err != nil || string(items[0].Payload) != "null" {
		t.Errorf("push of a null payload: got %+v, %v; want payload null", items, err)
	}
	if _, err := DecodePush([]byte(`{"items":[{"queue":"q"}]}`)); err == nil {
		t.Error("push without payload: got no error")
	}
	a, err := DecodeAck([]byte(seedAck[0]))
	if err != nil || a.TransactionID != "order-1-created" || a.ConsumerGroup != "billing" || a.Status != store.AckCompleted {
		t.Errorf("seed ack: got %+v, %v", a, err)
	}
	acks, err := DecodeAckBatch([]byte(seedAckBatch[0]))
	if err != nil || len(acks) != 2 || acks[1].Status != store.AckDLQ || acks[1].Error != "unparseable payload" ||
		acks[0].ConsumerGroup != "billing" || acks[1].ConsumerGroup != "billing" {
		t.Errorf("seed ack batch: got %+v, %v", acks, err)
	}
	tx, err := DecodeTransaction([]byte(seedTransaction[0]))
	if err != nil || len(tx.Ops) != 2 || len(tx.Ops[0].Items) != 1 || tx.Ops[1].Ack == nil ||
		len(tx.RequiredLeases) != 1 || tx.RequiredLeases[0] != "0197f2b2-..." {
		t.Errorf("seed transaction: got %+v, %v", tx, err)
	}
	for body, want := range map[string]string{
		`{"operations":[]}`:               "operations array cannot be empty",
		`{"operations":[{"type":"pop"}]}`: `unsupported operation type "pop" at operations[0]: expected push, ack or kv`,
		``:                                "bad body: expected value at line 1 column 1",
	} {
		if _, err := DecodeTransaction([]byte(body)); err == nil || err.Error() != want {
			t.Errorf("transaction %q: got error %v, want %q", body, err, want)
		}
	}
}
