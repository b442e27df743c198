package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sweep"
)

// RunBoundedSweep fills a queue with retention with n messages, then lets
// retention delete them all as the broker's retention service does (package
// sweep, in steps of at most 1000 rows, RETENTION_BATCH_SIZE's default)
// while another queue is pushed to, popped and acked without pause. No push,
// pop or ack may wait longer than BoundedDeleteLimit meanwhile, but for
// isolated stalls (see RunBoundedDelete for the baseline). It logs how fast
// the sweep deleted. It is a latency test: drivers run it without the race
// detector, on a store of their own.
func RunBoundedSweep(t *testing.T, s store.Store, n int) {
	ctx := context.Background()
	Configure(t, s, "old", Options(func(o *store.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 }))
	const parts, batch = 16, 5000
	fillStart := time.Now()
	for done := 0; done < n; {
		k := min(batch, n-done)
		items := make([]store.PushItem, k)
		for i := range items {
			items[i] = Item("old", "p"+itoa((done+i)%parts), done+i)
		}
		PushItems(t, s, T0, items...)
		done += k
	}
	t.Logf("filled a queue with %d messages in %v", n, time.Since(fillStart).Round(time.Millisecond))

	tr := startTraffic(t, s)
	time.Sleep(baselineFor)
	baseline := tr.reset()
	start := time.Now()
	res, err := sweep.Run(ctx, s, store.RetentionExpired, 1000, func() time.Time { return At(time.Hour) })
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	took := time.Since(start)
	tr.stop()

	t.Logf("retention deleted %d messages in %d steps (the longest %v), %v (%.0f messages/s, pauses included); "+
		"meanwhile on another queue: %s (without a sweep: %v)", res.Removed, res.Steps,
		res.Longest.Round(time.Microsecond), took.Round(time.Millisecond), float64(res.Removed)/took.Seconds(), tr,
		time.Duration(baseline))
	if res.Removed != n {
		t.Errorf("retention deleted %d messages, want %d", res.Removed, n)
	}
	tr.check(t, "the sweep", baseline)
}
