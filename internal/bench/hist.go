package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records non-negative durations (nanoseconds) in log-linear
// buckets: values below 128 ns are exact, above that every power of two is
// split into 64 buckets, so a percentile is within 1/64 (1.6 %) of the true
// value. A fixed bucket array means recording never allocates and two
// histograms merge by adding counts, which lets each worker own one and
// avoid a shared lock on the hot path.
//
// A Histogram is not safe for concurrent use.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	min    int64
	max    int64
	sum    float64
}

const (
	subBits     = 6
	subCount    = 1 << subBits // buckets per power of two
	exactBelow  = 2 * subCount // values below this have a bucket each
	histBuckets = (63-subBits)*subCount + exactBelow
)

// bucketOf maps v to its bucket index.
func bucketOf(v int64) int {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	if u < exactBelow {
		return int(u)
	}
	// Keep the top subBits+1 bits: the mantissa lies in [64, 128).
	shift := bits.Len64(u) - (subBits + 1)
	return shift*subCount + int(u>>uint(shift))
}

// bucketRange returns the smallest and largest value mapped to bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < exactBelow {
		return int64(i), int64(i)
	}
	shift := uint(i/subCount - 1)
	mant := int64(i%subCount + subCount)
	return mant << shift, (mant+1)<<shift - 1
}

// Record adds one value in nanoseconds; negative values count as 0 (clock
// steps can make an end-to-end latency slightly negative).
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
	h.counts[bucketOf(v)]++
}

// RecordDuration adds one duration.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value (exact).
func (h *Histogram) Max() int64 { return h.max }

// Mean returns the arithmetic mean, 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Percentile returns the nearest-rank q-quantile (0 < q <= 1): the smallest
// recorded value v such that at least q of the values are <= v, rounded up
// to its bucket's upper bound and clamped to [min, max]. It is 0 when empty.
func (h *Histogram) Percentile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	rank = min(rank, h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := bucketRange(i)
			return min(max(hi, h.min), h.max)
		}
	}
	return h.max
}

// LatencySummary is a histogram reduced to what the report prints, in
// milliseconds.
type LatencySummary struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summary reduces h to a LatencySummary.
func (h *Histogram) Summary() LatencySummary {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return LatencySummary{
		Count:  h.n,
		MeanMs: h.Mean() / 1e6,
		P50Ms:  ms(h.Percentile(0.50)),
		P90Ms:  ms(h.Percentile(0.90)),
		P99Ms:  ms(h.Percentile(0.99)),
		MaxMs:  ms(h.max),
	}
}
