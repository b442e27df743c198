package lane

import (
	"testing"

	"github.com/queen-go/queen/internal/store"
)

func TestStandingOf(t *testing.T) {
	live := func(cursor, batchEnd int64) State {
		return State{Cursor: cursor, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: batchEnd}
	}
	expired := State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now - 1, BatchEnd: 15}
	qm := func(s State) Group { return Group{Name: store.QueueMode, State: s} }
	bus := func(name string, s State) Group { return Group{Name: name, State: s} }
	for _, tc := range []struct {
		name   string
		off    int64
		groups []Group
		dead   bool
		want   Standing
	}{
		{"nobody reads the partition", 5, nil, false, Standing{Status: store.StatusPending}},
		{"queue mode passed it", 5, []Group{qm(State{Cursor: 5})}, false,
			Standing{Status: store.StatusCompleted, HasQueueMode: true}},
		{"queue mode before it", 6, []Group{qm(State{Cursor: 5})}, false,
			Standing{Status: store.StatusPending, HasQueueMode: true}},
		{"a live lease holds it", 12, []Group{qm(live(10, 15))}, false,
			Standing{Status: store.StatusProcessing, HasQueueMode: true, LeaseExpiresAt: now + 30_000}},
		{"beyond the leased batch", 16, []Group{qm(live(10, 15))}, false,
			Standing{Status: store.StatusPending, HasQueueMode: true}},
		{"an expired lease holds nothing", 12, []Group{qm(expired)}, false,
			Standing{Status: store.StatusPending, HasQueueMode: true}},
		{"two groups, one passed it", 7, []Group{bus("a", State{Cursor: 9}), bus("b", State{Cursor: 3})}, false,
			Standing{Status: store.StatusPending, ConsumedBy: 1, TotalGroups: 2}},
		{"two groups passed it", 3, []Group{bus("a", State{Cursor: 9}), bus("b", State{Cursor: 3})}, false,
			Standing{Status: store.StatusCompleted, ConsumedBy: 2, TotalGroups: 2}},
		{"hybrid: queue mode still owes it", 3, []Group{qm(State{Cursor: 2}), bus("a", State{Cursor: 9})}, false,
			Standing{Status: store.StatusPending, HasQueueMode: true, ConsumedBy: 1, TotalGroups: 1}},
		{"dead letter wins", 3, []Group{bus("a", State{Cursor: 9})}, true,
			Standing{Status: store.StatusDeadLetter, ConsumedBy: 1, TotalGroups: 1}},
		{"latest lease", 12, []Group{bus("a", live(10, 15)), bus("b", State{Cursor: 11, LeaseID: other,
			LeaseExpiresAt: now + 60_000, BatchEnd: 12})}, false,
			Standing{Status: store.StatusProcessing, TotalGroups: 2, LeaseExpiresAt: now + 60_000}},
	} {
		if got := StandingOf(tc.off, tc.groups, tc.dead, now); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestSkipMissing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		s          State
		next, last int64
		want       State
		changed    bool
	}{
		{"next follows the cursor", State{Cursor: 4, HeadAttempts: 2}, 5, 9, State{Cursor: 4, HeadAttempts: 2}, false},
		{"a hole before next", State{Cursor: 4, HeadAttempts: 2}, 7, 9, State{Cursor: 6}, true},
		{"nothing left", State{Cursor: 4}, 0, 9, State{Cursor: 9}, true},
		{"the leased batch is gone", leased(), 0, 15, State{Cursor: 15}, true},
		{"the lease keeps its rest", leased(), 13, 15,
			State{Cursor: 12, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15}, true},
	} {
		s := tc.s
		if changed := s.SkipMissing(tc.next, tc.last); changed != tc.changed || s != tc.want {
			t.Errorf("%s: got %+v (changed %v), want %+v (%v)", tc.name, s, changed, tc.want, tc.changed)
		}
	}
}
