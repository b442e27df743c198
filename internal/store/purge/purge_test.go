package purge

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func TestNextLimit(t *testing.T) {
	for _, c := range []struct {
		limit, n int
		took     time.Duration
		want     int
	}{
		{256, 256, 20 * time.Millisecond, 128},      // too slow: halve
		{MinLimit, MinLimit, time.Second, MinLimit}, // never below the minimum
		{256, 256, time.Millisecond, 512},           // fast and full: double
		{256, 10, time.Millisecond, 256},            // fast because rows ran out: keep
		{MaxLimit, MaxLimit, 0, MaxLimit},           // never above the maximum
		{256, 256, Target, 256},                     // on target: keep
	} {
		if got := NextLimit(c.limit, c.n, c.took); got != c.want {
			t.Errorf("NextLimit(%d, %d, %v) = %d, want %d", c.limit, c.n, c.took, got, c.want)
		}
	}
}

// fake deletes from a pile of rows, up to the limit per step.
type fake struct {
	left   int
	limits []int
}

func (f *fake) QueuePurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	f.limits = append(f.limits, p.Limit)
	n := min(p.Limit, f.left)
	f.left -= n
	return &store.QueuePurgeResult{Deleted: n, More: f.left > 0}, nil
}

func TestRunPurgesEverythingInBoundedSteps(t *testing.T) {
	f := &fake{left: 100_000}
	res, err := Run(context.Background(), f, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 100_000 || f.left != 0 {
		t.Fatalf("purged %d rows, %d left", res.Rows, f.left)
	}
	for _, l := range f.limits {
		if l < MinLimit || l > MaxLimit {
			t.Fatalf("a step asked for %d rows, outside [%d, %d]", l, MinLimit, MaxLimit)
		}
	}
}
