//go:build race

package sqlite

// raceEnabled reports a build with the race detector, which slows SQLite's
// pure-Go code about 15×: latency bounds scale with it.
const raceEnabled = true
