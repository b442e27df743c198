package metrics

import (
	"math"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ProcessStats are the broker process's figures: CPU time used since it
// started and memory mapped now. On Linux they come from /proc; elsewhere
// from getrusage (RSS is then the peak) or, without it, from the Go
// runtime's own accounting.
type ProcessStats struct {
	CPUSystem time.Duration
	CPUUser   time.Duration
	RSS       uint64 // bytes
	Virtual   uint64 // bytes; 0 where unknown
}

// ReadProcess reads the process's figures now.
func ReadProcess() ProcessStats {
	if st, ok := readProcess(); ok {
		return st
	}
	return runtimeProcess()
}

// runtimeProcess is the last resort: the Go runtime's estimate of the CPU
// time it used (all of it counted as user time) and the memory it mapped.
func runtimeProcess() ProcessStats {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"},
		{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	var st ProcessStats
	if s[0].Value.Kind() == metrics.KindFloat64 && s[1].Value.Kind() == metrics.KindFloat64 {
		st.CPUUser = time.Duration((s[0].Value.Float64() - s[1].Value.Float64()) * float64(time.Second))
	}
	if s[2].Value.Kind() == metrics.KindUint64 {
		st.RSS = s[2].Value.Uint64()
	}
	return st
}

// registerProcess registers Queen's process families, read at scrape time.
func (m *Metrics) registerProcess() {
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "queen_cpu_user_microseconds_total", Help: "CPU time the broker process spent in user mode.",
		}, func() float64 { return float64(ReadProcess().CPUUser.Microseconds()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "queen_cpu_system_microseconds_total", Help: "CPU time the broker process spent in the kernel.",
		}, func() float64 { return float64(ReadProcess().CPUSystem.Microseconds()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_process_resident_memory_bytes", Help: "Resident memory of the broker process.",
		}, func() float64 { return float64(ReadProcess().RSS) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_process_virtual_memory_bytes", Help: "Virtual memory of the broker process (0 where unknown).",
		}, func() float64 { return float64(ReadProcess().Virtual) }),
	)
}

// SchedLatency measures how long goroutines waited to run between two
// calls of Sample (runtime/metrics' /sched/latencies): the Go counterpart
// of an event loop's lag. Safe for one caller at a time.
type SchedLatency struct {
	mu   sync.Mutex
	prev []uint64
}

// Sample returns the mean and the largest wait, in milliseconds, of the
// goroutines scheduled since the previous call (0, 0 on the first).
func (l *SchedLatency) Sample() (avgMs, maxMs float64) {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	h := s[0].Value.Float64Histogram()
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.prev
	l.prev = append(l.prev[:0:0], h.Counts...)
	if len(prev) != len(h.Counts) {
		return 0, 0
	}
	var n uint64
	var sum float64
	for i, c := range h.Counts {
		d := c - prev[i]
		if d == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		n += d
		sum += float64(d) * (lo + hi) / 2
		maxMs = hi * 1000
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n) * 1000, maxMs
}
