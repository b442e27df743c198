//go:build !race

package enginetest_test

import (
	"testing"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/store/enginetest"
	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/testenv"
)

// The latency tests: timing bounds, so they are built without the race
// detector and run in CI's latency step (scripts/latency.sh), one package
// and one engine at a time.

// TestBoundedQueueDelete deletes a queue of 1,000,000 messages while another
// queue is pushed to and popped; no push or pop may wait more than 100 ms,
// but for isolated stalls.
func TestBoundedQueueDelete(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a latency test that fills a queue of 1,000,000 messages")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		storetest.RunBoundedDelete(t, e.Store(t), 1_000_000)
	})
}

// TestBoundedRetention lets retention delete a queue's 1,000,000 expired
// messages while another queue is pushed to and popped; no push or pop may
// wait more than 100 ms, but for isolated stalls.
func TestBoundedRetention(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a latency test that fills a queue of 1,000,000 messages")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		storetest.RunBoundedSweep(t, e.Store(t), 1_000_000)
	})
}

// TestRetentionWaves takes 200,000 messages through push, pop and ack in
// waves on a queue whose consumed messages retention deletes after a
// second: the database ends empty and no more than 20 % larger than after
// the wave the engine's row names (freed space is reused; see
// Handle.SettleWaves).
func TestRetentionWaves(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a long test (200,000 messages through HTTP)")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		h := e.Open(t, enginetest.Options{})
		apitest.RunRetentionWaves(t, h.Store, apitest.Waves{
			Messages: 200_000, Waves: 10, Baseline: h.SettleWaves,
			Count: func(t testing.TB) int64 {
				var n int64
				if err := h.SQL.QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			},
			Size: h.Size,
		})
	})
}
