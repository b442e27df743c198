package apitest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// Waves describes RunRetentionWaves' load and what it measures.
type Waves struct {
	// Baseline is the wave after which the size is the reference (1 unless
	// the engine reuses freed space one wave late, see the PostgreSQL test).
	Baseline int
	// Count returns how many messages the store holds.
	Count func(t testing.TB) int64
	// Messages is the total pushed, in Waves waves.
	Messages, Waves int
	// Size returns the disk space the store uses, in bytes, as the test
	// compares it (a file size; the size of tables and indexes after a
	// VACUUM).
	Size func(t testing.TB) int64
}

// RunRetentionWaves takes w.Messages messages through push, pop and ack in
// w.Waves waves on a queue with retentionEnabled and
// completedRetentionSeconds 1, with a retention service running every 200
// ms. After each wave it waits until retention has emptied the store. At
// the end the store holds no message and uses at most 20 % more space than
// after the first wave (w.Baseline): deleted space is reused, so the disk
// stays bounded whatever the traffic. It is a long test: drivers run it without the race
// detector, gated like their latency tests.
func RunRetentionWaves(t *testing.T, st store.Store, w Waves) {
	c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-waves",
		Sweeps: broker.SweepConfig{RetentionEvery: 200 * time.Millisecond}}))
	t.Cleanup(c.hc.CloseIdleConnections)
	const parts, pushBatch, popBatch = 16, 500, 1000
	q := uniq("waves")
	c.configure(t, q, map[string]any{"retentionEnabled": true, "completedRetentionSeconds": 1})
	perWave := w.Messages / w.Waves
	payload := strings.Repeat("x", 200)
	var first int64
	baseline := max(w.Baseline, 1)
	var swept time.Duration
	start := time.Now()
	for wave := 1; wave <= w.Waves; wave++ {
		for done := 0; done < perWave; done += pushBatch {
			items := make([]map[string]any, 0, pushBatch)
			for k := done; k < min(done+pushBatch, perWave); k++ {
				items = append(items, item(q, map[string]any{"k": k, "pad": payload},
					"partition", fmt.Sprintf("p%02d", k%parts)))
			}
			c.push(t, items...)
		}
		consumed := 0
		for consumed < perWave {
			p := c.pop(t, queuePath(q)+fmt.Sprintf("?batch=%d&partitions=%d", popBatch, parts))
			if p == nil {
				t.Fatalf("wave %d: %d of %d consumed, then an empty pop", wave, consumed, perWave)
			}
			c.ackAll(t, "", p)
			consumed += len(p.Messages)
		}
		acked := time.Now()
		waitFor(t, 60*time.Second, fmt.Sprintf("retention to empty wave %d", wave), func() bool {
			return w.Count(t) == 0
		})
		swept += time.Since(acked)
		size := w.Size(t)
		if wave == baseline {
			first = size
		}
		t.Logf("wave %d: %d messages pushed, consumed and deleted; store %.1f MB (%.0f%% of wave %d); "+
			"retention emptied it %v after the last ack", wave, perWave, float64(size)/1e6,
			100*float64(size)/float64(max(first, 1)), baseline, time.Since(acked).Round(time.Millisecond))
	}
	final := w.Size(t)
	t.Logf("%d messages in %d waves in %v; after the last sweep: %d messages, %.1f MB (wave %d: %.1f MB); "+
		"retention took %v in all (1 s of completedRetentionSeconds and 200 ms intervals included)",
		w.Messages, w.Waves, time.Since(start).Round(time.Millisecond), w.Count(t), float64(final)/1e6,
		baseline, float64(first)/1e6, swept.Round(time.Millisecond))
	if n := w.Count(t); n != 0 {
		t.Errorf("%d messages left after the last sweep, want 0", n)
	}
	if float64(final) > 1.2*float64(first) {
		t.Errorf("store grew to %d bytes, more than 20%% over the %d bytes after wave %d", final, first, baseline)
	}
}
