package control

import (
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Spread
	}{
		{nil, Spread{}},
		{[]float64{3}, Spread{Avg: 3, Max: 3, Median: 3, Min: 3}},
		{[]float64{4, 1, 3}, Spread{Avg: 8.0 / 3, Max: 4, Median: 3, Min: 1}},
		{[]float64{4, 1, 3, 2}, Spread{Avg: 2.5, Max: 4, Median: 2.5, Min: 1}},
	} {
		if got := spread(tc.in); got != tc.want {
			t.Errorf("spread(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)
	if got := age(now, time.Time{}); got != 0 {
		t.Errorf("age of the zero time: %v", got)
	}
	if got := age(now, now.Add(time.Second)); got != 0 {
		t.Errorf("age of a future time: %v", got)
	}
	if got := age(now, now.Add(-90*time.Second)); got != 90*time.Second {
		t.Errorf("age 90s ago: %v", got)
	}
}
