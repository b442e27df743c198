package retain

import (
	"slices"
	"testing"

	"github.com/queen-go/queen/internal/store"
)

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		name            string
		cutoff, through int64
		n               int
		rows            [][2]int64 // seq, createdAt
		want            []int64
		more            bool
	}{
		{"all old, room for all", 100, 0, 5, [][2]int64{{1, 10}, {2, 20}}, []int64{1, 2}, false},
		{"stops at a new one", 100, 0, 5, [][2]int64{{1, 10}, {2, 100}, {3, 10}}, []int64{1}, false},
		{"stops past through", 100, 2, 5, [][2]int64{{1, 10}, {2, 20}, {3, 30}}, []int64{1, 2}, false},
		{"n taken, more follow", 100, 0, 2, [][2]int64{{1, 10}, {2, 20}, {3, 30}}, []int64{1, 2}, true},
		{"n taken, next is new", 100, 0, 2, [][2]int64{{1, 10}, {2, 20}, {3, 300}}, []int64{1, 2}, false},
	} {
		p := Prefix{Cutoff: tc.cutoff, Through: tc.through, N: tc.n}
		for _, r := range tc.rows {
			if !p.Add(r[0], r[1]) {
				break
			}
		}
		if !slices.Equal(p.Offsets, tc.want) || p.More != tc.more {
			t.Errorf("%s: %v more=%v, want %v more=%v", tc.name, p.Offsets, p.More, tc.want, tc.more)
		}
	}
}

func TestWalk(t *testing.T) {
	list := func(ids ...int64) func(from, end int64) ([]int64, error) {
		return func(from, end int64) ([]int64, error) {
			var out []int64
			for _, id := range ids {
				if id >= from && id < end {
					out = append(out, id)
				}
			}
			return out, nil
		}
	}
	id := func(p int64) int64 { return p }
	for _, tc := range []struct {
		name        string
		from, maxID int64
		ids         []int64
		budget      int   // partitions visited before it is spent
		unfinished  int64 // a partition with more to remove (0: none)
		want        int64
	}{
		{"nothing to sweep", 1, 0, nil, 10, 0, 0},
		{"past the last id", 5000, 4000, nil, 10, 0, 0},
		{"one window is all", 1, 10, []int64{2, 5}, 10, 0, 0},
		{"the next window", 1, 5000, []int64{2, 5}, 10, 0, 1 + Window},
		{"the budget runs out", 1, 10, []int64{2, 5, 7}, 2, 0, 7},
		{"a partition is unfinished", 1, 10, []int64{2, 5, 7}, 10, 5, 5},
		{"from 0 starts at 1", 0, 10, []int64{1}, 0, 0, 1},
	} {
		visited := 0
		w := Walk[int64]{From: tc.from, MaxID: tc.maxID, List: list(tc.ids...), ID: id,
			Spent: func() bool { return visited >= tc.budget },
			Visit: func(p int64) (bool, error) { visited++; return p == tc.unfinished, nil }}
		got, err := w.Run()
		if err != nil || got != tc.want {
			t.Errorf("%s: next %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestIdleNext(t *testing.T) {
	if got := IdleNext([]int64{9, 3, 7}, 3, 1025, 5000); got != 10 {
		t.Errorf("limit reached: %d, want past the largest, 10", got)
	}
	if got := IdleNext([]int64{3}, 3, 1025, 5000); got != 1025 {
		t.Errorf("window done: %d, want 1025", got)
	}
	if got := IdleNext(nil, 3, 1025, 1000); got != 0 {
		t.Errorf("last window: %d, want 0", got)
	}
}

func TestCutoffAndFilters(t *testing.T) {
	o := &store.QueueOptions{RetentionSeconds: 1, CompletedRetentionSeconds: 2, MaxWaitTimeSeconds: 3}
	for kind, want := range map[store.RetentionKind]int64{store.RetentionExpired: 9000,
		store.RetentionCompleted: 8000, store.RetentionEviction: 7000} {
		if got := Cutoff(kind, o, 10000); got != want {
			t.Errorf("Cutoff(%s) = %d, want %d", kind, got, want)
		}
	}
	f := Filters{Expired: "e", Completed: "c", Eviction: "v"}
	if got, err := f.For(store.RetentionCompleted); got != "c" || err != nil {
		t.Errorf("For(completed) = %q, %v", got, err)
	}
	if _, err := f.For("nope"); err == nil {
		t.Error("For(unknown kind): no error")
	}
}
