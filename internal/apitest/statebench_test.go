package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// measureState serves st and logs, as a client sees them over HTTP on this
// machine: key/value operations per second with one operation per request
// and with batches of 100 (8 concurrent clients, 3 s each), and the fire
// latency of 10,000 timers due within the same second (from each timer's
// fireAt to the moment a long-polling consumer receives its message, so the
// pop is included). It is a measurement, not a test of correctness:
// drivers run it on demand (QUEEN_STATE_BENCH=1).
func measureState(t *testing.T, st store.Store) {
	unlimited := ratelimit.Config{Default: ratelimit.Limit{Rate: math.MaxInt32, Burst: math.MaxInt32}}
	c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-bench", RateLimit: unlimited}))
	t.Cleanup(c.hc.CloseIdleConnections)
	ctx := context.Background()

	kvRate := func(name string, batch int) {
		const workers, span = 8, 3 * time.Second
		ns := uniq("bench-" + name)
		var ops atomic.Int64
		deadline := time.Now().Add(span)
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(deadline); i++ {
					list := make([]map[string]any, batch)
					for j := range list {
						list[j] = kvOp("set", ns, fmt.Sprintf("w%d-k%d", w, (i*batch+j)%5000), "value", map[string]any{"i": i, "j": j})
					}
					r, err := c.send(ctx, "POST", "/api/v1/kv", map[string]any{"ops": list})
					if err != nil || r.Status != http.StatusOK {
						t.Errorf("kv batch: %v %v", r, err)
						return
					}
					ops.Add(int64(batch))
				}
			}()
		}
		wg.Wait()
		d := time.Since(start)
		t.Logf("kv %s: %d ops in %v = %.0f ops/s (%.0f requests/s)", name, ops.Load(), d.Round(time.Millisecond),
			float64(ops.Load())/d.Seconds(), float64(ops.Load())/float64(batch)/d.Seconds())
	}
	kvRate("single", 1)
	kvRate("batch=100", 100)

	// 10,000 timers due within one second, 2 s from now.
	const n = 10_000
	q := uniq("bench-timers")
	due := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	for start := 0; start < n; start += 1000 {
		items := make([]map[string]any, 1000)
		for i := range items {
			at := due.Add(time.Duration(start+i) * time.Second / n)
			items[i] = map[string]any{"queue": q, "payload": map[string]any{"at": at.UnixMicro()},
				"fireAt": at.Format(time.RFC3339Nano)}
		}
		r, err := c.send(ctx, "POST", "/api/v1/timers", map[string]any{"items": items})
		if err != nil || r.Status != http.StatusCreated {
			t.Fatalf("schedule: %v %v", r, err)
		}
	}
	if time.Now().After(due) {
		t.Fatalf("scheduling took past the due second; the measurement would be wrong")
	}
	var lat []time.Duration
	deadline := time.Now().Add(2 * time.Minute)
	for len(lat) < n && time.Now().Before(deadline) {
		r, err := c.send(ctx, "GET", queuePath(q)+"?batch=1000&wait=true&timeout=2000&autoAck=true", nil)
		if err != nil {
			t.Fatal(err)
		}
		got := time.Now()
		if r.Status == http.StatusNoContent {
			continue
		}
		p := checkPop(t, r)
		for _, m := range p.Messages {
			var payload struct {
				At int64 `json:"at"`
			}
			if err := json.Unmarshal(m.Data, &payload); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, got.Sub(time.UnixMicro(payload.At)))
		}
	}
	if len(lat) != n {
		t.Fatalf("received %d of %d timer messages", len(lat), n)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond) }
	t.Logf("timers: %d due within one second: fire latency to the consumer p50 %v, p99 %v, max %v",
		n, pct(0.50), pct(0.99), lat[len(lat)-1].Round(time.Millisecond))
}
