//go:build !race

package sqlite_test

import (
	"os"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/apitest"
)

// TestStreamsThroughput measures the stream routes (cycles per second on 1
// and 16 partitions, state reads at 100,000 keys; docs/decisions.md, Streams). It
// is a measurement, built without the race detector and run on request:
//
//	QUEEN_STREAMS_BENCH=1 go test -run TestStreamsThroughput -v ./internal/store/sqlite/
func TestStreamsThroughput(t *testing.T) {
	if os.Getenv("QUEEN_STREAMS_BENCH") == "" {
		t.Skip("a measurement of a minute or two: set QUEEN_STREAMS_BENCH=1 to run it")
	}
	apitest.MeasureStreams(t, openTB(t), 10*time.Second)
}
