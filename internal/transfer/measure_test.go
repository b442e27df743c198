//go:build !race

package transfer

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueenReadMeasure reads a Queen database of 1,000,000 messages (the
// fixture, grown with generated rows over 1,000 partitions of one queue)
// with the reader's batches and reports the rate and the peak heap sampled
// while it reads (docs/migration.md). A measurement, run on request.
func TestQueenReadMeasure(t *testing.T) {
	if os.Getenv("QUEEN_TRANSFER_BENCH") == "" {
		t.Skip("a measurement over 1,000,000 messages: set QUEEN_TRANSFER_BENCH=1 and run it alone")
	}
	conn, schema := restoreQueenFixture(t)
	ctx := context.Background()
	r := &QueenReader{DB: conn, Schema: schema}
	before, err := r.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const want = 1_000_000
	grow := want - before.Messages
	start := time.Now()
	if _, err := conn.Exec(ctx, r.sql(`INSERT INTO %[1]s.partitions (queue_id, name)
SELECT q.id, 'bulk-' || g FROM %[1]s.queues q, generate_series(1, 1000) g WHERE q.name = 'orders'`)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, r.sql(`INSERT INTO %[1]s.messages (transaction_id, partition_id, payload, created_at)
SELECT 'bulk-' || g, p.id, jsonb_build_object('n', g, 'pad', repeat('x', 200)),
	now() - interval '1 hour' + (g / 50) * interval '1 millisecond'
FROM generate_series(1, $1::bigint) g
JOIN LATERAL (SELECT id FROM %[1]s.partitions WHERE name = 'bulk-' || (1 + g %% 1000)) p ON true`), grow); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+r.sql("%s.messages")); err != nil {
		t.Fatal(err)
	}
	t.Logf("grew the Queen database to %d messages in %v", want, time.Since(start).Round(time.Millisecond))

	stopHeap := PeakHeap()
	var n, bytes int64
	start = time.Now()
	err = r.Queues(ctx, func(q QueenQueue) error {
		var ids []string
		if err := r.Partitions(ctx, q.ID, func(p QueenPartition) error { ids = append(ids, p.ID); return nil }); err != nil {
			return err
		}
		for _, id := range ids {
			if err := r.Messages(ctx, id, func(ms []QueenMessage) error {
				for _, m := range ms {
					n++
					bytes += int64(len(m.Payload))
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	took := time.Since(start)
	peak := stopHeap()
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("read %d messages, want %d", n, want)
	}
	t.Logf("read %d messages (%d MB of payload) in %v: %.0f messages/s; peak heap in use %.1f MB",
		n, bytes>>20, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(peak)/(1<<20))
}

// PeakHeap samples the heap in use every 20 ms until the returned stop is
// called, which returns the peak. Both measurements use it (the
// copy's, in package transfer_test, through this export).
func PeakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	quit, done := make(chan struct{}), make(chan struct{})
	runtime.GC()
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-quit:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(quit); <-done; return peak.Load() }
}
