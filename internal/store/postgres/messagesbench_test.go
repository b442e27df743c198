package postgres

import (
	"os"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
)

// TestMessageRoutesLatency logs the latency of the control plane's message,
// DLQ and trace routes on a queue of 1,000,000 messages over 10,000
// partitions. It takes minutes and measures the machine: run it alone.
//
//	QUEEN_CONTROL_BENCH=1 go test -run TestMessageRoutesLatency -v -timeout 30m ./internal/store/postgres/
func TestMessageRoutesLatency(t *testing.T) {
	if os.Getenv("QUEEN_CONTROL_BENCH") == "" {
		t.Skip("a measurement of minutes: set QUEEN_CONTROL_BENCH=1 to run it")
	}
	apitest.MeasureMessageRoutes(t, openStore(t, newSchema(t), DefaultPoolSize), 1_000_000, 10_000)
}
