package apitest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// measureStreams measures the stream routes over HTTP on st and logs:
//
//   - cycles per second of a stream worker loop on one source partition and
//     on 16 (one worker per partition): pop a batch of 10, commit a cycle
//     that upserts 10 keys, emits one message and acks the batch;
//   - the same for cycles alone (no pop: state ops and one push, no ack),
//     with 1 and 16 clients;
//   - the latency of /streams/v1/state/get on one (query, partition)
//     holding 100,000 keys: 10 keys, a prefix of 100 keys, 1,000 ripe
//     windows, and all 100,000 rows.
func measureStreams(t *testing.T, st store.Store, run time.Duration) {
	c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-streams-bench"}))
	t.Cleanup(c.hc.CloseIdleConnections)
	var report strings.Builder
	fmt.Fprintf(&report, "\nengine %s\n", st.Engine())

	for _, parts := range []int{1, 16} {
		src := fmt.Sprintf("bench-src-%d", parts)
		q := c.register(t, fmt.Sprintf("bench-loop-%d", parts), src, "bench-sink", "h", false).QueryID
		c.configure(t, src, map[string]any{"leaseTime": 60})
		// Enough messages for the run, pushed in batches of 1000.
		perPart := 80_000
		if parts > 1 {
			perPart = 10_000
		}
		for p := range parts {
			for first := 0; first < perPart; first += 1000 {
				items := make([]map[string]any, 0, 1000)
				for i := first; i < min(first+1000, perPart); i++ {
					items = append(items, item(src, map[string]any{"k": fmt.Sprintf("k%d", i%100), "n": i},
						"partition", fmt.Sprintf("p%02d", p)))
				}
				c.push(t, items...)
			}
		}
		n, lats := measure(t, parts, run, func(w int) bool {
			p := c.pop(t, partitionPath(src, fmt.Sprintf("p%02d", w))+"?batch=10&consumerGroup=bench")
			if p == nil {
				return false
			}
			ops := make([]any, 0, 10)
			for i, m := range p.Messages {
				ops = append(ops, map[string]any{"type": "upsert", "key": fmt.Sprintf("k%d", (m.n(t)+i)%100),
					"value": map[string]any{"count": i, "windowEnd": time.Now().UnixMilli()}})
			}
			res := c.cycleOK(t, map[string]any{"query_id": q, "partition_id": p.Messages[0].PartitionID,
				"consumer_group": "bench", "state_ops": ops,
				"push_items": []any{item("bench-sink", map[string]any{"n": len(ops)}, "partition", fmt.Sprintf("p%02d", w))},
				"ack":        ackOfLast(p)})
			return res.AckResult != nil && res.AckResult.Count == len(p.Messages)
		})
		fmt.Fprintf(&report, "worker loop (pop 10, cycle: 10 upserts, 1 push, ack), %2d partition(s): %7.0f cycles/s, %7.0f messages/s, cycle+pop p50 %v p95 %v\n",
			parts, float64(n)/run.Seconds(), float64(n*10)/run.Seconds(), pct(lats, 50), pct(lats, 95))

		q2 := c.register(t, fmt.Sprintf("bench-cycle-%d", parts), src, "bench-sink", "h", false).QueryID
		pids := make([]string, parts)
		for i := range pids {
			pids[i] = uuid.Must(uuid.NewV7()).String()
		}
		var seq atomic.Int64
		n, lats = measure(t, parts, run, func(w int) bool {
			k := seq.Add(1)
			ops := make([]any, 10)
			for i := range ops {
				ops[i] = map[string]any{"type": "upsert", "key": fmt.Sprintf("k%d", (k*10+int64(i))%1000),
					"value": map[string]any{"count": k, "windowEnd": k}}
			}
			c.cycleOK(t, map[string]any{"query_id": q2, "partition_id": pids[w], "state_ops": ops,
				"push_items": []any{item("bench-sink", map[string]any{"n": k}, "partition", fmt.Sprintf("c%02d", w))}})
			return true
		})
		fmt.Fprintf(&report, "cycle alone (10 upserts, 1 push, no ack),             %2d partition(s): %7.0f cycles/s, p50 %v p95 %v\n",
			parts, float64(n)/run.Seconds(), pct(lats, 50), pct(lats, 95))
	}

	// 100,000 keys in one (query, partition): 1,000 keys of 100 windows,
	// written by 100 cycles of 1,000 upserts.
	q := c.register(t, "bench-state", "bench-src-1", "", "h", false).QueryID
	pid := uuid.Must(uuid.NewV7()).String()
	fill := time.Now()
	for win := range 100 {
		ops := make([]any, 1000)
		for k := range ops {
			ops[k] = map[string]any{"type": "upsert", "key": fmt.Sprintf("tumb:1000\u001fkey-%04d\u001f%03d", k, win),
				"value": map[string]any{"count": k + win, "windowStart": win * 1000, "windowEnd": (win + 1) * 1000}}
		}
		c.cycleOK(t, map[string]any{"query_id": q, "partition_id": pid, "state_ops": ops})
	}
	fmt.Fprintf(&report, "state of 100,000 keys written by 100 cycles of 1,000 upserts in %v\n", time.Since(fill).Round(time.Millisecond))
	if got := c.streamQueryGet(t, "bench-state").State.Rows; got != 100_000 {
		t.Fatalf("state holds %d rows, want 100,000", got)
	}
	for _, g := range []struct {
		name   string
		body   map[string]any
		rows   int
		rounds int
	}{
		{"10 keys", map[string]any{"keys": []string{"tumb:1000\u001fkey-0001\u001f050", "tumb:1000\u001fkey-0999\u001f000",
			"tumb:1000\u001fkey-0500\u001f099", "tumb:1000\u001fkey-0002\u001f050", "tumb:1000\u001fkey-0003\u001f050",
			"tumb:1000\u001fkey-0004\u001f050", "tumb:1000\u001fkey-0005\u001f050", "tumb:1000\u001fkey-0006\u001f050",
			"tumb:1000\u001fkey-0007\u001f050", "tumb:1000\u001fkey-0008\u001f050"}}, 10, 200},
		{"key_prefix (100 rows)", map[string]any{"key_prefix": "tumb:1000\u001fkey-0042\u001f"}, 100, 200},
		{"ripe_at_or_before (1,000 rows)", map[string]any{"ripe_at_or_before": 1000}, 1000, 100},
		{"all 100,000 rows", map[string]any{}, 100_000, 5},
	} {
		g.body["query_id"], g.body["partition_id"] = q, pid
		var lats []time.Duration
		for i := range g.rounds + 1 {
			start := time.Now()
			r := c.do(t, "POST", "/streams/v1/state/get", g.body)
			d := time.Since(start)
			var out struct {
				Rows []stateRow `json:"rows"`
			}
			wantJSON(t, r, http.StatusOK, &out)
			if len(out.Rows) != g.rows {
				t.Fatalf("state/get %s: %d rows, want %d", g.name, len(out.Rows), g.rows)
			}
			if i > 0 {
				lats = append(lats, d)
			}
		}
		slices.Sort(lats)
		fmt.Fprintf(&report, "state/get at 100,000 keys, %-32s p50 %10v p95 %10v\n", g.name+":", pct(lats, 50), pct(lats, 95))
	}
	t.Log(report.String())
}

// measure runs fn from workers goroutines (worker index w) for d and
// returns how many calls returned true and their latencies.
func measure(t *testing.T, workers int, d time.Duration, fn func(w int) bool) (int, []time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var lats []time.Duration
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				if !fn(w) {
					continue
				}
				d := time.Since(start)
				mu.Lock()
				lats = append(lats, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lats)
	return len(lats), lats
}

func pct(lats []time.Duration, p int) time.Duration {
	if len(lats) == 0 {
		return 0
	}
	return lats[min(len(lats)-1, len(lats)*p/100)].Round(10 * time.Microsecond)
}
