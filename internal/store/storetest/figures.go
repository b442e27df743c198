package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// The figures every route reports (docs/decisions.md, "What the figures
// count"): a partition counts the messages it still holds above its floor,
// whatever removed the others (a clear, retention, a delete of one
// message), and every route sums the same figures.

// groupFigures are one consumer group's figures over a queue.
type groupFigures struct {
	Consumed int64
	Lag      int64
}

// wantFigures checks the figures of queue, the only queue of the store's
// default tenant, as every route reports them at now: the queue (QueueGet,
// QueueList), its partitions summed (QueueGet's page, PartitionList), its
// namespace (QueueRollup), the tenant (QueueOverview), the status gauges
// (StatsQueueGauges), and each group (GroupList, and GroupGet's lanes
// summed).
func wantFigures(t testing.TB, s store.Store, queue string, now time.Time, want store.MessageCounts,
	groups map[string]groupFigures) {
	t.Helper()
	ctx := context.Background()
	noDead := want
	noDead.DeadLetter = 0 // lists and rollups do not count dead letters

	d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: queue, Now: now, Limit: 1000})
	if err != nil {
		t.Fatalf("QueueGet(%s): %v", queue, err)
	}
	wantCounts(t, "QueueGet", d.Queue.Messages, want)
	var sum store.MessageCounts
	for _, p := range d.Partitions {
		sum.Add(p.Messages)
	}
	wantCounts(t, "QueueGet's partitions summed", sum, want)

	l, err := s.QueueList(ctx, &store.QueueListParams{Now: now})
	if err != nil {
		t.Fatalf("QueueList: %v", err)
	}
	wantCounts(t, "QueueList", queueByName(t, l.Queues, queue).Messages, noDead)

	pl, err := s.PartitionList(ctx, &store.PartitionListParams{Queue: queue, Now: now, Limit: 1000})
	if err != nil {
		t.Fatalf("PartitionList: %v", err)
	}
	sum = store.MessageCounts{}
	for _, p := range pl.Partitions {
		sum.Add(p.Messages)
	}
	wantCounts(t, "PartitionList summed", sum, want)

	if ns := d.Queue.Namespace; ns != "" {
		r, err := s.QueueRollup(ctx, &store.QueueRollupParams{By: store.RollupNamespace, Now: now})
		if err != nil {
			t.Fatalf("QueueRollup: %v", err)
		}
		if len(r.Rollups) != 1 || r.Rollups[0].Key != ns {
			t.Fatalf("rollups %+v, want namespace %s alone", r.Rollups, ns)
		}
		wantCounts(t, "QueueRollup", r.Rollups[0].Messages, noDead)
	}

	o, err := s.QueueOverview(ctx, &store.QueueOverviewParams{Now: now})
	if err != nil {
		t.Fatalf("QueueOverview: %v", err)
	}
	wantCounts(t, "QueueOverview", o.Messages, want)
	var lags, totalLag, groupLag int64
	for _, lag := range o.Lags {
		lags += lag.Messages
		if lag.Messages <= 0 || lag.OldestUnread.IsZero() {
			t.Errorf("QueueOverview lag %+v: a lane with nothing unread", lag)
		}
	}
	for _, g := range groups {
		totalLag += g.Lag
		groupLag = max(groupLag, g.Lag)
	}
	if lags != totalLag {
		t.Errorf("QueueOverview lags sum to %d (%+v), want %d", lags, o.Lags, totalLag)
	}

	gs, err := s.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: now})
	if err != nil {
		t.Fatalf("StatsQueueGauges: %v", err)
	}
	var gauge *store.QueueGauge
	for i := range gs.Queues {
		if gs.Queues[i].Queue == queue {
			gauge = &gs.Queues[i]
		}
	}
	switch {
	case gauge == nil:
		t.Errorf("StatsQueueGauges does not describe %s: %+v", queue, gs.Queues)
	case gauge.Pending != want.Pending || gauge.Processing != want.Processing ||
		gauge.DeadLetter != want.DeadLetter || gauge.GroupLag != groupLag:
		t.Errorf("StatsQueueGauges %+v, want pending %d processing %d dead letters %d group lag %d", *gauge,
			want.Pending, want.Processing, want.DeadLetter, groupLag)
	}
	if gs.Pending != want.Pending || gs.DeadLetter != want.DeadLetter {
		t.Errorf("StatsQueueGauges totals: pending %d dead letters %d, want %d and %d", gs.Pending, gs.DeadLetter,
			want.Pending, want.DeadLetter)
	}

	gl, err := s.GroupList(ctx, &store.GroupListParams{Now: now, Limit: 1000})
	if err != nil {
		t.Fatalf("GroupList: %v", err)
	}
	listed := map[string]groupFigures{}
	for _, g := range gl {
		if g.Queue == queue {
			listed[g.ConsumerGroup] = groupFigures{Consumed: g.Consumed, Lag: g.Lag}
		}
	}
	if !maps.Equal(listed, groups) {
		t.Errorf("GroupList: %v, want %v", listed, groups)
	}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		lanes, err := s.GroupGet(ctx, &store.GroupGetParams{Group: name, Now: now, Limit: 1000})
		if err != nil {
			t.Fatalf("GroupGet(%s): %v", name, err)
		}
		var got groupFigures
		for _, ln := range lanes {
			if ln.Queue == queue {
				got.Consumed += ln.Consumed
				got.Lag += ln.Lag
			}
		}
		if got != groups[name] {
			t.Errorf("GroupGet(%s) summed: %+v, want %+v", name, got, groups[name])
		}
	}
}

