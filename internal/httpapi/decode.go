package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
)

func badBody(format string, args ...any) error {
	return badRequest("bad body: " + fmt.Sprintf(format, args...))
}

func badQuery(format string, args ...any) error {
	return badRequest("bad query: " + fmt.Sprintf(format, args...))
}

// presizeMax bounds the buffer readBody allocates up front from a
// Content-Length, which the client chooses and need not send: a request
// declaring 1 MiB that sends 10 bytes must not hold 1 MiB. Past it, the
// buffer grows as bytes arrive.
const presizeMax = 64 << 10

// readBody reads the whole (already size-capped) request body. With a
// Content-Length it starts with one buffer of that size, up to presizeMax:
// io.ReadAll starts small and doubles, which allocated about twice each
// push body (an eighth of the allocation of a push at batch 100).
func readBody(r *http.Request) ([]byte, error) {
	body, err := readAll(r.Body, r.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, bodyTooLarge(tooBig.Limit).WithCause(err)
		}
		if errors.Is(err, errSlowBody) {
			return nil, err
		}
		// The text of a failed read can name the connection's addresses.
		return nil, badBody("the request body could not be read to its end")
	}
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	return body, nil
}

// readAll is io.ReadAll with a first buffer of size bytes, at most
// presizeMax, and room to see the end (bytes.Buffer reads on while MinRead
// bytes are free). A larger body grows the buffer by doubling, with what
// has arrived, so memory follows the bytes received rather than the bytes
// announced.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(size, presizeMax)+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// unmarshal parses body into v whatever the Content-Type said. A body that
// does not parse is "bad body: …" with a line and column; a value of the
// wrong type is "bad body: <path>: expected …, got …".
func unmarshal(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		return badBody("expected value at line 1 column 1")
	case errors.As(err, &syn):
		line, col := position(body, syn.Offset)
		return badBody("%s at line %d column %d", strings.TrimPrefix(syn.Error(), "json: "), line, col)
	case errors.As(err, &typ):
		return describeTypeError(body, v, typ)
	default:
		return fmt.Errorf("decode body: %w", err) // a bug of ours, not the client's
	}
}

// unmarshalHot is unmarshal for the bodies of the hot routes (push, ack,
// ack batch), which are a fifth of the broker's CPU at full push rate when
// decoded by encoding/json. It decodes with segmentio's encoding/json,
// about four times faster and made to decode as the standard library does
// (the fuzz targets of these decoders hold it to that: checkAgrees);
// anything it refuses goes to unmarshal, whose errors are the ones clients
// see. It recurses without a bound, so a body that may nest deeper than
// encoding/json allows goes to unmarshal too (which refuses it).
func unmarshalHot(body []byte, v any) error {
	if nestsWithin(body, maxNesting) && fastjson.Unmarshal(body, v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero() // what the failed decode left
	return unmarshal(body, v)
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

// nestsWithin says whether no array or object of body lies more than limit
// deep. A body with no more brackets than limit (two vectorized counts)
// cannot; only one with more is walked.
func nestsWithin(body []byte, limit int) bool {
	if bytes.Count(body, []byte{'['})+bytes.Count(body, []byte{'{'}) <= limit {
		return true
	}
	depth, inString := 0, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > limit {
				return false
			}
		case ']', '}':
			depth--
		}
	}
	return true
}

