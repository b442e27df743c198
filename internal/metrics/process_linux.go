package metrics

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// readProcess reads /proc/self/stat: utime and stime (fields 14 and 15, in
// clock ticks), vsize (23, bytes) and rss (24, pages).
func readProcess() (ProcessStats, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return ProcessStats{}, false
	}
	// The command name (field 2) may hold spaces; fields resume after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcessStats{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 22 {
		return ProcessStats{}, false
	}
	num := func(field int) uint64 {
		n, _ := strconv.ParseUint(string(f[field-3]), 10, 64)
		return n
	}
	tick := time.Second / clockTicks
	return ProcessStats{
		CPUUser:   time.Duration(num(14)) * tick,
		CPUSystem: time.Duration(num(15)) * tick,
		Virtual:   num(23),
		RSS:       num(24) * uint64(os.Getpagesize()),
	}, true
}
