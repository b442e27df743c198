package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// TestDecodeErrors pins the 400 texts: JSON terms, the path of the field,
// missing and empty told apart.
func TestDecodeErrors(t *testing.T) {
	push := func(b []byte) error { _, err := DecodePush(b); return err }
	ack := func(b []byte) error { _, err := DecodeAck(b); return err }
	batch := func(b []byte) error { _, err := DecodeAckBatch(b); return err }
	tx := func(b []byte) error { _, err := DecodeTransaction(b); return err }
	configure := func(b []byte) error { _, err := DecodeConfigure(b); return err }
	extend := func(b []byte) error { _, err := DecodeExtend(b); return err }
	for _, tc := range []struct {
		name   string
		decode func([]byte) error
		body   string
		want   string
	}{
		{"push: empty body", push, ``, "bad body: expected value at line 1 column 1"},
		{"push: syntax", push, "{\n  \"items\": [}", "bad body: invalid character '}' looking for beginning of value at line 2 column 13"},
		{"push: items a string", push, `{"items":"x"}`, "bad body: items: expected an array, got a string"},
		{"push: items an object", push, `{"items":{}}`, "bad body: items: expected an array, got an object"},
		{"push: body an array", push, `[]`, "bad body: expected an object, got an array"},
		{"push: items missing", push, `{}`, "bad body: items is missing"},
		{"push: items null", push, `{"items":null}`, "bad body: items is missing"},
		{"push: item a number", push, `{"items":[{"queue":"q","payload":1},3]}`, "bad body: items[1]: expected an object, got a number"},
		{"push: queue a number", push, `{"items":[{"queue":"q","payload":1},{"queue":5,"payload":1}]}`, "bad body: items[1].queue: expected a string, got a number"},
		{"push: queue an array", push, `{"items":[{"queue":["q"],"payload":1}]}`, "bad body: items[0].queue: expected a string, got an array"},
		{"push: queue, key in other case", push, `{"items":[{"QUEUE":true,"payload":1}]}`, "bad body: items[0].QUEUE: expected a string, got a boolean"},
		{"push: queue empty", push, `{"items":[{"queue":"","payload":1}]}`, "bad body: items[0].queue is empty"},
		{"push: queue missing", push, `{"items":[{"payload":1}]}`, "bad body: items[0].queue is missing"},
		{"push: payload missing", push, `{"items":[{"queue":"q"}]}`, "bad body: items[0].payload is missing (null is a valid payload)"},
		{"push: partition a number", push, `{"items":[{"queue":"q","payload":{"a":[1]},"partition":7}]}`, "bad body: items[0].partition: expected a string, got a number"},
		{"ack: transactionId a number", ack, `{"transactionId":5,"partitionId":"p"}`, "bad body: transactionId: expected a string, got a number"},
		{"ack: transactionId missing", ack, `{"partitionId":"p"}`, "bad body: transactionId is missing"},
		{"ack: transactionId empty", ack, `{"transactionId":"","partitionId":"p"}`, "bad body: transactionId is empty"},
		{"ack: partitionId missing", ack, `{"transactionId":"t"}`, "bad body: partitionId is missing (a transactionId is only unique within its partition)"},
		{"ack: body an array", ack, `[{"transactionId":"t"}]`, "bad body: expected an object, got an array"},
		{"ack batch: not an array", batch, `{"acknowledgments":"x"}`, "bad body: acknowledgments: expected an array, got a string"},
		{"ack batch: missing", batch, `{"consumerGroup":"g"}`, "bad body: acknowledgments is missing"},
		{"ack batch: second item", batch, `{"acknowledgments":[{"transactionId":"t","partitionId":"p"},{"transactionId":"t"}]}`,
			"bad body: acknowledgments[1].partitionId is missing (a transactionId is only unique within its partition)"},
		{"ack batch: null item", batch, `{"acknowledgments":[null]}`, "bad body: acknowledgments[0].transactionId is missing"},
		{"ack batch: group a number", batch, `{"acknowledgments":[],"consumerGroup":1}`, "bad body: consumerGroup: expected a string, got a number"},
		{"transaction: operations missing", tx, `{}`, "bad body: operations is missing"},
		{"transaction: operations empty", tx, `{"operations":[]}`, "operations array cannot be empty"},
		{"transaction: type missing", tx, `{"operations":[{}]}`, "bad body: operations[0].type is missing"},
		{"transaction: type a number", tx, `{"operations":[{"type":1}]}`, "bad body: operations[0].type: expected a string, got a number"},
		{"transaction: unknown type", tx, `{"operations":[{"type":"pop"}]}`, `unsupported operation type "pop" at operations[0]: expected push, ack or kv`},
		{"transaction: push without items", tx, `{"operations":[{"type":"push"}]}`, "bad body: operations[0].items is missing (a push operation carries an items array)"},
		{"transaction: push item", tx, `{"operations":[{"type":"push","items":[{"queue":"","payload":1}]}]}`, "bad body: operations[0].items[0].queue is empty"},
		{"transaction: ack", tx, `{"operations":[{"type":"push","items":[]},{"type":"ack","transactionId":"t"}]}`,
			"bad body: operations[1].partitionId is missing (a transactionId is only unique within its partition)"},
		{"transaction: requiredLeases", tx, `{"operations":[{"type":"push","items":[]}],"requiredLeases":"l"}`, "bad body: requiredLeases: expected an array, got a string"},
		{"transaction: requiredLeases item", tx, `{"operations":[{"type":"push","items":[]}],"requiredLeases":["l",{}]}`, "bad body: requiredLeases[1]: expected a string, got an object"},
		{"configure: queue missing", configure, `{"options":{"leaseTime":10}}`, "bad body: queue is missing"},
		{"configure: queue empty", configure, `{"queue":""}`, "bad body: queue is empty"},
		{"configure: queue a number", configure, `{"queue":5}`, "bad body: queue: expected a string, got a number"},
		{"configure: option a string", configure, `{"queue":"q","options":{"leaseTime":"abc"}}`, "bad body: options.leaseTime: expected an integer, got a string"},
		{"configure: option a fraction", configure, `{"queue":"q","options":{"retryLimit":1.5}}`, "bad body: options.retryLimit: expected an integer, got 1.5"},
		{"configure: option too large", configure, `{"queue":"q","options":{"ttl":1e40}}`, "bad body: options.ttl: expected an integer, got 1e40"},
		{"configure: flag a string", configure, `{"queue":"q","options":{"encryptionEnabled":"yes"}}`, "bad body: options.encryptionEnabled: expected true or false, got a string"},
		{"configure: options a string", configure, `{"queue":"q","options":"fast"}`, "bad body: options: expected an object, got a string"},
		{"configure: unknown option", configure, `{"queue":"q","options":{"leaseTime":10,"dedupWindowSeconds":60}}`,
			"bad body: options.dedupWindowSeconds: unknown option (options are completedRetentionSeconds, " +
				"deadLetterQueue, delayedProcessing, dlqAfterMaxRetries, encryptionEnabled, leaseTime, maxSize, " +
				"maxWaitTimeSeconds, priority, retentionEnabled, retentionSeconds, retryDelay, retryLimit, ttl, windowBuffer)"},
		{"configure: misspelt option", configure, `{"queue":"q","options":{"retentionSecond":60}}`,
			"bad body: options.retentionSecond: unknown option (options are completedRetentionSeconds, " +
				"deadLetterQueue, delayedProcessing, dlqAfterMaxRetries, encryptionEnabled, leaseTime, maxSize, " +
				"maxWaitTimeSeconds, priority, retentionEnabled, retentionSeconds, retryDelay, retryLimit, ttl, windowBuffer)"},
		{"extend: seconds a string", extend, `{"seconds":"60"}`, "bad body: seconds: expected an integer, got a string"},
	} {
		err := tc.decode([]byte(tc.body))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %s\n got %v\nwant %s", tc.name, tc.body, err, tc.want)
		}
	}
}

