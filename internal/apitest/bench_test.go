package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

const (
	benchWorkers    = 8
	benchPartitions = 16
)

// benchPush pushes b.N messages over HTTP in batches of batch from 8
// concurrent producers into one queue of 16 partitions and reports msg/s.
func benchPush(b *testing.B, newStore func(b testing.TB) store.Store, batch int) {
	if batch < 1 {
		batch = 1
	}
	c := newClient(StartServer(b, newStore(b), server.Config{Version: "0.0.0-bench"}))
	b.Cleanup(c.hc.CloseIdleConnections)
	q := uniq("bench-push")
	ctx := context.Background()
	var next atomic.Int64 // messages handed out so far
	n := int64(b.N)

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				end := next.Add(int64(batch))
				first := end - int64(batch)
				if first >= n {
					return
				}
				end = min(end, n)
				items := make([]map[string]any, 0, end-first)
				for k := first; k < end; k++ {
					items = append(items, item(q, map[string]any{"k": k}, "partition", fmt.Sprintf("p%02d", k%benchPartitions)))
				}
				r, err := c.send(ctx, "POST", "/api/v1/push", map[string]any{"items": items})
				if err != nil {
					b.Errorf("push: %v", err)
					return
				}
				var res []pushResult
				if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &res) != nil || len(res) != len(items) {
					b.Errorf("push: %v", r)
					return
				}
				for _, e := range res {
					if e.Status != "queued" {
						b.Errorf("push: item status %q", e.Status)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
}

// benchPopAck pre-pushes b.N messages over 16 partitions (untimed), then 8
// consumers pop batch=100 and ack each batch with one /ack/batch call until
// all are consumed. It reports msg/s, and dupes and lost as metrics.
func benchPopAck(b *testing.B, newStore func(b testing.TB) store.Store) {
	c := newClient(StartServer(b, newStore(b), server.Config{Version: "0.0.0-bench"}))
	b.Cleanup(c.hc.CloseIdleConnections)
	q := uniq("bench-popack")
	ctx := context.Background()

	const preBatch = 1000
	for first := 0; first < b.N; first += preBatch {
		end := min(first+preBatch, b.N)
		items := make([]map[string]any, 0, end-first)
		for k := first; k < end; k++ {
			items = append(items, item(q, map[string]any{"k": k}, "partition", fmt.Sprintf("p%02d", k%benchPartitions)))
		}
		r, err := c.send(ctx, "POST", "/api/v1/push", map[string]any{"items": items})
		if err != nil {
			b.Fatalf("pre-push: %v", err)
		}
		if r.Status != http.StatusCreated {
			b.Fatalf("pre-push: %v", r)
		}
	}

	var (
		mu     sync.Mutex
		seen   = make(map[string]int, b.N)
		unique atomic.Int64
		dupes  atomic.Int64
		last   atomic.Int64 // unix nanos of the last delivery
	)
	const stall = 30 * time.Second // give up when nothing arrives for this long

	b.ResetTimer()
	start := time.Now()
	last.Store(start.UnixNano())
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for unique.Load() < int64(b.N) && time.Since(time.Unix(0, last.Load())) < stall {
				r, err := c.send(ctx, "GET", queuePath(q)+"?batch=100&wait=true&timeout=200", nil)
				if err != nil {
					b.Errorf("pop: %v", err)
					return
				}
				if r.Status == http.StatusNoContent {
					continue
				}
				var p popResp
				if r.Status != http.StatusOK || json.Unmarshal(r.Body, &p) != nil {
					b.Errorf("pop: %v", r)
					return
				}
				last.Store(time.Now().UnixNano())
				acks := make([]map[string]any, len(p.Messages))
				mu.Lock()
				for i, m := range p.Messages {
					seen[m.ID]++
					if seen[m.ID] == 1 {
						unique.Add(1)
					} else {
						dupes.Add(1)
					}
					acks[i] = ackOf(m, "completed")
				}
				mu.Unlock()
				ar, err := c.send(ctx, "POST", "/api/v1/ack/batch", map[string]any{"acknowledgments": acks})
				if err != nil {
					b.Errorf("ack: %v", err)
					return
				}
				if ar.Status != http.StatusOK {
					b.Errorf("ack: %v", ar)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(unique.Load())/elapsed.Seconds(), "msg/s")
	b.ReportMetric(float64(dupes.Load()), "dupes")
	b.ReportMetric(float64(int64(b.N)-unique.Load()), "lost")
}
