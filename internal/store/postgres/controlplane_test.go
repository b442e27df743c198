//go:build !race

package postgres

import (
	"os"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
)

// TestControlPlaneLatency times every control-plane route on a queue of
// 1,000,000 messages over 10,000 partitions (docs/benchmarks.md). It is a
// measurement, built without the race detector and run on request.
func TestControlPlaneLatency(t *testing.T) {
	if os.Getenv("QUEEN_CONTROL_BENCH") == "" {
		t.Skip("a measurement that fills a queue of 1,000,000 messages: set QUEEN_CONTROL_BENCH=1 and run it alone")
	}
	apitest.MeasureControlPlane(t, newTestStore(t), 1_000_000, 10_000)
}