// position turns a byte offset into a 1-based line and column.
func position(body []byte, offset int64) (line, col int) {
	if offset > int64(len(body)) {
		offset = int64(len(body))
	}
	if offset < 1 {
		offset = 1
	}
	prefix := body[:offset-1]
	line = bytes.Count(prefix, []byte{'\n'}) + 1
	col = len(prefix) - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

// DecodePush parses a push body into store items (ids not yet minted).
func DecodePush(body []byte) ([]store.PushItem, error) {
	var b api.PushRequest
	if err := unmarshalHot(body, &b); err != nil {
		return nil, err
	}
	if b.Items == nil {
		return nil, missing("items")
	}
	return pushItems(body, b.Items, "items")
}

// pushItems checks and converts the push items at path of body.
func pushItems(body []byte, in []api.PushItem, path string) ([]store.PushItem, error) {
	items := make([]store.PushItem, len(in))
	for i := range in {
		it := &in[i]
		if it.Queue == "" {
			return nil, fieldError(elem(path, i), "queue", presence(body, elem(path, i), "queue"), "")
		}
		if len(it.Payload) == 0 {
			return nil, fieldError(elem(path, i), "payload", "missing", "null is a valid payload")
		}
		if err := checkPushItem(it, path, i); err != nil {
			return nil, err
		}
		items[i] = store.PushItem{
			Queue:         it.Queue,
			Partition:     it.Partition,
			Payload:       compactJSON(it.Payload),
			TraceID:       it.TraceID,
			TransactionID: it.TransactionID,
			Namespace:     it.Namespace,
			Task:          it.Task,
		}
	}
	return items, nil
}

// checkPushItem validates the item's names (the queue is known to be
// present).
func checkPushItem(it *api.PushItem, path string, i int) error {
	for _, f := range [...]struct {
		key  string
		v    string
		kind nameKind
	}{
		{"queue", it.Queue, kindName}, {"partition", it.Partition, kindName},
		{"transactionId", it.TransactionID, kindName}, {"namespace", it.Namespace, kindName},
		{"task", it.Task, kindName}, {"traceId", it.TraceID, kindID},
	} {
		if f.v == "" {
			continue
		}
		if err := checkBodyText(f.v, f.kind, at(elem(path, i), f.key)); err != nil {
			return err
		}
	}
	return nil
}

// ack checks the acknowledgement at element i of the array at list of
// body, or the body itself when list is "". explicit says whether an empty
// status was sent as "" (a failure) rather than left out (completed).
func ack(body []byte, a *api.Ack, list string, i int, explicit func() bool) (store.Ack, error) {
	if a.TransactionID == "" {
		return store.Ack{}, fieldError(elem(list, i), "transactionId", presence(body, elem(list, i), "transactionId"), "")
	}
	if a.PartitionID == "" {
		return store.Ack{}, fieldError(elem(list, i), "partitionId", presence(body, elem(list, i), "partitionId"),
			"a transactionId is only unique within its partition")
	}
	for _, f := range [...]struct {
		key  string
		v    string
		kind nameKind
	}{
		{"transactionId", a.TransactionID, kindName}, {"partitionId", a.PartitionID, kindID},
		{"leaseId", a.LeaseID, kindID}, {"consumerGroup", a.ConsumerGroup, kindName}, {"error", a.Error, kindText},
	} {
		if f.v == "" {
			continue
		}
		if err := checkBodyText(f.v, f.kind, at(elem(list, i), f.key)); err != nil {
			return store.Ack{}, err
		}
	}
	status := store.AckCompleted
	if a.Status != "" || explicit() {
		s := string(a.Status)
		status = broker.NormalizeStatus(&s)
	}
	return store.Ack{
		TransactionID: a.TransactionID,
		PartitionID:   a.PartitionID,
		LeaseID:       a.LeaseID,
		ConsumerGroup: a.ConsumerGroup,
		Error:         a.Error,
		Status:        status,
	}, nil
}

// DecodeAck parses a single-ack body.
func DecodeAck(body []byte) (store.Ack, error) {
	var a api.Ack
	if err := unmarshalHot(body, &a); err != nil {
		return store.Ack{}, err
	}
	return ack(body, &a, "", 0, func() bool { return presence(body, "", "status") == "empty" })
}

// DecodeAckBatch parses an ack-batch body; a top-level consumerGroup
// applies to every acknowledgement.
func DecodeAckBatch(body []byte) ([]store.Ack, error) {
	var b api.AckBatchRequest
	if err := unmarshalHot(body, &b); err != nil {
		return nil, err
	}
	if b.Acknowledgments == nil {
		return nil, missing("acknowledgments")
	}
	if b.ConsumerGroup != "" {
		if err := checkBodyText(b.ConsumerGroup, kindName, at("", "consumerGroup")); err != nil {
			return nil, err
		}
	}
	explicit := emptyStatuses(body, "acknowledgments")
	acks := make([]store.Ack, len(b.Acknowledgments))
	for i := range b.Acknowledgments {
		a, err := ack(body, &b.Acknowledgments[i], "acknowledgments", i, func() bool { return explicit(i) })
		if err != nil {
			return nil, err
		}
		if b.ConsumerGroup != "" {
			a.ConsumerGroup = b.ConsumerGroup
		}
		acks[i] = a
	}
	return acks, nil
}

// emptyStatuses returns a function that says whether element i of the
// array at list sent its status as "" (a failure, where a status left out
// completes). The first call looks, and only a body with an empty string
// in it pays for the look.
func emptyStatuses(body []byte, list string) func(i int) bool {
	var empty []bool
	looked := false
	return func(i int) bool {
		if !looked {
			looked = true
			if raw, ok := valueAt(body, list); ok && bytes.Contains(raw, []byte(`""`)) {
				var shadow []struct {
					Status *string `json:"status"`
				}
				if json.Unmarshal(raw, &shadow) == nil {
					empty = make([]bool, len(shadow))
					for j, e := range shadow {
						empty[j] = e.Status != nil && *e.Status == ""
					}
				}
			}
		}
		return i < len(empty) && empty[i]
	}
}

// Transaction is a decoded transaction request.
type Transaction struct {
	Ops            []broker.TxOperation
	RequiredLeases []string
}

// DecodeTransaction parses a transaction body.
func DecodeTransaction(body []byte) (*Transaction, error) {
	var b api.TransactionRequest
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Operations == nil {
		return nil, missing("operations")
	}
	if len(b.Operations) == 0 {
		return nil, badRequest("operations array cannot be empty")
	}
	for i, id := range b.RequiredLeases {
		if err := checkBodyText(id, kindID, func() string { return elem("requiredLeases", i) }); err != nil {
			return nil, err
		}
	}
	tx := &Transaction{RequiredLeases: b.RequiredLeases}
	explicit := emptyStatuses(body, "operations")
	for i := range b.Operations {
		op, path := &b.Operations[i], elem("operations", i)
		if op.Type == "" && presence(body, path, "type") == "missing" {
			return nil, fieldError(path, "type", "missing", "")
		}
		switch typ := op.Type; typ {
		case api.OperationPush:
			if op.Items == nil {
				return nil, fieldError(path, "items", "missing", "a push operation carries an items array")
			}
			items, err := pushItems(body, op.Items, path+".items")
			if err != nil {
				return nil, err
			}
			tx.Ops = append(tx.Ops, broker.TxOperation{Items: items})
		case api.OperationAck:
			a, err := ack(body, &op.Ack, "operations", i, func() bool { return explicit(i) })
			if err != nil {
				return nil, err
			}
			tx.Ops = append(tx.Ops, broker.TxOperation{Ack: &a})
		case api.OperationKV:
			kv, err := txKVOp(body, &op.KVOperation, path)
			if err != nil {
				return nil, err
			}
			tx.Ops = append(tx.Ops, broker.TxOperation{KV: &kv})
		default:
			return nil, badRequest(fmt.Sprintf("unsupported operation type %q at %s: expected push, ack or kv", typ, path))
		}
	}
	return tx, nil
}

// Configure is a decoded configure request. Options start from the
// defaults, so an option left out is reset (full replace).
type Configure struct {
	Namespace string
	Options   store.QueueOptions
	Queue     string
	Task      string
}

// DecodeConfigure parses a configure body.
func DecodeConfigure(body []byte) (*Configure, error) {
	// Options are decoded over the defaults, so an option left out is reset
	// to its default; "options": null leaves them all at the defaults.
	opts := wireOptions(store.DefaultQueueOptions())
	b := api.ConfigureRequest{Options: &opts}
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Queue == "" {
		return nil, fieldError("", "queue", presence(body, "", "queue"), "")
	}
	for key, v := range map[string]string{"queue": b.Queue, "namespace": b.Namespace, "task": b.Task} {
		if v != "" {
			if err := checkBodyText(v, kindName, at("", key)); err != nil {
				return nil, err
			}
		}
	}
	if err := checkOptionNames(body); err != nil {
		return nil, err
	}
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}
	// A retention period given without retentionEnabled turns retention on:
	// Queen's Go client and CLI have no retentionEnabled to send, so
	// "--retention 5" must mean what it says. An explicit false still wins.
	if (opts.RetentionSeconds > 0 || opts.CompletedRetentionSeconds > 0) && !optionGiven(body, "retentionEnabled") {
		opts.RetentionEnabled = true
	}
	return &Configure{Queue: b.Queue, Namespace: b.Namespace, Task: b.Task, Options: storeOptions(opts)}, nil
}