// configureIn creates queue in namespace ns with opts at T0.
func configureIn(t testing.TB, s store.Store, queue, ns string, opts store.QueueOptions) {
	t.Helper()
	if _, err := s.QueueConfigure(context.Background(), &store.QueueConfigureParams{Name: queue, Namespace: ns,
		Options: opts, Now: T0}); err != nil {
		t.Fatalf("QueueConfigure(%s): %v", queue, err)
	}
}

// consume pops up to n messages of queue's partition part for group at now
// and acknowledges them.
func consume(t testing.TB, s store.Store, queue, part, group string, n int, now time.Time) {
	t.Helper()
	p := PopParams(queue, group, now)
	p.Partition, p.Batch = part, n
	msgs := Pop(t, s, p)
	if len(msgs) != n {
		t.Fatalf("pop of %d from %s/%s for %s: got %d", n, queue, part, group, len(msgs))
	}
	ackAll(t, s, now, group, p.LeaseID, msgs)
}

func runFigures(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("AfterRetention", func(t *testing.T) {
		s := setup(t, newStore)
		configureIn(t, s, "q", "ns", retention(60))
		PushAt(t, s, At(0), "q", "p1", 4)
		PushAt(t, s, At(50*time.Second), "q", "p1", 2)
		PushAt(t, s, At(0), "q", "p2", 2)
		PushAt(t, s, At(50*time.Second), "q", "p2", 1)
		consume(t, s, "q", "p1", "g", 2, At(51*time.Second))
		consume(t, s, "q", "p1", "h", 6, At(51*time.Second))
		consume(t, s, "q", "p2", "h", 3, At(51*time.Second))
		now := At(52 * time.Second)
		wantFigures(t, s, "q", now, store.MessageCounts{Total: 9, Pending: 7, Completed: 9},
			map[string]groupFigures{"g": {Consumed: 2, Lag: 7}, "h": {Consumed: 9}})

		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(70*time.Second), 4), 6)
		now = At(71 * time.Second)
		wantFigures(t, s, "q", now, store.MessageCounts{Total: 3, Pending: 3, Completed: 3},
			map[string]groupFigures{"g": {Lag: 3}, "h": {Consumed: 3}})
		// The figures follow the consumers on from there.
		consume(t, s, "q", "p1", "g", 2, now)
		wantFigures(t, s, "q", now, store.MessageCounts{Total: 3, Pending: 1, Completed: 3},
			map[string]groupFigures{"g": {Consumed: 2, Lag: 1}, "h": {Consumed: 3}})
	})

	t.Run("AfterSingleDeletes", func(t *testing.T) {
		ctx := context.Background()
		s := setup(t, newStore)
		configureIn(t, s, "q", "ns", store.DefaultQueueOptions())
		ms := pushSeries(t, s, T0, "q", "p", 5)
		now := At(10 * time.Second)
		consume(t, s, "q", "p", "g", 2, now)
		consume(t, s, "q", "p", "h", 5, now)
		k := PopParams("q", "k", now) // k leases all five
		k.Batch = 5
		if got := Pop(t, s, k); len(got) != 5 {
			t.Fatalf("k popped %d", len(got))
		}
		wantFigures(t, s, "q", now, store.MessageCounts{Total: 5, Pending: 3, Processing: 5, Completed: 5},
			map[string]groupFigures{"g": {Consumed: 2, Lag: 3}, "h": {Consumed: 5}, "k": {Lag: 5}})

		// One that g and h consumed, one that only h did, and the newest.
		for _, i := range []int{1, 3, 4} {
			if ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ms[i].ref(), Now: now}); !ok || err != nil {
				t.Fatalf("MessageDelete: %v %v", ok, err)
			}
		}
		wantFigures(t, s, "q", now, store.MessageCounts{Total: 2, Pending: 1, Processing: 2, Completed: 2},
			map[string]groupFigures{"g": {Consumed: 1, Lag: 1}, "h": {Consumed: 2}, "k": {Lag: 2}})
		// g reads the one left for it, over the gaps.
		p := PopParams("q", "g", now)
		p.Batch = 10
		got := Pop(t, s, p)
		wantIDs(t, "g after the deletes", got, ms[2].PushItem)
		ackAll(t, s, now, "g", p.LeaseID, got)
		wantFigures(t, s, "q", now, store.MessageCounts{Total: 2, Processing: 2, Completed: 2},
			map[string]groupFigures{"g": {Consumed: 2}, "h": {Consumed: 2}, "k": {Lag: 2}})
		// Deleting the rest empties the partition.
		for _, i := range []int{0, 2} {
			if ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ms[i].ref(), Now: now}); !ok || err != nil {
				t.Fatalf("MessageDelete: %v %v", ok, err)
			}
		}
		wantFigures(t, s, "q", now, store.MessageCounts{}, map[string]groupFigures{"g": {}, "h": {}, "k": {}})
		d, _ := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: now})
		if pt := d.Partitions[0]; !pt.NewestMessage.IsZero() || !pt.OldestMessage.IsZero() {
			t.Errorf("an emptied partition: newest %v oldest %v", pt.NewestMessage, pt.OldestMessage)
		}
		// A clear and a retention sweep over the gaps count nothing twice.
		fresh := pushSeries(t, s, At(20*time.Second), "q", "p", 2)
		if ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: fresh[0].ref(), Now: now}); !ok || err != nil {
			t.Fatalf("MessageDelete: %v %v", ok, err)
		}
		wantFigures(t, s, "q", At(30*time.Second), store.MessageCounts{Total: 1, Pending: 1},
			map[string]groupFigures{"g": {Lag: 1}, "h": {Lag: 1}, "k": {Lag: 1}})
		if c, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Now: At(30 * time.Second)}); err != nil || c.Messages != 1 {
			t.Fatalf("QueueClear: %+v %v, want 1 message cleared", c, err)
		}
		wantFigures(t, s, "q", At(30*time.Second), store.MessageCounts{}, map[string]groupFigures{"g": {}, "h": {}, "k": {}})
	})

	t.Run("RetentionOverGaps", func(t *testing.T) {
		ctx := context.Background()
		s := setup(t, newStore)
		configureIn(t, s, "q", "ns", retention(60))
		old := pushSeries(t, s, At(0), "q", "p", 3)
		young := pushSeries(t, s, At(100*time.Second), "q", "p", 3)
		for _, m := range []pushed{old[1], young[1]} {
			if ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: m.ref(), Now: At(time.Minute)}); !ok || err != nil {
				t.Fatalf("MessageDelete: %v %v", ok, err)
			}
		}
		consume(t, s, "q", "p", "g", 1, At(2*time.Minute))
		wantFigures(t, s, "q", At(2*time.Minute), store.MessageCounts{Total: 4, Pending: 3, Completed: 1},
			map[string]groupFigures{"g": {Consumed: 1, Lag: 3}})
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(150*time.Second), 10), 2)
		wantFigures(t, s, "q", At(150*time.Second), store.MessageCounts{Total: 2, Pending: 2},
			map[string]groupFigures{"g": {Lag: 2}})
	})

	t.Run("RetentionAfterClear", func(t *testing.T) {
		// What a clear made unreachable is the clear's to free: retention
		// reads on above it and counts only what it deleted itself.
		s := setup(t, newStore)
		configureIn(t, s, "q", "ns", retention(60))
		PushAt(t, s, At(0), "q", "p", 3)
		if _, err := s.QueueClear(context.Background(), &store.QueueClearParams{Name: "q", Now: At(time.Second)}); err != nil {
			t.Fatal(err)
		}
		PushAt(t, s, At(10*time.Second), "q", "p", 2)
		fresh := PushAt(t, s, At(100*time.Second), "q", "p", 1)
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(2*time.Minute), 10), 2)
		if h := history(t, s, "q"); h[store.RetentionExpired] != 2 {
			t.Errorf("history %v, want the 2 retention deleted", h)
		}
		wantFigures(t, s, "q", At(2*time.Minute), store.MessageCounts{Total: 1, Pending: 1}, map[string]groupFigures{})
		p := PopParams("q", store.QueueMode, At(2*time.Minute))
		p.Batch = 10
		wantIDs(t, "pop after the sweep", Pop(t, s, p), fresh...)
		// The clear's rows are still there for its purge.
		res, err := s.QueueClearPurge(context.Background(), &store.QueuePurgeParams{Limit: 100, Now: At(3 * time.Minute)})
		if err != nil || res.Deleted != 3 || res.More {
			t.Fatalf("QueueClearPurge: %+v %v, want the 3 cleared messages", res, err)
		}
	})
}