// TestWireDefaultsAreTheStoreDefaults: the defaults a client reads in
// package api are those the broker resets an omitted option to.
func TestWireDefaultsAreTheStoreDefaults(t *testing.T) {
	if got := wireOptions(store.DefaultQueueOptions()); got != api.DefaultQueueOptions() {
		t.Fatalf("store defaults %+v, api defaults %+v", got, api.DefaultQueueOptions())
	}
}

func TestDecodeConfigureResetsOmittedOptions(t *testing.T) {
	for _, body := range []string{`{"queue":"q"}`, `{"queue":"q","options":null}`, `{"queue":"q","options":{}}`} {
		c, err := DecodeConfigure([]byte(body))
		if err != nil || c.Options.LeaseTime != 300 || c.Options.RetryLimit != 3 || c.Options.TTL != 3600 {
			t.Errorf("%s: %+v, %v; want the default options", body, c, err)
		}
	}
	c, err := DecodeConfigure([]byte(`{"queue":"q","options":{"leaseTime":10}}`))
	if err != nil || c.Options.LeaseTime != 10 || c.Options.RetryLimit != 3 {
		t.Errorf("one option: %+v, %v; want leaseTime 10 and the other defaults", c, err)
	}
}

func TestDecodePopErrors(t *testing.T) {
	for query, want := range map[string]string{
		"batch=abc":                         "bad query: batch: expected a base-10 integer, got \"abc\"",
		"batch=1.5":                         "bad query: batch: expected a base-10 integer, got \"1.5\"",
		"wait=1":                            "bad query: wait: expected true or false, got \"1\"",
		"autoAck=TRUE":                      "bad query: autoAck: expected true or false, got \"TRUE\"",
		"timeout=%zz":                       "bad query: invalid URL escape \"%zz\"",
		"subscriptionFrom=monday":           "bad query: subscriptionFrom: expected an RFC 3339 timestamp or now, got \"monday\"",
		"partitions=9999999999999999999999": "bad query: partitions: expected a base-10 integer, got \"9999999999999999999999\"",
	} {
		_, err := decodePop(httptest.NewRequest("GET", "/api/v1/pop/queue/q?"+query, nil))
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", query, err, want)
		}
	}
}

