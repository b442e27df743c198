//go:build unix && !linux

package metrics

import (
	"runtime"
	"syscall"
	"time"
)

// readProcess uses getrusage: CPU times, and the peak resident set (the
// current one has no portable source), in KiB on most systems and bytes on
// Darwin.
func readProcess() (ProcessStats, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return ProcessStats{}, false
	}
	rss := uint64(ru.Maxrss)
	if runtime.GOOS != "darwin" {
		rss *= 1024
	}
	return ProcessStats{
		CPUUser:   time.Duration(ru.Utime.Nano()),
		CPUSystem: time.Duration(ru.Stime.Nano()),
		RSS:       rss,
	}, true
}
