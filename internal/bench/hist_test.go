package bench

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestBucketsCoverEveryValue(t *testing.T) {
	prevHi := int64(-1)
	for i := range histBuckets - 64 { // the last power of two is never reached by int64
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d,%d] maps back to %d/%d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= exactBelow && float64(hi-lo+1)/float64(lo) > 1.0/64+1e-9 {
			t.Fatalf("bucket %d [%d,%d] wider than 1/64", i, lo, hi)
		}
		prevHi = hi
	}
	if b := bucketOf(1<<63 - 1); b >= histBuckets {
		t.Fatalf("max int64 maps to bucket %d of %d", b, histBuckets)
	}
}

func TestPercentilesWithinPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var exact []int64
	for range 100000 {
		// Log-uniform between 10 µs and 10 s, like request latencies.
		v := int64(1e4 * math.Pow(10, rng.Float64()*6))
		h.Record(v)
		exact = append(exact, v)
	}
	sort.Slice(exact, func(i, j int) bool { return exact[i] < exact[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := exact[int(q*float64(len(exact))+0.999999)-1]
		got := h.Percentile(q)
		if got < want || float64(got-want) > float64(want)/64 {
			t.Errorf("p%v = %d, exact %d", q*100, got, want)
		}
	}
	if h.Max() != exact[len(exact)-1] {
		t.Errorf("max %d, want %d", h.Max(), exact[len(exact)-1])
	}
}

func TestPercentileSmallSets(t *testing.T) {
	var h Histogram
	if h.Percentile(0.5) != 0 || h.Summary().Count != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	for _, ms := range []int64{1, 2, 3, 4, 100} {
		h.RecordDuration(time.Duration(ms) * time.Millisecond)
	}
	s := h.Summary()
	if s.P50Ms < 3 || s.P50Ms > 3*1.016 {
		t.Errorf("p50 %.3f ms, want ~3", s.P50Ms)
	}
	if s.P90Ms != 100 || s.P99Ms != 100 || s.MaxMs != 100 {
		t.Errorf("p90/p99/max %.3f/%.3f/%.3f, want 100", s.P90Ms, s.P99Ms, s.MaxMs)
	}
	h.Record(-5) // a clock step: counted as 0, not dropped
	if h.Percentile(0.0001) != 0 || h.Count() != 6 {
		t.Errorf("negative value: min percentile %d, count %d", h.Percentile(0.0001), h.Count())
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	var a, b, all Histogram
	for i := range int64(1000) {
		v := i * i * 37
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	if a.Summary() != all.Summary() {
		t.Fatalf("merged %+v, recorded together %+v", a.Summary(), all.Summary())
	}
}
