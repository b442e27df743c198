// Package apitest is the black-box HTTP test suite of the broker. It drives a
// real server over real sockets and asserts only what a client of Queen's
// HTTP/JSON API can observe: status codes, headers and bodies.
//
// Every storage driver runs the same suite from a three-line test:
//
//	func TestAPI(t *testing.T) {
//		apitest.Run(t, func(t *testing.T) store.Store { return newTestStore(t) })
//	}
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// queueMode is the consumer group name the broker reports when a client names none.
const queueMode = "__QUEUE_MODE__"

// StartServer starts a server on 127.0.0.1:0 over st, registers cleanup
// (Shutdown, then st.Close()) and returns the base URL, e.g.
// "http://127.0.0.1:41234".
func StartServer(t testing.TB, st store.Store, cfg server.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv, err := server.New(cfg, st)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("server Serve returned %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("server Serve did not return within 15s of Shutdown")
		}
		if err := st.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// suite holds what every test needs to start its own server.
type suite struct {
	newStore func(t *testing.T) store.Store
}

// server starts a fresh server over a fresh store and returns a client for it.
func (s *suite) server(t *testing.T) *client {
	t.Helper()
	return s.serverWith(t, server.Config{Version: "0.0.0-apitest"})
}

// serverWith is server with an explicit configuration.
func (s *suite) serverWith(t *testing.T, cfg server.Config) *client {
	t.Helper()
	st := s.newStore(t)
	c := newClient(StartServer(t, st, cfg))
	c.engine = st.Engine()
	t.Cleanup(c.hc.CloseIdleConnections) // runs before the server's shutdown
	return c
}

var nameSeq atomic.Int64

// uniq returns a queue (or group) name unique within this test process.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

// client is a tiny HTTP client for the broker.
type client struct {
	base   string
	engine string      // the engine of the store behind the server
	header http.Header // sent with every request (a token, a tenant)
	hc     *http.Client
}

// with returns a client for the same server that also sends the given
// header key/value pairs (a value of "" removes the key).
func (c *client) with(kv ...string) *client {
	d := *c
	d.header = c.header.Clone()
	if d.header == nil {
		d.header = http.Header{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			d.header.Del(kv[i])
		} else {
			d.header.Set(kv[i], kv[i+1])
		}
	}
	return &d
}

func newClient(base string) *client {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	// A redirect is an answer to check, never followed.
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{base: base, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second, CheckRedirect: noFollow}}
}

// response is what a client sees of one exchange.
type response struct {
	what   string // "POST /api/v1/push", for failure messages
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) String() string {
	return fmt.Sprintf("%s: status %d; body %s", r.what, r.Status, r.Body)
}

// rawBody is sent verbatim with the given Content-Type ("" sends none).
type rawBody struct {
	data        string
	contentType string
}

// chunkedBody is sent without a Content-Length (chunked transfer encoding).
type chunkedBody struct {
	data string
}

