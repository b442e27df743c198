package delivery_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/delivery"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// engine opens a fresh store; open again (a second broker) shares it when
// the engine allows.
type engine struct {
	name string
	open func(t *testing.T) func(t *testing.T) store.Store
}

var engines = []engine{
	{"sqlite", func(t *testing.T) func(t *testing.T) store.Store {
		dir := filepath.Join(t.TempDir(), "data")
		return func(t *testing.T) store.Store {
			st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
	}},
	{"postgres", func(t *testing.T) func(t *testing.T) store.Store {
		u := pgtest.URL(t)
		schema := pgtest.Schema(t, "delivery_")
		return func(t *testing.T) store.Store {
			st, err := postgres.Open(context.Background(), postgres.Config{URL: u, Schema: schema, PoolSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
	}},
}

// node is one broker with its delivery service.
type node struct {
	st  store.Store
	b   *broker.Broker
	svc *delivery.Service
	ack *ackCounter
}

// ackCounter wraps the broker and counts the successful completions of
// each message, to prove each was acknowledged once.
type ackCounter struct {
	*broker.Broker
	t     testing.TB
	mu    sync.Mutex
	acked map[string]int // by transaction id
}

func (a *ackCounter) Ack(ctx context.Context, c broker.Caller, acks []store.Ack) ([]store.AckResult, error) {
	res, err := a.Broker.Ack(ctx, c, acks)
	if err != nil {
		a.t.Logf("ack failed: %v", err)
		return res, err
	}
	a.mu.Lock()
	for i, r := range res {
		if acks[i].Status == store.AckCompleted && r.Success && !r.Noop {
			a.acked[acks[i].TransactionID]++
		} else if acks[i].Status == store.AckCompleted {
			a.t.Logf("ack of %s: %+v", acks[i].TransactionID, r)
		}
	}
	a.mu.Unlock()
	return res, err
}

func (a *ackCounter) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

func fastConfig() delivery.Config {
	return delivery.Config{Allow: []string{"127.0.0.1/32"}, Timeout: time.Second, Attempts: 2,
		BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond, Workers: 16, Batch: 25,
		PollWait: 300 * time.Millisecond, ReloadEvery: 100 * time.Millisecond}
}

func startNode(t *testing.T, st store.Store, cfg delivery.Config) *node {
	t.Helper()
	b := broker.New(st, broker.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan struct{})
	go func() { defer close(listened); _ = st.Listen(ctx, b.Wake) }()
	ac := &ackCounter{Broker: b, t: t, acked: map[string]int{}}
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := delivery.New(st, ac, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svc.Services() {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, s := range svc.Services() {
			s.Stop()
		}
		b.Stop()
		cancel()
		<-listened
	})
	return &node{st: st, b: b, svc: svc, ack: ac}
}

// receiver is a local webhook receiver: it verifies signatures, checks
// per-partition order and that no partition has two deliveries at once,
// and answers per a plan.
type receiver struct {
	t      *testing.T
	secret atomic.Pointer[string]
	plan   func(seq, attempt int) (status int, hang bool)
	mu     sync.Mutex
	last   map[string]int // partition -> last seq received
	busy   map[string]int // partition -> deliveries in flight
	tries  map[int]int    // seq -> requests
	ok     map[int]int    // seq -> 2xx answered
	lat    []time.Duration
	bad    []string
}

func newReceiver(t *testing.T, plan func(seq, attempt int) (int, bool)) (*receiver, *httptest.Server) {
	r := &receiver{t: t, plan: plan, last: map[string]int{}, busy: map[string]int{}, tries: map[int]int{},
		ok: map[int]int{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) < 20 {
		r.bad = append(r.bad, fmt.Sprintf(format, args...))
	}
}

// verify checks the signature headers as a receiver would, from the
// documented canonical string.
func verify(secret string, req *http.Request, body []byte) bool {
	sum := sha256.Sum256(body)
	sha := hex.EncodeToString(sum[:])
	if req.Header.Get("X-Queuey-Content-SHA256") != sha {
		return false
	}
	canonical := strings.Join([]string{"QUEUEY-HMAC-SHA256", req.Method, req.URL.EscapedPath(), req.URL.RawQuery, sha,
		req.Header.Get("X-Queuey-Key-Id"), req.Header.Get("X-Queuey-Timestamp"), req.Header.Get("X-Queuey-Nonce")}, "\n")
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(canonical))
	return hmac.Equal([]byte(hex.EncodeToString(m.Sum(nil))), []byte(req.Header.Get("X-Queuey-Signature")))
}

type event struct {
	P   string `json:"p"`
	Seq int    `json:"seq"`
	At  int64  `json:"at"` // Unix microseconds at push
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		r.fail("body %q: %v", body, err)
		w.WriteHeader(400)
		return
	}
	if s := r.secret.Load(); s != nil && !verify(*s, req, body) {
		r.fail("seq %d: signature does not verify", ev.Seq)
	}
	if req.Header.Get("X-Queuey-Event-Id") == "" || req.Header.Get("Idempotency-Key") == "" ||
		!strings.HasSuffix(req.Header.Get("X-Queuey-Path"), ":hooks") {
		r.fail("seq %d: headers %v", ev.Seq, req.Header)
	}
	r.mu.Lock()
	if r.busy[ev.P]++; r.busy[ev.P] > 1 {
		r.bad = append(r.bad, fmt.Sprintf("partition %s: two deliveries at once", ev.P))
	}
	if last, ok := r.last[ev.P]; ok && ev.Seq < last {
		r.bad = append(r.bad, fmt.Sprintf("partition %s: seq %d after %d", ev.P, ev.Seq, last))
	}
	r.last[ev.P] = ev.Seq
	r.tries[ev.Seq]++
	attempt := r.tries[ev.Seq]
	r.mu.Unlock()
	status, hang := r.plan(ev.Seq, attempt)
	if hang {
		// The sender gives up at its timeout; when this handler learns of
		// it is the server's business, so the delivery ends here.
		r.mu.Lock()
		r.busy[ev.P]--
		r.mu.Unlock()
		select {
		case <-req.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	if hang {
		return
	}
	r.mu.Lock()
	r.busy[ev.P]--
	if status/100 == 2 {
		r.ok[ev.Seq]++
		r.lat = append(r.lat, time.Since(time.UnixMicro(ev.At)))
	}
	r.mu.Unlock()
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"seq":%d}`, ev.Seq)
}

func pushAll(t *testing.T, b *broker.Broker, queue string, n, partitions int) {
	t.Helper()
	ctx := context.Background()
	const chunk = 500
	for from := 0; from < n; from += chunk {
		var items []store.PushItem
		for i := from; i < min(from+chunk, n); i++ {
			p := "p" + strconv.Itoa(i%partitions)
			items = append(items, store.PushItem{Queue: queue, Partition: p,
				Payload: fmt.Appendf(nil, `{"p":%q,"seq":%d,"at":%d}`, p, i, time.Now().UnixMicro())})
		}
		v, err := b.Push(ctx, broker.Caller{}, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			if x.Status != store.PushQueued {
				t.Fatalf("push: %+v", x)
			}
		}
	}
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeliveryUnderFailures delivers 10,000 messages on 16 partitions (1,000
// on 8 under the race detector) to a receiver that verifies signatures,
// fails 5 % of the messages for good, times out 1 % once and fails another
// 2 % once: every message is delivered at least once in partition order and
// acknowledged once, and the failures end in the DLQ after the queue's
// retry limit.
func TestDeliveryUnderFailures(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			n, partitions := 10000, 16
			if raceOn || testing.Short() {
				n, partitions = 1000, 8
			}
			open := e.open(t)
			nd := startNode(t, open(t), func() delivery.Config { c := fastConfig(); c.Node = "cell"; return c }())
			const queue = "hooks"
			ctx := context.Background()
			opts := store.DefaultQueueOptions()
			opts.RetryLimit = 2
			if _, err := nd.b.Configure(ctx, broker.Caller{}, queue, "", "", opts); err != nil {
				t.Fatal(err)
			}
			// The plan goes by a message's rank in its partition, so that every
			// partition gets its share of failures.
			rank := func(seq int) int { return seq / partitions }
			permanent := func(seq int) bool { return rank(seq)%20 == 7 }
			rcv, srv := newReceiver(t, func(seq, attempt int) (int, bool) {
				switch {
				case permanent(seq):
					return 500, false
				case rank(seq)%100 == 3 && attempt == 1:
					return 0, true
				case rank(seq)%50 == 11 && attempt == 1:
					return 503, false
				}
				return 200, false
			})
			tg, err := nd.svc.Create(ctx, "", &api.DeliveryTarget{Queue: queue, URL: srv.URL + "/hook?x=1", Sign: true})
			if err != nil {
				t.Fatal(err)
			}
			if tg.SigningSecret == "" || tg.SigningKeyID == "" {
				t.Fatalf("created target: %+v", tg)
			}
			rcv.secret.Store(&tg.SigningSecret)
			nd.svc.Reload()
			start := time.Now()
			pushAll(t, nd.b, queue, n, partitions)
			wantDLQ := 0
			for i := range n {
				if permanent(i) {
					wantDLQ++
				}
			}
			dlq := func() int {
				l, err := nd.st.DLQList(ctx, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: queue}, Limit: 100000})
				if err != nil {
					t.Fatal(err)
				}
				return len(l)
			}
			waitFor(t, 3*time.Minute, "every message delivered or dead-lettered", func() bool {
				rcv.mu.Lock()
				got := len(rcv.ok)
				rcv.mu.Unlock()
				return got == n-wantDLQ && dlq() == wantDLQ && nd.ack.count() == n-wantDLQ
			})
			elapsed := time.Since(start)
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if len(rcv.bad) > 0 {
				t.Fatalf("receiver saw %d problems: %s", len(rcv.bad), strings.Join(rcv.bad, "; "))
			}
			for i := range n {
				if permanent(i) {
					// retryLimit 2: three deliveries of two attempts each.
					if rcv.ok[i] != 0 || rcv.tries[i] != 6 {
						t.Fatalf("seq %d failed for good: %d 2xx, %d requests; want 0 and 6", i, rcv.ok[i], rcv.tries[i])
					}
				} else if rcv.ok[i] < 1 {
					t.Fatalf("seq %d never delivered", i)
				}
			}
			nd.ack.mu.Lock()
			acked := len(nd.ack.acked)
			for txn, k := range nd.ack.acked {
				if k != 1 {
					t.Errorf("message %s acknowledged %d times", txn, k)
				}
			}
			nd.ack.mu.Unlock()
			if acked != n-wantDLQ {
				t.Fatalf("%d messages acknowledged, want %d", acked, n-wantDLQ)
			}
			l, _ := nd.st.DLQList(ctx, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: queue}, Limit: 1})
			if len(l) != 1 || !strings.Contains(l[0].Error, "HTTP 500") {
				t.Fatalf("dead letter: %+v", l)
			}
			// A message's attempts are kept.
			atts, err := nd.svc.Attempts(ctx, "", queue, l[0].MessageID, "")
			if err != nil || len(atts) != 1 || atts[0].Outcome != delivery.OutcomeDLQ || atts[0].Total != 6 ||
				atts[0].Attempts[0].Code != 500 {
				t.Fatalf("attempts of a dead letter: %+v %v", atts, err)
			}
			t.Logf("%s: %d messages on %d partitions in %s (%.0f/s with the failures' retries)", e.name, n, partitions,
				elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
		})
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func dlqOf(queue string) *store.DLQListParams {
	return &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: queue}, Limit: 1000}
}