// DecodeExtend parses a lease-extend body; an empty body means defaults.
func DecodeExtend(body []byte) (int, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return 0, nil
	}
	var b api.LeaseExtendRequest
	if err := unmarshal(body, &b); err != nil {
		return 0, err
	}
	if err := rangeExtend.check(func() string { return "bad body: seconds" }, b.Seconds); err != nil {
		return 0, err
	}
	return b.Seconds, nil
}

// query reads typed message-plane query parameters: integers are base-10,
// booleans exactly true or false, and any bad value rejects the request.
type query struct {
	values url.Values
	err    error
}

func parseQuery(r *http.Request) *query {
	v, err := url.ParseQuery(r.URL.RawQuery)
	q := &query{values: v}
	if err != nil {
		q.err = badQuery("%v", err)
	}
	return q
}

func (q *query) str(name string) string { return q.values.Get(name) }

func (q *query) int(name string, def int, r intRange) int {
	s, ok := q.values[name]
	if !ok || q.err != nil {
		return def
	}
	n, err := strconv.Atoi(s[0])
	if err != nil {
		if len(s[0]) > 40 {
			s[0] = s[0][:40] + "…"
		}
		q.err = badQuery("%s: expected a base-10 integer, got %q", name, s[0])
		return def
	}
	if err := r.check(func() string { return "bad query: " + name }, n); err != nil {
		q.err = err
		return def
	}
	return n
}

