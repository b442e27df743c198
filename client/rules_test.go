package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
)

// These tests hold the client to the rules of Queen's guide to writing a
// client, against a server that misbehaves on purpose.

func fast(url string) client.Config {
	return client.Config{URL: url, Token: "tok", Retry: client.Retry{Base: time.Millisecond, Max: 4 * time.Millisecond}}
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBearerTokenOnly(t *testing.T) {
	var auth, apiKey, query atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		apiKey.Store(r.Header.Get("X-Api-Key"))
		query.Store(r.URL.RawQuery)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := newClient(t, fast(srv.URL))
	if _, err := c.Pop(context.Background(), "q", client.PopOptions{}); err != nil {
		t.Fatal(err)
	}
	if auth.Load() != "Bearer tok" || apiKey.Load() != "" {
		t.Errorf("Authorization %q, X-Api-Key %q", auth.Load(), apiKey.Load())
	}
	if q := query.Load().(string); q != "" {
		t.Errorf("query %q: the token or autoAck must not be in it", q)
	}
}

func TestNoContentIsNoMessages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	res, err := newClient(t, fast(srv.URL)).Pop(context.Background(), "q", client.PopOptions{Wait: true, Timeout: time.Second})
	if res != nil || err != nil {
		t.Fatalf("Pop = %v, %v; want nil, nil", res, err)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	var n atomic.Int32
	var first, second atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			first.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate limit exceeded","code":"rate_limited"}`)
			return
		}
		second.Store(time.Now().UnixNano())
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `[{"index":0,"message_id":"m","transaction_id":"t","queueName":"q","status":"queued"}]`)
	}))
	defer srv.Close()
	item, _ := client.Item("q", 1)
	if _, err := newClient(t, fast(srv.URL)).Push(context.Background(), item); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("%d requests, want 2", n.Load())
	}
	if d := time.Duration(second.Load() - first.Load()); d < 900*time.Millisecond {
		t.Errorf("retried after %v; Retry-After asked for 1 s", d)
	}
}

func TestBackoffWithoutRetryAfterStopsAfterTenAttempts(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"rate limit exceeded"}`)
	}))
	defer srv.Close()
	_, err := newClient(t, fast(srv.URL)).Health(context.Background())
	if !errors.Is(err, client.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if n.Load() != 10 {
		t.Errorf("%d attempts, want 10", n.Load())
	}
}

func TestLongPollRetriesRateLimitWithoutBound(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 15 {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate limit exceeded"}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	_, err := newClient(t, fast(srv.URL)).Pop(context.Background(), "q", client.PopOptions{Wait: true, Timeout: time.Second})
	if err != nil || n.Load() != 16 {
		t.Fatalf("err %v after %d requests; want nil after 16", err, n.Load())
	}
}

func TestForbiddenStopsAtOnce(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":"Insufficient permissions","code":"forbidden"}`)
	}))
	defer srv.Close()
	c := newClient(t, fast(srv.URL))
	_, err := c.Pop(context.Background(), "q", client.PopOptions{Wait: true, Timeout: time.Second})
	if !errors.Is(err, client.ErrForbidden) || n.Load() != 1 {
		t.Fatalf("err %v after %d requests; want ErrForbidden after 1", err, n.Load())
	}
	// Consume gives up too, instead of polling forever.
	err = c.Consume(context.Background(), "q", func(context.Context, []api.PopMessage) error { return nil }, client.ConsumeOptions{})
	if !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("Consume = %v, want ErrForbidden", err)
	}
}

func TestPartialVerdicts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/push": // two items sent, one verdict back
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `[{"index":0,"message_id":"m","transaction_id":"t","queueName":"q","status":"queued"}]`)
		case "/api/v1/ack/batch": // a 200 whose second verdict failed
			fmt.Fprint(w, `[{"index":0,"transactionId":"a","success":true,"error":null,"leaseReleased":false,"dlq":false,"noop":false},`+
				`{"index":1,"transactionId":"b","success":false,"error":"invalid or expired lease","leaseReleased":false,"dlq":false,"noop":false}]`)
		}
	}))
	defer srv.Close()
	c := newClient(t, fast(srv.URL))
	a, _ := client.Item("q", 1)
	b, _ := client.Item("q", 2)
	_, err := c.Push(context.Background(), a, b)
	var pe *client.PartialError
	if !errors.As(err, &pe) || pe.Sent != 2 || pe.Got != 1 {
		t.Fatalf("push: %v", err)
	}
	verdicts, err := c.AckBatch(context.Background(), []api.Ack{{TransactionID: "a", PartitionID: "p"}, {TransactionID: "b", PartitionID: "p"}})
	if !errors.Is(err, client.ErrPartial) || len(verdicts) != 2 {
		t.Fatalf("ack: %v, %d verdicts", err, len(verdicts))
	}
	if errors.As(err, &pe); len(pe.Failed) != 1 || pe.Failed[0].TransactionID != "b" || pe.Failed[0].Reason != "invalid or expired lease" {
		t.Errorf("failed items %+v", pe.Failed)
	}
}

// A long poll's HTTP timeout is the poll's own plus 5 s: a broker that
// answers late (within that slack) is waited for, not abandoned.
func TestSlowLongPollIsWaitedFor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("timeout") != "1000" || r.URL.Query().Get("wait") != "true" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		time.Sleep(2500 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg := fast(srv.URL)
	cfg.RequestTimeout = 500 * time.Millisecond // an ordinary request would have given up
	_, err := newClient(t, cfg).Pop(context.Background(), "q", client.PopOptions{Wait: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
}

func TestPushGivesEveryItemATransactionID(t *testing.T) {
	var got api.PushRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `[{"index":0,"message_id":"m","transaction_id":"t","queueName":"q","status":"queued"}]`)
	}))
	defer srv.Close()
	item, _ := client.Item("q", map[string]int{"a": 1})
	if _, err := newClient(t, fast(srv.URL)).Push(context.Background(), item); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 || len(got.Items[0].TransactionID) != 36 || string(got.Items[0].Payload) != `{"a":1}` {
		t.Errorf("sent %+v", got.Items)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"Queue not found"}`)
	}))
	defer srv.Close()
	_, err := newClient(t, fast(srv.URL)).Group(context.Background(), "g")
	var ae *api.Error
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &ae) || ae.Message != "Queue not found" {
		t.Fatalf("err = %#v", err)
	}
}

func TestLanesSpreadAndStay(t *testing.T) {
	c := newClient(t, client.Config{URLs: []string{"http://a:1", "http://b:1", "http://c:1"}})
	seen := map[string]int{}
	for i := range 300 {
		lane := client.Lane("q", fmt.Sprint("p", i), "g")
		b := c.Broker(lane)
		if c.Broker(lane) != b {
			t.Fatal("a lane moved")
		}
		seen[b]++
	}
	for _, b := range []string{"http://a:1", "http://b:1", "http://c:1"} {
		if seen[b] < 50 {
			t.Errorf("broker %s has %d of 300 lanes: %v", b, seen[b], seen)
		}
	}
	// Removing a broker moves only its own lanes.
	two := newClient(t, client.Config{URLs: []string{"http://a:1", "http://b:1"}})
	for i := range 300 {
		lane := client.Lane("q", fmt.Sprint("p", i), "g")
		if b := c.Broker(lane); b != "http://c:1" && two.Broker(lane) != b {
			t.Fatalf("lane %s moved from %s to %s", lane, b, two.Broker(lane))
		}
	}
}