// send performs one request. body is nil (no body), a string (raw JSON text),
// a rawBody, a chunkedBody, or any value marshalled as JSON.
func (c *client) send(ctx context.Context, method, path string, body any) (*response, error) {
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case rawBody:
		rd, ct = strings.NewReader(b.data), b.contentType
	case chunkedBody:
		// A reader of unknown length makes the transport stream the body.
		rd, ct = io.MultiReader(strings.NewReader(b.data)), "application/json"
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("marshal request body: %w", err)
		}
		rd, ct = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if h := c.header.Get("Host"); h != "" {
		req.Host = h // net/http sends req.Host, never a Host header
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return &response{what: method + " " + path, Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// do is send that fails the test on a transport error.
func (c *client) do(t testing.TB, method, path string, body any) *response {
	t.Helper()
	r, err := c.send(context.Background(), method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// ---------------------------------------------------------------------------
// Generic assertions

// wantStatus fails unless r has the given status.
func wantStatus(t testing.TB, r *response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d; body %s", r.what, r.Status, status, r.Body)
	}
}

// wantJSON fails unless r has the given status, a JSON Content-Type and a body
// that decodes into v.
func wantJSON(t testing.TB, r *response, status int, v any) {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q, want application/json; body %s", r.what, ct, r.Body)
	}
	if v != nil {
		if err := json.Unmarshal(r.Body, v); err != nil {
			t.Fatalf("%s: body does not decode into %T: %v; body %s", r.what, v, err, r.Body)
		}
	}
}

// wantNoContent fails unless r is a 204 with no body and no Content-Length.
func wantNoContent(t testing.TB, r *response) {
	t.Helper()
	wantStatus(t, r, http.StatusNoContent)
	if len(r.Body) != 0 {
		t.Fatalf("%s: 204 with a body %q", r.what, r.Body)
	}
	if cl, ok := r.Header["Content-Length"]; ok {
		t.Fatalf("%s: 204 with Content-Length %q", r.what, cl)
	}
}

// wantError fails unless r has the given status and a body that is a JSON
// object whose "error" is a string starting with prefix. It returns the text.
func wantError(t testing.TB, r *response, status int, prefix string) string {
	t.Helper()
	var m map[string]any
	wantJSON(t, r, status, &m)
	msg, ok := m["error"].(string)
	if !ok {
		t.Fatalf("%s: error body has no string \"error\": %s", r.what, r.Body)
	}
	if !strings.HasPrefix(msg, prefix) {
		t.Fatalf("%s: error %q, want prefix %q", r.what, msg, prefix)
	}
	wantHumanError(t, r.what, msg)
	return msg
}

// goNames are Go's spellings of types; an error text speaks JSON to its
// client, so it names none of them.
var goNames = []string{"httpapi.", "store.", "broker.", "*string", "*int", "[]", "struct {", "json.", "map["}

// wantHumanError fails if an error text names a Go type.
func wantHumanError(t testing.TB, what, msg string) {
	t.Helper()
	for _, name := range goNames {
		if strings.Contains(msg, name) {
			t.Fatalf("%s: error %q names a Go type (%q)", what, msg, name)
		}
	}
}

// wantPlainError is wantError that also requires the body to be exactly
// {"error":"..."} (the broker's own error envelope has no other key).
func wantPlainError(t testing.TB, r *response, status int, prefix string) string {
	t.Helper()
	msg := wantError(t, r, status, prefix)
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	wantKeys(t, r.what+" error body", m, "error")
	return msg
}

// keysOf returns the sorted keys of m.
func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// wantKeys fails unless m has exactly the given keys.
func wantKeys(t testing.TB, what string, m map[string]any, keys ...string) {
	t.Helper()
	want := slices.Clone(keys)
	sort.Strings(want)
	if got := keysOf(m); !slices.Equal(got, want) {
		t.Fatalf("%s: keys %v, want exactly %v; object %v", what, got, want, m)
	}
}

// wantHasKeys fails unless m has at least the given keys.
func wantHasKeys(t testing.TB, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Fatalf("%s: key %q missing; keys %v", what, k, keysOf(m))
		}
	}
}

var (
	uuidV7Re    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	timestampRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
)

// wantUUIDv7 fails unless s is a lower-case UUIDv7.
func wantUUIDv7(t testing.TB, what, s string) {
	t.Helper()
	if !uuidV7Re.MatchString(s) {
		t.Fatalf("%s: %q is not a UUIDv7", what, s)
	}
}

// wantTimestamp fails unless s is YYYY-MM-DDTHH:MM:SS.mmmZ; it returns the time.
func wantTimestamp(t testing.TB, what, s string) time.Time {
	t.Helper()
	if !timestampRe.MatchString(s) {
		t.Fatalf("%s: %q is not a YYYY-MM-DDTHH:MM:SS.mmmZ timestamp", what, s)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s: %q: %v", what, s, err)
	}
	return ts
}

