package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// Sweep runs a whole sweep of kind at now in steps of at most limit rows and
// returns what it removed.
func Sweep(t testing.TB, s store.Store, kind store.RetentionKind, now time.Time, limit int) int {
	t.Helper()
	total := 0
	var from int64
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatalf("sweep %s: no end after %d steps", kind, steps)
		}
		r, err := s.RetentionSweep(context.Background(), &store.RetentionSweepParams{
			Kind: kind, From: from, Limit: limit, Now: now})
		if err != nil {
			t.Fatalf("RetentionSweep(%s): %v", kind, err)
		}
		total += r.Removed
		if r.Next == 0 {
			return total
		}
		if r.Next < from || (r.Next == from && r.Removed == 0) {
			t.Fatalf("sweep %s: no progress from %d (next %d, removed %d)", kind, from, r.Next, r.Removed)
		}
		from = r.Next
	}
}

// history returns the history of queue as kind → count.
func history(t testing.TB, s store.Store, queue string) map[store.RetentionKind]int {
	t.Helper()
	es, err := s.RetentionHistory(context.Background(), &store.RetentionHistoryParams{Queue: queue, Since: T0.Add(-time.Hour)})
	if err != nil {
		t.Fatalf("RetentionHistory: %v", err)
	}
	out := make(map[store.RetentionKind]int)
	for _, e := range es {
		if e.Queue != queue || e.Tenant != store.DefaultTenant {
			t.Errorf("history of %q holds %+v", queue, e)
		}
		out[e.Kind] += e.Count
	}
	return out
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func wantRemoved(t testing.TB, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: removed %d, want %d", what, got, want)
	}
}

func retention(seconds int) store.QueueOptions {
	return Options(func(o *store.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, seconds })
}

