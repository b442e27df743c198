package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testbroker"
)

// TestConsumeThroughput compares draining a full queue with Consume and
// with the raw loop queen bench runs (pop, decode, ack batch, through
// Client.Do), alternating, on the embedded engine. The drain is 100,000
// messages: Consume's clock stops when it has returned (last ack sent, its
// polls stopped), the raw loop's at its last message, and over 20,000
// messages (a quarter of a second) that fixed stop alone read as a 15 %
// cost. It measures, so it runs
// only when QUEEN_CLIENT_THROUGHPUT is set:
//
//	QUEEN_CLIENT_THROUGHPUT=1 go test -run ConsumeThroughput -v ./client
func TestConsumeThroughput(t *testing.T) {
	if os.Getenv("QUEEN_CLIENT_THROUGHPUT") == "" {
		t.Skip("a measurement: set QUEEN_CLIENT_THROUGHPUT=1")
	}
	c := newClient(t, client.Config{URL: testbroker.SQLite(t)})
	const total, parts, workers, batch = 100_000, 16, 4, 100
	fill := func(queue string) {
		items := make([]api.PushItem, 0, 1000)
		for i := range total {
			it, _ := client.Item(queue, map[string]int{"i": i})
			it.Partition = fmt.Sprint("p", i%parts)
			if items = append(items, it); len(items) == cap(items) {
				if _, err := c.Push(t.Context(), items...); err != nil {
					t.Fatal(err)
				}
				items = items[:0]
			}
		}
	}
	consume := func(queue string) float64 {
		var n atomic.Int64
		var end atomic.Int64
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		err := c.Consume(ctx, queue, func(_ context.Context, msgs []api.PopMessage) error {
			if n.Add(int64(len(msgs))) >= total {
				cancel() // the acknowledgement follows; it is counted below
			}
			return nil
		}, client.ConsumeOptions{Concurrency: workers, BatchSize: batch, WaitTimeout: time.Second,
			StopTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		end.Store(time.Now().UnixNano())
		return float64(total) / time.Duration(end.Load()-start.UnixNano()).Seconds()
	}
	raw := func(queue string) float64 {
		var n atomic.Int64
		var end atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		path := "/api/v1/pop/queue/" + queue + fmt.Sprintf("?batch=%d&wait=true&timeout=1000", batch)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n.Load() < total {
					status, body, err := c.Do(t.Context(), http.MethodGet, path, nil)
					if err != nil || status != http.StatusOK {
						continue
					}
					var res api.PopResponse
					if err := json.Unmarshal(body, &res); err != nil {
						t.Error(err)
						return
					}
					ack, _ := json.Marshal(api.AckBatchRequest{Acknowledgments: client.Acks(res.Messages, api.AckCompleted, "")})
					if status, _, err := c.Do(t.Context(), http.MethodPost, "/api/v1/ack/batch", ack); err != nil || status != http.StatusOK {
						t.Errorf("ack: %d %v", status, err)
						return
					}
					if n.Add(int64(len(res.Messages))) >= total {
						// The other workers' long polls still wait for
						// their timeout; the drain is over now.
						end.CompareAndSwap(0, time.Now().UnixNano())
					}
				}
			}()
		}
		wg.Wait()
		return float64(total) / time.Duration(end.Load()-start.UnixNano()).Seconds()
	}
	for round := range 6 {
		qr, qc := fmt.Sprint("raw", round), fmt.Sprint("consume", round)
		fill(qr)
		fill(qc)
		r := raw(qr)
		cs := consume(qc)
		t.Logf("round %d: raw loop %.0f msg/s, Consume %.0f msg/s (%.1f%%)", round, r, cs, 100*(cs-r)/r)
	}
}