// jsonEqual reports whether two JSON texts denote the same value.
func jsonEqual(a, b []byte) bool {
	if len(bytes.TrimSpace(a)) == 0 {
		a = []byte("null")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("null")
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clock is a broker clock the test moves (server.Config.Now): a test of
// lease expiry or message ages advances it instead of sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(start time.Time) *clock { return &clock{now: start} }

// Now is the broker's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the time forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// serverAt is a server whose broker reads the time from clk.
func (s *suite) serverAt(t *testing.T, clk *clock) *client {
	t.Helper()
	return s.serverWith(t, server.Config{Version: "0.0.0-apitest", Now: clk.Now})
}

// nextMillisecond returns once the wall clock has moved past the millisecond
// of ts (timestamps on the wire have millisecond precision, so two events meant
// to be ordered in time must not share one).
func nextMillisecond(ts time.Time) {
	for !time.Now().After(ts.Truncate(time.Millisecond).Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// Push

// pushResult is one element of a push response.
type pushResult struct {
	Index         int    `json:"index"`
	MessageID     string `json:"message_id"`
	TransactionID string `json:"transaction_id"`
	QueueName     string `json:"queueName"`
	Status        string `json:"status"`
	Error         string `json:"error"`
}

// item builds a push item. kv are extra key/value pairs, e.g.
// "partition", "p1", "transactionId", "t1".
func item(queue string, payload any, kv ...string) map[string]any {
	m := map[string]any{"queue": queue, "payload": payload}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// pushRaw posts items and checks the common shape of the answer: 201, a
// JSON array of one element per item, in order, each with exactly the five
// documented keys. It returns the elements.
func (c *client) pushRaw(t testing.TB, items []map[string]any) []pushResult {
	t.Helper()
	r := c.do(t, "POST", "/api/v1/push", map[string]any{"items": items})
	var raw []map[string]any
	wantJSON(t, r, http.StatusCreated, &raw)
	if len(raw) != len(items) {
		t.Fatalf("%s: %d elements for %d items; body %s", r.what, len(raw), len(items), r.Body)
	}
	var res []pushResult
	_ = json.Unmarshal(r.Body, &res)
	for i, e := range raw {
		if res[i].Status == "queued" || res[i].Status == "duplicate" || res[i].Status == "buffered" {
			wantKeys(t, fmt.Sprintf("push element %d", i), e, "index", "message_id", "transaction_id", "queueName", "status")
		}
		if res[i].Index != i {
			t.Fatalf("%s: element %d has index %d; body %s", r.what, i, res[i].Index, r.Body)
		}
	}
	return res
}

// push pushes items and requires every one to be queued.
func (c *client) push(t testing.TB, items ...map[string]any) []pushResult {
	t.Helper()
	res := c.pushRaw(t, items)
	for i, e := range res {
		if e.Status != "queued" {
			t.Fatalf("push item %d: status %q, want queued; element %+v", i, e.Status, e)
		}
	}
	return res
}

// pushN pushes n messages {"n":0..n-1} to queue (partition "" = Default) in one call.
func (c *client) pushN(t testing.TB, queue, partition string, n int) []pushResult {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = item(queue, map[string]any{"n": i})
		if partition != "" {
			items[i]["partition"] = partition
		}
	}
	return c.push(t, items...)
}

// ---------------------------------------------------------------------------
// Pop

// popMessage is one delivered message.
type popMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	TraceID       *string         `json:"traceId"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       *string         `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
}

// n returns the "n" field of a payload built by pushN.
func (m popMessage) n(t testing.TB) int {
	t.Helper()
	var p struct {
		N *int `json:"n"`
	}
	if err := json.Unmarshal(m.Data, &p); err != nil || p.N == nil {
		t.Fatalf("message %s: payload %s has no integer \"n\"", m.ID, m.Data)
	}
	return *p.N
}

// popResp is a 200 pop envelope.
type popResp struct {
	Success       bool         `json:"success"`
	Queue         string       `json:"queue"`
	Partition     string       `json:"partition"`
	PartitionID   string       `json:"partitionId"`
	LeaseID       *string      `json:"leaseId"`
	ConsumerGroup string       `json:"consumerGroup"`
	Messages      []popMessage `json:"messages"`
}

// lease returns the top-level leaseId ("" when null).
func (p *popResp) lease() string {
	if p.LeaseID == nil {
		return ""
	}
	return *p.LeaseID
}

// ns returns the "n" payload fields of the messages, in order.
func (p *popResp) ns(t testing.TB) []int {
	t.Helper()
	out := make([]int, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.n(t)
	}
	return out
}

// queuePath is the wildcard pop route of queue.
func queuePath(queue string) string {
	return "/api/v1/pop/queue/" + url.PathEscape(queue)
}

// partitionPath is the pinned pop route of (queue, partition).
func partitionPath(queue, partition string) string {
	return queuePath(queue) + "/partition/" + url.PathEscape(partition)
}

// pop performs a pop and returns nil for a (well-formed) 204, or the checked
// envelope for a 200. Any other status fails the test.
func (c *client) pop(t testing.TB, path string) *popResp {
	t.Helper()
	r := c.do(t, "GET", path, nil)
	if r.Status == http.StatusNoContent {
		wantNoContent(t, r)
		return nil
	}
	return checkPop(t, r)
}

// popOK pops and requires a 200.
func (c *client) popOK(t testing.TB, path string) *popResp {
	t.Helper()
	p := c.pop(t, path)
	if p == nil {
		t.Fatalf("GET %s: 204, want 200 with messages", path)
	}
	return p
}

// popNone pops and requires a 204.
func (c *client) popNone(t testing.TB, path string) {
	t.Helper()
	if p := c.pop(t, path); p != nil {
		t.Fatalf("GET %s: 200 with %d messages (first %s, data %s), want 204", path, len(p.Messages), p.Messages[0].ID, p.Messages[0].Data)
	}
}

// waitPop polls a pop until it answers 200 (e.g. until a lease expires).
func (c *client) waitPop(t testing.TB, path string, timeout time.Duration) *popResp {
	t.Helper()
	var p *popResp
	waitFor(t, timeout, "GET "+path+" to deliver", func() bool {
		p = c.pop(t, path)
		return p != nil
	})
	return p
}

// checkPop checks the shape of a 200 pop answer and returns it decoded.
func checkPop(t testing.TB, r *response) *popResp {
	t.Helper()
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what+" envelope", raw, "success", "queue", "partition", "partitionId", "leaseId", "consumerGroup", "messages")
	var p popResp
	_ = json.Unmarshal(r.Body, &p)
	if !p.Success {
		t.Fatalf("%s: success is not true; body %s", r.what, r.Body)
	}
	msgs, _ := raw["messages"].([]any)
	if len(msgs) == 0 || len(p.Messages) != len(msgs) {
		t.Fatalf("%s: 200 without messages; body %s", r.what, r.Body)
	}
	for i, rm := range msgs {
		mm, ok := rm.(map[string]any)
		if !ok {
			t.Fatalf("%s: message %d is not an object; body %s", r.what, i, r.Body)
		}
		wantKeys(t, fmt.Sprintf("%s message %d", r.what, i), mm,
			"id", "transactionId", "traceId", "data", "producerSub", "createdAt", "partitionId", "partition", "leaseId", "consumerGroup")
	}
	first := p.Messages[0]
	if p.Partition != first.Partition || p.PartitionID != first.PartitionID {
		t.Fatalf("%s: top-level partition %q/%s, first message's %q/%s", r.what, p.Partition, p.PartitionID, first.Partition, first.PartitionID)
	}
	if p.LeaseID != nil {
		wantUUIDv7(t, r.what+" leaseId", *p.LeaseID)
	}
	for i, m := range p.Messages {
		what := fmt.Sprintf("%s message %d", r.what, i)
		wantUUIDv7(t, what+" id", m.ID)
		wantUUIDv7(t, what+" partitionId", m.PartitionID)
		wantTimestamp(t, what+" createdAt", m.CreatedAt)
		if m.TransactionID == "" {
			t.Fatalf("%s: empty transactionId", what)
		}
		if (m.LeaseID == nil) != (p.LeaseID == nil) || (m.LeaseID != nil && *m.LeaseID != *p.LeaseID) {
			t.Fatalf("%s: leaseId %v differs from the top-level leaseId %v; body %s", what, strp(m.LeaseID), strp(p.LeaseID), r.Body)
		}
		if m.ConsumerGroup != p.ConsumerGroup {
			t.Fatalf("%s: consumerGroup %q, top level %q", what, m.ConsumerGroup, p.ConsumerGroup)
		}
	}
	return &p
}

func strp(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// ---------------------------------------------------------------------------
// Ack

// ackResult is one element of an ack response.
type ackResult struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

func (a ackResult) String() string {
	return fmt.Sprintf("{index:%d transactionId:%q success:%v error:%s leaseReleased:%v dlq:%v noop:%v}",
		a.Index, a.TransactionID, a.Success, strp(a.Error), a.LeaseReleased, a.DLQ, a.Noop)
}

// errText returns the error text ("" when null).
func (a ackResult) errText() string {
	if a.Error == nil {
		return ""
	}
	return *a.Error
}

// ackOf builds the acknowledgement of m with status ("" omits the key) and
// m's own leaseId (if any).
func ackOf(m popMessage, status string) map[string]any {
	a := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID}
	if m.LeaseID != nil {
		a["leaseId"] = *m.LeaseID
	}
	if status != "" {
		a["status"] = status
	}
	return a
}

// noLease returns a copy of an acknowledgement without its leaseId.
func noLease(a map[string]any) map[string]any {
	b := make(map[string]any, len(a))
	for k, v := range a {
		if k != "leaseId" {
			b[k] = v
		}
	}
	return b
}

// checkAcks checks an ack answer: 200, one element per ack in order, each
// with exactly the seven documented keys and the ack's transactionId.
func checkAcks(t testing.TB, r *response, acks []map[string]any) []ackResult {
	t.Helper()
	var raw []map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	if len(raw) != len(acks) {
		t.Fatalf("%s: %d elements for %d acks; body %s", r.what, len(raw), len(acks), r.Body)
	}
	var res []ackResult
	_ = json.Unmarshal(r.Body, &res)
	for i, e := range raw {
		wantKeys(t, fmt.Sprintf("%s element %d", r.what, i), e, "index", "transactionId", "success", "error", "leaseReleased", "dlq", "noop")
		if res[i].Index != i {
			t.Fatalf("%s: element %d has index %d; body %s", r.what, i, res[i].Index, r.Body)
		}
		if want, _ := acks[i]["transactionId"].(string); res[i].TransactionID != want {
			t.Fatalf("%s: element %d has transactionId %q, want %q (request order); body %s", r.what, i, res[i].TransactionID, want, r.Body)
		}
		if res[i].Success && res[i].Error != nil {
			t.Fatalf("%s: element %d succeeded with error %q", r.what, i, *res[i].Error)
		}
	}
	return res
}

// ack posts one acknowledgement to /api/v1/ack in group ("" = none sent).
func (c *client) ack(t testing.TB, group string, a map[string]any) ackResult {
	t.Helper()
	body := make(map[string]any, len(a)+1)
	for k, v := range a {
		body[k] = v
	}
	if group != "" {
		body["consumerGroup"] = group
	}
	r := c.do(t, "POST", "/api/v1/ack", body)
	return checkAcks(t, r, []map[string]any{a})[0]
}

// ackBatch posts acknowledgements to /api/v1/ack/batch in group ("" = none sent).
func (c *client) ackBatch(t testing.TB, group string, acks ...map[string]any) []ackResult {
	t.Helper()
	body := map[string]any{"acknowledgments": acks}
	if group != "" {
		body["consumerGroup"] = group
	}
	r := c.do(t, "POST", "/api/v1/ack/batch", body)
	return checkAcks(t, r, acks)
}

// ackAll acks every message of p as completed in one batch and requires success.
func (c *client) ackAll(t testing.TB, group string, p *popResp) {
	t.Helper()
	acks := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		acks[i] = ackOf(m, "completed")
	}
	for i, a := range c.ackBatch(t, group, acks...) {
		if !a.Success {
			t.Fatalf("ack of message %d (%s): %v, want success", i, p.Messages[i].ID, a)
		}
	}
}

// wantAck fails unless a has the given success, noop and error text.
func wantAck(t testing.TB, what string, a ackResult, success, noop bool, errText string) {
	t.Helper()
	if a.Success != success || a.Noop != noop || a.errText() != errText || (errText == "" && a.Error != nil) {
		t.Fatalf("%s: got %v, want success:%v noop:%v error:%q", what, a, success, noop, errText)
	}
}

// ---------------------------------------------------------------------------
// Configure

// configure posts a configuration and requires a 200; it returns the body.
func (c *client) configure(t testing.TB, queue string, options map[string]any, kv ...string) map[string]any {
	t.Helper()
	body := map[string]any{"queue": queue}
	if options != nil {
		body["options"] = options
	}
	for i := 0; i+1 < len(kv); i += 2 {
		body[kv[i]] = kv[i+1]
	}
	r := c.do(t, "POST", "/api/v1/configure", body)
	var m map[string]any
	wantJSON(t, r, http.StatusOK, &m)
	return m
}