func runRetention(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("ExpiredWhateverTheirState", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", retention(60))
		old := PushAt(t, s, At(0), "q", "p", 3)
		g := PopParams("q", "g", At(time.Second))
		g.Batch = 2
		leased := Pop(t, s, g) // g holds a lease over old[0:2]
		wantIDs(t, "lease before the sweep", leased, old[:2]...)
		fresh := PushAt(t, s, At(50*time.Second), "q", "p", 2)

		wantRemoved(t, "sweep before anything is 60 s old", Sweep(t, s, store.RetentionExpired, At(59*time.Second), 5), 0)
		wantRemoved(t, "sweep at 70 s", Sweep(t, s, store.RetentionExpired, At(70*time.Second), 2), 3)
		// g's lease held only deleted messages: released, and g reads on.
		wantVerdict(t, "ack of a deleted message under the released lease", Ack(t, s, At(71*time.Second),
			AckOf(leased[0], "g", g.LeaseID, store.AckCompleted))[0], vBadLease)
		wantVerdict(t, "ack of a deleted message", Ack(t, s, At(71*time.Second),
			AckOf(leased[0], "g", "", store.AckCompleted))[0], vUnresolv)
		p := PopParams("q", "g", At(72*time.Second))
		p.Batch = 10
		wantIDs(t, "g after the sweep", Pop(t, s, p), fresh...)
		// A group joining from the beginning starts after what was deleted.
		p = PopParams("q", "late", At(72*time.Second))
		p.Batch = 10
		wantIDs(t, "a group joining after the sweep", Pop(t, s, p), fresh...)
		if h := history(t, s, "q"); h[store.RetentionExpired] != 3 || len(h) != 1 {
			t.Errorf("history %v, want 3 retention", h)
		}
	})

	t.Run("ExpiredOnlyWhenEnabled", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetentionSeconds = 1 }))
		kept := PushAt(t, s, At(0), "q", "p", 3)
		wantRemoved(t, "sweep of a queue without retentionEnabled", Sweep(t, s, store.RetentionExpired, At(time.Hour), 10), 0)
		wantIDs(t, "pop", Pop(t, s, PopParams("q", store.QueueMode, At(time.Hour))), kept[0])
	})

	t.Run("OffsetsNeverGoBack", func(t *testing.T) {
		// Retention empties the queue holding the newest messages of the
		// store. The next message must still come after every cursor.
		s := setup(t, newStore)
		Configure(t, s, "q", retention(60))
		PushAt(t, s, At(0), "q", "p", 5)
		if n := drain(t, s, "q", store.QueueMode, At(time.Second)); n != 5 {
			t.Fatalf("drained %d, want 5", n)
		}
		p := PopParams("q", "other", At(time.Second)) // a group that consumed nothing
		p.Batch = 1
		Pop(t, s, p)
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(2*time.Minute), 100), 5)
		next := PushAt(t, s, At(3*time.Minute), "q", "p", 1)
		wantIDs(t, "queue mode after the sweep", Pop(t, s, PopParams("q", store.QueueMode, At(3*time.Minute))), next...)
		wantIDs(t, "the other group after the sweep", Pop(t, s, PopParams("q", "other", At(time.Hour))), next...)
	})

	t.Run("DedupLastsWhileStored", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", retention(60))
		a := Item("q", "p", 0)
		b := Item("q", "p", 1)
		PushItems(t, s, At(0), a)
		PushItems(t, s, At(100*time.Second), b)
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(120*time.Second), 10), 1)
		again := b
		again.MessageID = NewID()
		wantStatuses(t, "push of the stored one again", push(t, s, At(121*time.Second), again), "duplicate")
		again = a
		again.MessageID = NewID()
		wantStatuses(t, "push of the deleted one again", push(t, s, At(121*time.Second), again), "queued")
	})

	t.Run("ExpiredInBoundedSteps", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", retention(1))
		for i := range 5 {
			PushAt(t, s, At(0), "q", "p"+itoa(i), 50)
		}
		r, err := s.RetentionSweep(context.Background(), &store.RetentionSweepParams{
			Kind: store.RetentionExpired, Limit: 7, Now: At(time.Minute)})
		if err != nil || r.Removed > 7 || r.Removed == 0 || r.Next == 0 {
			t.Fatalf("first step: %+v %v, want 1 to 7 removed and more to do", r, err)
		}
		wantRemoved(t, "the rest of the sweep", Sweep(t, s, store.RetentionExpired, At(time.Minute), 7), 250-r.Removed)
		wantEmpty(t, "pop after the sweep", Pop(t, s, PopParams("q", store.QueueMode, At(time.Minute))))
	})

	t.Run("BudgetEndsAtAPartitionsEnd", func(t *testing.T) {
		// A step whose budget runs out just as a partition is done must
		// leave the next partitions to the next step, not skip them.
		s := setup(t, newStore)
		Configure(t, s, "q", retention(1))
		for i := range 3 {
			PushAt(t, s, At(0), "q", "p"+itoa(i), 4)
		}
		wantRemoved(t, "sweep in steps of 4", Sweep(t, s, store.RetentionExpired, At(time.Minute), 4), 12)
		Configure(t, s, "e", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 1 }))
		for i := range 3 {
			PushAt(t, s, At(0), "e", "p"+itoa(i), 4)
		}
		wantRemoved(t, "eviction in steps of 4", Sweep(t, s, store.RetentionEviction, At(time.Minute), 4), 12)
	})

	t.Run("CompletedByEveryGroup", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) {
			o.RetentionEnabled, o.CompletedRetentionSeconds = true, 10
		}))
		items := PushAt(t, s, At(0), "q", "p", 4)
		Configure(t, s, "nobody", Options(func(o *store.QueueOptions) {
			o.RetentionEnabled, o.CompletedRetentionSeconds = true, 10
		}))
		kept := PushAt(t, s, At(0), "nobody", "p", 4)

		drain(t, s, "q", "g1", At(time.Second))
		p := PopParams("q", "g2", At(time.Second))
		p.Batch = 2
		msgs := Pop(t, s, p)
		Ack(t, s, At(time.Second), AckOf(msgs[1], "g2", p.LeaseID, store.AckCompleted))

		wantRemoved(t, "sweep before 10 s", Sweep(t, s, store.RetentionCompleted, At(9*time.Second), 10), 0)
		wantRemoved(t, "sweep at 20 s", Sweep(t, s, store.RetentionCompleted, At(20*time.Second), 10), 2)
		p = PopParams("q", "g2", At(21*time.Second))
		p.Batch = 10
		wantIDs(t, "g2 reads on", Pop(t, s, p), items[2:]...)
		p = PopParams("nobody", store.QueueMode, At(21*time.Second))
		p.Batch = 10
		wantIDs(t, "a queue nobody consumed keeps everything", Pop(t, s, p), kept...)
		if h := history(t, s, "q"); h[store.RetentionCompleted] != 2 {
			t.Errorf("history %v, want 2 completed_retention", h)
		}
	})

	t.Run("EvictionPerGroup", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 30 }))
		items := PushAt(t, s, At(0), "q", "p", 3)
		p := PopParams("q", "g1", At(time.Second))
		msgs := Pop(t, s, p)
		Ack(t, s, At(time.Second), AckOf(msgs[0], "g1", p.LeaseID, store.AckCompleted))
		p = PopParams("q", "g2", At(time.Second))
		p.Batch = 3
		msgs = Pop(t, s, p)
		Ack(t, s, At(time.Second), AckOf(msgs[2], "g2", p.LeaseID, store.AckCompleted))

		wantRemoved(t, "sweep before 30 s", Sweep(t, s, store.RetentionEviction, At(29*time.Second), 10), 0)
		wantRemoved(t, "sweep at 40 s", Sweep(t, s, store.RetentionEviction, At(40*time.Second), 1), 2)
		wantEmpty(t, "g1 after eviction", Pop(t, s, PopParams("q", "g1", At(41*time.Second))))
		wantEmpty(t, "a group joining after eviction", Pop(t, s, PopParams("q", "late", At(41*time.Second))))
		next := PushAt(t, s, At(42*time.Second), "q", "p", 1)
		wantIDs(t, "g1 reads what came after", Pop(t, s, PopParams("q", "g1", At(43*time.Second))), next...)
		wantIDs(t, "so does the late group", Pop(t, s, PopParams("q", "late", At(43*time.Second))), next...)
		if h := history(t, s, "q"); h[store.RetentionEviction] != 2 {
			t.Errorf("history %v, want 2 evictions", h)
		}
		_ = items
	})

	t.Run("EvictionWithoutGroups", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 10 }))
		PushAt(t, s, At(0), "q", "p", 100)
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionEviction, At(15*time.Second), 30), 100)
		p := PopParams("q", store.QueueMode, At(16*time.Second))
		p.Batch = 100
		wantEmpty(t, "pop after eviction", Pop(t, s, p))
	})

	t.Run("PopSkipsWhatWaitedTooLong", func(t *testing.T) {
		// A pop never delivers a message older than maxWaitTimeSeconds,
		// whether or not the sweep has run: it evicts it (a dead letter
		// for the group, which moves past it) and delivers what follows.
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 10 }))
		items := PushAt(t, s, At(0), "q", "p", 3)
		p := PopParams("q", "early", At(9*time.Second))
		p.Batch = 10
		wantIDs(t, "a pop at 9 s", Pop(t, s, p), items...)
		p = PopParams("q", "late", At(11*time.Second))
		p.Batch = 10
		wantEmpty(t, "a pop at 11 s", Pop(t, s, p))
		dl := dlqList(t, s, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: "q", ConsumerGroup: "late"}})
		want := make([]string, len(items))
		for i, it := range items {
			want[i] = it.TransactionID
		}
		if got := dlqTxns(dl); !sameSet(got, want) {
			t.Errorf("dead letters of late: %v, want %v", got, want)
		}
		for _, d := range dl {
			if d.Error != lane.MaxWaitError {
				t.Errorf("dead letter error %q, want %q", d.Error, lane.MaxWaitError)
			}
		}
		next := PushAt(t, s, At(12*time.Second), "q", "p", 1)
		wantIDs(t, "late reads what came after", Pop(t, s, PopParams("q", "late", At(13*time.Second))), next...)
		wantRemoved(t, "the sweep after the pop", Sweep(t, s, store.RetentionEviction, At(14*time.Second), 10), 0)
		wantEmpty(t, "early after the sweep", Pop(t, s, PopParams("q", "early", At(15*time.Second))))
	})

	t.Run("PopDeliversWhatFollowsTheExpired", func(t *testing.T) {
		// Expired messages ahead of fresh ones, more of them than one pop
		// reads at a time, on one partition; a queue without the option
		// next to it delivers everything.
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 10 }))
		PushAt(t, s, At(0), "q", "p", 25)
		fresh := PushAt(t, s, At(20*time.Second), "q", "p", 2)
		PushAt(t, s, At(0), "plain", "p", 2)
		p := PopParams("q", "g", At(21*time.Second))
		wantIDs(t, "a pop of one", Pop(t, s, p), fresh[0])
		p = PopParams("plain", "g", At(21*time.Second))
		p.Batch = 10
		if got := len(Pop(t, s, p)); got != 2 {
			t.Errorf("a queue without maxWaitTimeSeconds delivered %d, want 2", got)
		}
		dl := dlqList(t, s, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: "q", ConsumerGroup: "g"}})
		if len(dl) != 25 {
			t.Errorf("%d dead letters, want 25", len(dl))
		}
	})

	t.Run("PopGetsPastALongExpiredBacklog", func(t *testing.T) {
		// More expired messages than one pop evicts: a few pops in a row
		// reach the fresh message, every expired one dead-lettered once,
		// none delivered.
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 10 }))
		n := 2*lane.PopEvictMax + 5
		PushAt(t, s, At(0), "q", "p", n)
		fresh := PushAt(t, s, At(20*time.Second), "q", "p", 1)
		var got []store.Message
		for i := 0; i < 4 && len(got) == 0; i++ {
			got = Pop(t, s, PopParams("q", "g", At(21*time.Second)))
		}
		wantIDs(t, "pops past the backlog", got, fresh...)
		dl := dlqList(t, s, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: "q", ConsumerGroup: "g"},
			Limit: 2 * n})
		if len(dl) != n {
			t.Errorf("%d dead letters, want %d", len(dl), n)
		}
		seen := map[string]bool{}
		for _, d := range dl {
			if seen[d.TransactionID] {
				t.Errorf("%s dead-lettered twice", d.TransactionID)
			}
			seen[d.TransactionID] = true
		}
	})

	t.Run("EvictionLeavesLeasedLanes", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 30; o.LeaseTime = 300 }))
		items := PushAt(t, s, At(0), "q", "p", 3)
		p := PopParams("q", "g", At(time.Second))
		p.Batch = 2
		msgs := Pop(t, s, p)
		wantRemoved(t, "sweep while g holds a lease", Sweep(t, s, store.RetentionEviction, At(40*time.Second), 10), 0)
		for _, m := range msgs {
			wantVerdict(t, "ack under the lease", Ack(t, s, At(41*time.Second), AckOf(m, "g", p.LeaseID,
				store.AckCompleted))[0], map[bool]store.AckResult{true: vReleased, false: vOK}[m.ID == msgs[1].ID])
		}
		wantRemoved(t, "sweep once the lease is released", Sweep(t, s, store.RetentionEviction, At(42*time.Second), 10), 1)
		wantEmpty(t, "g after eviction", Pop(t, s, PopParams("q", "g", At(43*time.Second))))
		_ = items
	})

	t.Run("RetentionFreesRoomUnderMaxSize", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) {
			o.RetentionEnabled, o.RetentionSeconds, o.MaxSize = true, 10, 3
		}))
		PushAt(t, s, At(0), "q", "p", 3)
		wantStatuses(t, "push into the full queue", push(t, s, At(time.Second), Item("q", "p", 3)), "failed")
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(20*time.Second), 10), 3)
		res := push(t, s, At(21*time.Second), itemsOf("q", "p", 4)...)
		wantStatuses(t, "push after retention", res, "queued", "queued", "queued", "failed")
	})

	t.Run("IdlePartitions", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", retention(1)) // creates the Default partition, never written
		PushAt(t, s, At(0), "q", "emptied", 2)
		PushAt(t, s, At(0), "q", "full", 2)
		PushAt(t, s, At(0), "q", "recent", 1)
		drain(t, s, "q", store.QueueMode, At(time.Second))
		// Retention empties "emptied" and "recent"; "full" is refilled.
		Sweep(t, s, store.RetentionExpired, At(time.Minute), 100)
		PushAt(t, s, At(10*24*time.Hour), "q", "recent", 1)
		Sweep(t, s, store.RetentionExpired, At(10*24*time.Hour+time.Minute), 100)
		PushAt(t, s, At(10*24*time.Hour+2*time.Minute), "q", "full", 1)

		idle := func(now time.Time, since time.Duration) int {
			total := 0
			var from int64
			for {
				r, err := s.RetentionPartitions(context.Background(), &store.RetentionPartitionsParams{
					From: from, IdleSince: now.Add(-since), Limit: 1, Now: now})
				if err != nil {
					t.Fatalf("RetentionPartitions: %v", err)
				}
				total += r.Removed
				if r.Next == 0 {
					return total
				}
				from = r.Next
			}
		}
		now := At(12 * 24 * time.Hour)
		if n := idle(now, 30*24*time.Hour); n != 0 {
			t.Fatalf("removed %d partitions idle for 30 days, want 0", n)
		}
		// Idle for 5 days: Default (never written) and "emptied"; "recent"
		// was written 2 days ago, "full" holds a message.
		if n := idle(now, 5*24*time.Hour); n != 2 {
			t.Fatalf("removed %d partitions idle for 5 days, want 2", n)
		}
		// The names work again at once.
		again := PushAt(t, s, now, "q", "emptied", 1)
		p := PopParams("q", store.QueueMode, now)
		p.Partition = "emptied"
		wantIDs(t, "pop of a re-created partition", Pop(t, s, p), again...)
	})

	t.Run("HistoryPrune", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", retention(1))
		PushAt(t, s, At(0), "q", "p", 2)
		Sweep(t, s, store.RetentionExpired, At(time.Hour), 10)
		PushAt(t, s, At(2*time.Hour), "q", "p", 3)
		Sweep(t, s, store.RetentionExpired, At(3*time.Hour), 10)
		es, err := s.RetentionHistory(context.Background(), &store.RetentionHistoryParams{Since: T0})
		if err != nil || len(es) != 2 || es[0].Count != 2 || es[1].Count != 3 ||
			!es[0].Minute.Equal(At(time.Hour)) || es[1].Kind != store.RetentionExpired {
			t.Fatalf("history: %+v %v, want 2 then 3 retention", es, err)
		}
		n, err := s.RetentionHistoryPrune(context.Background(), &store.RetentionHistoryPruneParams{
			Before: At(2 * time.Hour), Now: At(4 * time.Hour)})
		if err != nil || n != 1 {
			t.Fatalf("prune: %d %v, want 1", n, err)
		}
		if h := history(t, s, "q"); h[store.RetentionExpired] != 3 {
			t.Errorf("history after prune %v, want the 3 of the second sweep", h)
		}
	})
}
