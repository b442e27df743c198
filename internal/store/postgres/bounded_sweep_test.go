//go:build !race

package postgres

import (
	"testing"

	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/testenv"
)

// TestBoundedRetention lets retention delete a queue's 1,000,000 expired
// messages while another queue is pushed to and popped; no push or pop may
// wait more than 100 ms, but for isolated stalls. It is a latency test, so
// it is built without the race detector (CI runs it in its latency step).
func TestBoundedRetention(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a latency test that fills a queue of 1,000,000 messages")
	testURL(t)
	storetest.RunBoundedSweep(t, newTestStore(t), 1_000_000)
}