// name reads a name parameter, validated.
func (q *query) name(name string) string {
	s := q.values.Get(name)
	if s != "" && q.err == nil {
		q.err = checkQueryText(name, s, kindName)
	}
	return s
}

func (q *query) bool(name string) bool {
	s, ok := q.values[name]
	if !ok || q.err != nil {
		return false
	}
	switch s[0] {
	case "true":
		return true
	case "false":
		return false
	}
	q.err = badQuery("%s: expected true or false, got %q", name, s[0])
	return false
}

// DefaultPopTimeout is the long-poll deadline when a pop gives none.
const DefaultPopTimeout = 30 * time.Second

// decodePop reads a pop's query string.
func decodePop(r *http.Request) (broker.PopRequest, error) {
	q := parseQuery(r)
	req := broker.PopRequest{
		Batch:         q.int("batch", 1, rangePopBatch),
		Wait:          q.bool("wait"),
		Timeout:       time.Duration(q.int("timeout", int(DefaultPopTimeout/time.Millisecond), rangePopTimeout)) * time.Millisecond,
		AutoAck:       q.bool("autoAck"),
		Partitions:    q.int("partitions", 1, rangePopPartition),
		ConsumerGroup: q.name("consumerGroup"),
		Namespace:     q.name("namespace"),
		Task:          q.name("task"),
	}
	if q.err != nil {
		return req, q.err
	}
	// subscriptionMode is not a typed parameter: new and new-only mean new,
	// anything else (Queen's JS client sends from_beginning) means all.
	switch q.str("subscriptionMode") {
	case "new", "new-only":
		req.SubscriptionMode = broker.SubscribeNew
	}
	switch from := q.str("subscriptionFrom"); from {
	case "":
	case "now":
		req.SubscriptionMode = broker.SubscribeNew
	default:
		t, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			return req, badQuery("subscriptionFrom: expected an RFC 3339 timestamp or now, got %q", from)
		}
		req.SubscriptionMode, req.SubscriptionFrom = broker.SubscribeTimestamp, t
	}
	return req, nil
}

// missing is the error of a required field that is absent (or null).
func missing(path string) error {
	return badBody("%s is missing", path)
}

// presence says why the required field key of the object at path (an
// elem path, "" for the body itself) decoded empty: "missing" when body
// leaves it out or sends null, "empty" when it sends "". It decodes body
// again, which only an answer of 400 (and an empty ack status) pays for.
func presence(body []byte, path, key string) string {
	raw, ok := valueAt(body, path)
	if ok {
		raw, ok = member(raw, key)
	}
	if !ok || string(raw) == "null" {
		return "missing"
	}
	return "empty"
}

// fieldError is the error of the required field key of the object at path,
// which is missing or empty; why, when given, says why it is required.
func fieldError(path, key, state, why string) error {
	if why != "" {
		return badBody("%s is %s (%s)", join(path, key), state, why)
	}
	return badBody("%s is %s", join(path, key), state)
}

// elem names element i of the array at path; "" (the body itself) when
// path is "". Paths are built only for errors, never per item.
func elem(path string, i int) string {
	if path == "" {
		return ""
	}
	return path + "[" + strconv.Itoa(i) + "]"
}
