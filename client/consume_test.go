package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/testbroker"
)

type payload struct {
	Part string `json:"p"`
	Seq  int    `json:"s"`
}

// TestConsume: 8 goroutines consume 10,000 messages of 16 partitions
// with a handler that fails 1 % of batches; every message is processed,
// the batches that succeeded are in order per partition, and no lease is
// left held.
func TestConsume(t *testing.T) {
	for _, e := range testbroker.Engines {
		t.Run(e.Name, func(t *testing.T) {
			url := e.Start(t)
			c := newClient(t, client.Config{URL: url})
			ctx := context.Background()
			const total, parts = 10_000, 16
			items := make([]api.PushItem, 0, 500)
			for i := range total {
				p := fmt.Sprint("p", i%parts)
				it, _ := client.Item("work", payload{Part: p, Seq: i / parts})
				it.Partition = p
				items = append(items, it)
				if len(items) == cap(items) {
					if _, err := c.Push(ctx, items...); err != nil {
						t.Fatal(err)
					}
					items = items[:0]
				}
			}
			var (
				mu      sync.Mutex
				done    = map[string]int{} // partition → next seq expected
				seen    = map[payload]bool{}
				batches int
				failed  int
				wrong   []string
			)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				errc <- c.Consume(cctx, "work", func(ctx context.Context, msgs []api.PopMessage) error {
					mu.Lock()
					defer mu.Unlock()
					batches++
					if batches%100 == 0 {
						failed++
						return errors.New("the 1 % that fail")
					}
					for _, m := range msgs {
						var p payload
						if err := json.Unmarshal(m.Data, &p); err != nil {
							return err
						}
						if p.Seq != done[p.Part] {
							wrong = append(wrong, fmt.Sprintf("%s: got %d, want %d", p.Part, p.Seq, done[p.Part]))
						}
						done[p.Part] = p.Seq + 1
						seen[p] = true
					}
					if len(seen) == total {
						cancel()
					}
					return nil
				}, client.ConsumeOptions{Group: "g", Concurrency: 8, BatchSize: 50, WaitTimeout: time.Second,
					OnError: func(err error) {
						if !strings.Contains(err.Error(), "the 1 % that fail") {
							t.Errorf("consume: %v", err)
						}
					}})
			}()
			select {
			case err := <-errc:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Minute):
				mu.Lock()
				t.Fatalf("processed %d of %d after 5 minutes", len(seen), total)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != total || failed == 0 {
				t.Errorf("processed %d of %d, %d batches failed", len(seen), total, failed)
			}
			if len(wrong) > 0 {
				t.Errorf("%d batches out of order, first %v", len(wrong), wrong[:min(5, len(wrong))])
			}
			g, err := c.Group(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			for q, gq := range g {
				for _, l := range gq.Partitions {
					if l.LeaseActive || l.OffsetLag != 0 {
						t.Errorf("%s/%s: lease active %v, lag %d", q, l.Partition, l.LeaseActive, l.OffsetLag)
					}
				}
			}
		})
	}
}

// TestConsumeRenewsLeases: a handler that runs past the queue's lease
// keeps its batch, because Consume renews the lease meanwhile.
func TestConsumeRenewsLeases(t *testing.T) {
	url := testbroker.SQLite(t)
	c := newClient(t, client.Config{URL: url})
	ctx := context.Background()
	opts := api.DefaultQueueOptions()
	opts.LeaseTime = 1
	if _, err := c.Configure(ctx, api.ConfigureRequest{Queue: "slow", Options: &opts}); err != nil {
		t.Fatal(err)
	}
	it, _ := client.Item("slow", "x")
	if _, err := c.Push(ctx, it); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	var calls int
	var errs []error
	err := c.Consume(cctx, "slow", func(ctx context.Context, msgs []api.PopMessage) error {
		calls++
		time.Sleep(2500 * time.Millisecond) // two and a half leases
		cancel()
		return nil
	}, client.ConsumeOptions{RenewEvery: 300 * time.Millisecond, LeaseTime: time.Second, WaitTimeout: time.Second,
		OnError: func(err error) { errs = append(errs, err) }})
	if err != nil || calls != 1 || len(errs) != 0 {
		t.Fatalf("Consume = %v after %d calls, errors %v", err, calls, errs)
	}
	if res, err := c.Pop(ctx, "slow", client.PopOptions{}); res != nil || err != nil {
		t.Fatalf("the message is still there: %v, %v", res, err)
	}
}