// BenchmarkDecode measures the decoders of the hot routes: a push of 100
// items and an ack batch of 100. Their allocations must not grow per item
// beyond the items themselves.
func BenchmarkDecode(b *testing.B) {
	var push, acks strings.Builder
	push.WriteString(`{"items":[`)
	acks.WriteString(`{"consumerGroup":"g","acknowledgments":[`)
	for i := range 100 {
		if i > 0 {
			push.WriteByte(',')
			acks.WriteByte(',')
		}
		fmt.Fprintf(&push, `{"queue":"orders","partition":"p%d","transactionId":"t%d","payload":{"n":%d}}`, i%8, i, i)
		fmt.Fprintf(&acks, `{"transactionId":"t%d","partitionId":"0197f2b0-0000-7000-8000-000000000000","leaseId":"0197f2b2-0000-7000-8000-000000000000","status":"completed"}`, i)
	}
	push.WriteString(`]}`)
	acks.WriteString(`]}`)
	b.Run("push=100", func(b *testing.B) {
		body := []byte(push.String())
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodePush(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ackBatch=100", func(b *testing.B) {
		body := []byte(acks.String())
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeAckBatch(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeDeepNesting: a body nested past encoding/json's limit is
// refused with its error, whichever decoder it meets (the fast one would
// recurse until the process dies), and a shallow body with more brackets
// than that limit decodes.
func TestDecodeDeepNesting(t *testing.T) {
	deep := `{"items":[{"queue":"q","payload":` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}]}`
	if _, err := DecodePush([]byte(deep)); err == nil || !strings.HasPrefix(err.Error(), "bad body: ") ||
		!strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("push nested 1,000,000 deep: %v, want bad body: … exceeded max depth", err)
	}
	deepInString := `{"items":[{"queue":"q","payload":"` + strings.Repeat("[", 20_000) + `"}]}`
	if items, err := DecodePush([]byte(deepInString)); err != nil || len(items) != 1 {
		t.Errorf("brackets inside a string: %v, %d items", err, len(items))
	}
	var wide strings.Builder
	wide.WriteString(`{"items":[`)
	for i := range 12_000 {
		if i > 0 {
			wide.WriteByte(',')
		}
		wide.WriteString(`{"queue":"q","payload":{"n":[1]}}`)
	}
	wide.WriteString(`]}`)
	if items, err := DecodePush([]byte(wide.String())); err != nil || len(items) != 12_000 {
		t.Errorf("12,000 shallow items: %v, %d items", err, len(items))
	}
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`[["[[["]]`, true}, {`[["[[[\"["]]`, true}, {`[[[]]]`, false}, {`[[]][[]]`, true}, {`{"a":{"b":[1]}}`, false},
	} {
		if got := nestsWithin([]byte(tc.body), 2); got != tc.want {
			t.Errorf("nestsWithin(%s, 2) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

// TestReadAll: a body is read whole whatever its Content-Length said, and a
// correct one is read into a single buffer of its size.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("x", 1000)
	for _, size := range []int64{-1, 0, 1, 999, 1000, 1001, 5000, presizeMax + 1} {
		got, err := readAll(iotest.OneByteReader(strings.NewReader(body)), size)
		if err != nil || string(got) != body {
			t.Errorf("size %d: read %d bytes, err %v; want the %d bytes", size, len(got), err, len(body))
		}
	}
	got, _ := readAll(strings.NewReader(body), int64(len(body)))
	if cap(got) != len(body)+bytes.MinRead {
		t.Errorf("cap %d for a body of %d announced, want %d: the buffer grew", cap(got), len(body),
			len(body)+bytes.MinRead)
	}
	if _, err := readAll(iotest.ErrReader(errors.New("boom")), 10); err == nil {
		t.Error("a failed read was not reported")
	}
}

// TestDecodeTellsAbsentFromEmpty: the wire types hold plain strings, so the
// decoders learn from the body whether a field that decoded "" was left
// out (or null) or sent empty, where the contract answers the two apart.
func TestDecodeTellsAbsentFromEmpty(t *testing.T) {
	for _, tc := range []struct {
		body string
		want store.AckStatus
	}{
		{`{"transactionId":"t","partitionId":"p"}`, store.AckCompleted},
		{`{"transactionId":"t","partitionId":"p","status":null}`, store.AckCompleted},
		{`{"transactionId":"t","partitionId":"p","status":""}`, store.AckFailed},
		{`{"transactionId":"t","partitionId":"p","STATUS":"","error":""}`, store.AckFailed},
		{`{"transactionId":"t","partitionId":"p","status":"","status":null}`, store.AckCompleted},
		{`{"transactionId":"t","partitionId":"p","error":""}`, store.AckCompleted},
	} {
		if a, err := DecodeAck([]byte(tc.body)); err != nil || a.Status != tc.want {
			t.Errorf("ack %s: status %v, %v; want %v", tc.body, a.Status, err, tc.want)
		}
	}
	acks, err := DecodeAckBatch([]byte(`{"acknowledgments":[{"transactionId":"a","partitionId":"p"},` +
		`{"transactionId":"b","partitionId":"p","status":""},{"transactionId":"c","partitionId":"p","status":"retry"}]}`))
	if err != nil || acks[0].Status != store.AckCompleted || acks[1].Status != store.AckFailed || acks[2].Status != store.AckRetry {
		t.Errorf("ack batch: %+v, %v", acks, err)
	}
	tx, err := DecodeTransaction([]byte(`{"operations":[{"type":"push","items":[{"queue":"q","payload":1}]},` +
		`{"type":"ack","transactionId":"a","partitionId":"p","status":""},{"type":"ack","transactionId":"b","partitionId":"p"}]}`))
	if err != nil || tx.Ops[1].Ack.Status != store.AckFailed || tx.Ops[2].Ack.Status != store.AckCompleted {
		t.Errorf("transaction acks: %+v, %v", tx, err)
	}
	for body, want := range map[string]string{
		`{"items":[{"queue":null,"payload":1}]}`:                         "bad body: items[0].queue is missing",
		`{"items":[{"queue":"q","payload":1},{"Queue":"","payload":1}]}`: "bad body: items[1].queue is empty",
		`{"ops":[{"op":"set","key":"k","value":1}]}`:                     "bad body: ops[0].namespace is missing",
		`{"ops":[{"op":"","namespace":"n","key":"k"}]}`:                  "bad body: ops[0].op is empty",
		`{"operations":[{"type":""}]}`:                                   `unsupported operation type "" at operations[0]: expected push, ack or kv`,
		`{"ids":[{"partitionId":"","transactionId":"t"}]}`:               "bad body: ids[0].partitionId is empty",
	} {
		var err error
		switch {
		case strings.HasPrefix(body, `{"items"`):
			_, err = DecodePush([]byte(body))
		case strings.HasPrefix(body, `{"ops"`):
			_, err = DecodeKVBatch([]byte(body))
		case strings.HasPrefix(body, `{"operations"`):
			_, err = DecodeTransaction([]byte(body))
		default:
			_, err = DecodeDLQRetry([]byte(body))
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", body, err, want)
		}
	}
	if ops, err := DecodeKVBatch([]byte(`{"ops":[{"op":"get","namespace":"","key":"k"}]}`)); err != nil || ops[0].Namespace != "" {
		t.Errorf("an empty namespace is the rules' to refuse, not the decoder's: %+v, %v", ops, err)
	}
}
