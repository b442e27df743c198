package postgres

import "os"

// latencyBounds reports whether a test's timing bounds apply. They do only
// in the latency run (QUEEN_LATENCY_TESTS=1, one package at a time, without
// the race detector, as CI runs them after the suite): in the general run,
// on two shared cores under the race detector, a time measures the
// neighbours as much as the code. There the tests check behaviour and log
// their times.
func latencyBounds() bool { return os.Getenv("QUEEN_LATENCY_TESTS") != "" }
