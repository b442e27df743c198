//go:build !race

package apitest

import (
	"os"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store/enginetest"
	"github.com/queen-go/queen/internal/store/postgres"
)

// The measurements of docs/benchmarks.md: they log figures of the machine,
// take minutes, and run on request, alone, without the race detector:
//
//	QUEEN_CONTROL_BENCH=1 go test -run 'TestControlPlaneLatency/sqlite' -v -timeout 30m ./internal/apitest/

// measured is the options of a measured store: PostgreSQL with the
// broker's default pool, as in production.
var measured = enginetest.Options{PoolSize: postgres.DefaultPoolSize}

// TestControlPlaneLatency times every control-plane route on a queue of
// 1,000,000 messages over 10,000 partitions.
func TestControlPlaneLatency(t *testing.T) {
	skipUnless(t, "QUEEN_CONTROL_BENCH", "a measurement that fills a queue of 1,000,000 messages")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		measureControlPlane(t, e.Open(t, enginetest.Options{}).Store, 1_000_000, 10_000)
	})
}

// TestMessageRoutesLatency logs the latency of the control plane's message,
// DLQ and trace routes on a queue of 1,000,000 messages over 10,000
// partitions.
func TestMessageRoutesLatency(t *testing.T) {
	skipUnless(t, "QUEEN_CONTROL_BENCH", "a measurement of minutes")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		measureMessageRoutes(t, e.Open(t, measured).Store, 1_000_000, 10_000)
	})
}

// TestStatusLatency times every status and analytics route on a queue of
// 1,000,000 messages in 10,000 partitions beside a day of metrics rows.
func TestStatusLatency(t *testing.T) {
	skipUnless(t, "QUEEN_CONTROL_BENCH", "a measurement that fills a queue of 1,000,000 messages")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		measureStatus(t, e.Open(t, enginetest.Options{}).Store, 1_000_000, 10_000)
	})
}

// TestStateMeasure logs key/value operations per second (single and
// batched) and the fire latency of 10,000 timers due in the same second.
func TestStateMeasure(t *testing.T) {
	skipUnless(t, "QUEEN_STATE_BENCH", "a measurement")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		measureState(t, e.Open(t, measured).Store)
	})
}

// TestStreamsThroughput measures the stream routes (cycles per second on 1
// and 16 partitions, state reads at 100,000 keys; docs/decisions.md,
// Streams).
func TestStreamsThroughput(t *testing.T) {
	skipUnless(t, "QUEEN_STREAMS_BENCH", "a measurement of a minute or two")
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		measureStreams(t, e.Open(t, enginetest.Options{PoolSize: 20}).Store, 10*time.Second)
	})
}

// skipUnless skips t unless the environment variable name is set.
func skipUnless(t *testing.T, name, what string) {
	t.Helper()
	if os.Getenv(name) == "" {
		t.Skipf("%s: set %s=1 and run it alone", what, name)
	}
}