// TestConsumeStopsGracefully: a batch in flight when ctx ends is finished
// and acknowledged; one that outlives StopTimeout is released, and comes
// back at once.
func TestConsumeStopsGracefully(t *testing.T) {
	url := testbroker.SQLite(t)
	c := newClient(t, client.Config{URL: url})
	ctx := context.Background()
	for _, q := range []string{"finish", "release"} {
		it, _ := client.Item(q, q)
		if _, err := c.Push(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	err := c.Consume(cctx, "finish", func(ctx context.Context, msgs []api.PopMessage) error {
		cancel()
		time.Sleep(200 * time.Millisecond)
		return ctx.Err() // nil: the handler had its time
	}, client.ConsumeOptions{WaitTimeout: time.Second, StopTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := c.Pop(ctx, "finish", client.PopOptions{}); res != nil {
		t.Fatal("the finished batch was not acknowledged")
	}
	cctx, cancel = context.WithCancel(ctx)
	err = c.Consume(cctx, "release", func(ctx context.Context, msgs []api.PopMessage) error {
		cancel()
		<-ctx.Done() // a handler that only stops when told
		return ctx.Err()
	}, client.ConsumeOptions{WaitTimeout: time.Second, StopTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Pop(ctx, "release", client.PopOptions{})
	if err != nil || res == nil {
		t.Fatalf("the released batch did not come back: %v", err)
	}
}

// TestLanePinningAcrossBrokers: two brokers on one PostgreSQL schema,
// each behind a proxy that records the lanes it sees. Every lane's pops go
// to one broker, both brokers get some, and a message pushed through one
// is popped through the other.
func TestLanePinningAcrossBrokers(t *testing.T) {
	u := pgtest.URL(t)
	schema := pgtest.Schema(t, "lanes_")
	var mu sync.Mutex
	lanes := map[string]map[int]bool{} // path → proxies that saw it
	var fronts []string
	for i := range 2 {
		target, _ := url.Parse(testbroker.PostgresSchema(t, u, schema))
		proxy := httputil.NewSingleHostReverseProxy(target)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/v1/pop/") {
				mu.Lock()
				key := r.URL.Path + "?" + r.URL.Query().Get("consumerGroup")
				if lanes[key] == nil {
					lanes[key] = map[int]bool{}
				}
				lanes[key][i] = true
				mu.Unlock()
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		fronts = append(fronts, front.URL)
	}
	c := newClient(t, client.Config{URLs: fronts})
	ctx := context.Background()
	const parts = 16
	for i := range parts {
		it, _ := client.Item("pinned", i)
		it.Partition = fmt.Sprint("p", i)
		if _, err := c.Push(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for range 3 {
		for i := range parts {
			res, err := c.Pop(ctx, "pinned", client.PopOptions{Partition: fmt.Sprint("p", i), Group: "g"})
			if err != nil {
				t.Fatal(err)
			}
			if res != nil {
				got += len(res.Messages)
				if _, err := c.AckBatch(ctx, client.Acks(res.Messages, api.AckCompleted, "")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if got != parts {
		t.Errorf("popped %d of %d messages", got, parts)
	}
	used := map[int]bool{}
	for lane, by := range lanes {
		if len(by) != 1 {
			t.Errorf("lane %s reached %d brokers", lane, len(by))
		}
		for i := range by {
			used[i] = true
		}
	}
	if len(used) != 2 {
		t.Errorf("only brokers %v were used", used)
	}
}
