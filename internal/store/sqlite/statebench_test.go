package sqlite_test

import (
	"os"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
)

// TestStateMeasure logs key/value operations per second (single and
// batched) and the fire latency of 10,000 timers due in the same second
// (docs/benchmarks.md). It measures the machine: run it alone.
//
//	QUEEN_STATE_BENCH=1 go test -run TestStateMeasure -v ./internal/store/sqlite/
func TestStateMeasure(t *testing.T) {
	if os.Getenv("QUEEN_STATE_BENCH") == "" {
		t.Skip("a measurement: set QUEEN_STATE_BENCH=1 to run it")
	}
	apitest.MeasureState(t, openTB(t))
}
