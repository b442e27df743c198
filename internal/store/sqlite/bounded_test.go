//go:build !race

package sqlite_test

import (
	"testing"

	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/testenv"
)

// TestBoundedQueueDelete deletes a queue of 1,000,000 messages while another
// queue is pushed to and popped; no push or pop may wait more than 100 ms,
// but for isolated stalls. It is a latency test, so it is built without the
// race detector (CI runs it in its latency step).
func TestBoundedQueueDelete(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a latency test that fills a queue of 1,000,000 messages")
	storetest.RunBoundedDelete(t, openTB(t), 1_000_000)
}
