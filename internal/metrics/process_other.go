//go:build !unix

package metrics

// readProcess has no source on this system: ReadProcess falls back to the
// Go runtime's accounting.
func readProcess() (ProcessStats, bool) { return ProcessStats{}, false }
