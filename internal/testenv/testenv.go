// Package testenv says which of the test suites' optional runs the
// environment turns on.
package testenv

import (
	"os"
	"testing"
)

// LatencyVar turns on the latency run: the tests that fill a queue of
// 1,000,000 messages or run for minutes, and the timing bounds of the
// others. CI sets it in a run of its own, one package at a time, without the
// race detector.
const LatencyVar = "QUEEN_LATENCY_TESTS"

// LatencyRun reports whether this is the latency run. Outside it, on shared
// cores and under the race detector, a time measures the neighbours as much
// as the code: tests with timing bounds check behaviour and log their times.
func LatencyRun() bool { return os.Getenv(LatencyVar) != "" }

// SkipUnlessLatencyRun skips tb outside the latency run, saying what the
// test is (what) and how to run it.
func SkipUnlessLatencyRun(tb testing.TB, what string) {
	tb.Helper()
	if !LatencyRun() {
		tb.Skipf("%s: set %s=1 and run it alone (CI does, in its latency step)", what, LatencyVar)
	}
}
