package storetest

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// minute returns the start of T0's minute plus i minutes.
func minute(i int) time.Time { return T0.Truncate(time.Minute).Add(time.Duration(i) * time.Minute) }

// ops returns counters with push, pop and ack figures derived from n.
func ops(n int64) store.QueueOps {
	return store.QueueOps{PushRequests: n, PushMessages: 10 * n, PopRequests: n + 1, PopMessages: 2 * n,
		PopEmpty: 1, AckRequests: n, AckSuccess: n, AckFailed: 1, DLQ: 1, Transactions: 1, LagCount: 2 * n,
		LagSumMs: 100 * n, LagMaxMs: 50 * n}
}

// record writes p, failing the test on error.
func record(t testing.TB, s store.Store, p *store.StatsRecordParams) {
	t.Helper()
	if err := s.StatsRecord(context.Background(), p); err != nil {
		t.Fatalf("StatsRecord: %v", err)
	}
}

// series reads StatsQueueSeries, failing the test on error.
func series(t testing.TB, s store.Store, p store.StatsSeriesParams) []store.QueueBucket {
	t.Helper()
	out, err := s.StatsQueueSeries(context.Background(), &p)
	if err != nil {
		t.Fatalf("StatsQueueSeries(%+v): %v", p, err)
	}
	return out
}

func runStats(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	// Two brokers, two queues of the default tenant and one of tenant A,
	// over three minutes.
	fill := func(t *testing.T, s store.Store) {
		var qs []store.QueueMinute
		for i := range 3 {
			for _, b := range []string{"w1", "w2"} {
				qs = append(qs,
					store.QueueMinute{Tenant: store.DefaultTenant, Queue: "a", Minute: minute(i), Hostname: "h",
						WorkerID: b, Ops: ops(int64(i + 1)), Parked: int64(i + 1)},
					store.QueueMinute{Tenant: store.DefaultTenant, Queue: "b", Minute: minute(i), Hostname: "h",
						WorkerID: b, Ops: ops(1), Parked: 1})
			}
			qs = append(qs, store.QueueMinute{Tenant: tenantA, Queue: "a", Minute: minute(i), Hostname: "h",
				WorkerID: "w1", Ops: ops(100)})
		}
		record(t, s, &store.StatsRecordParams{Queues: qs})
	}
	window := func(from, to int) store.StatsSeriesParams {
		return store.StatsSeriesParams{From: minute(from), To: minute(to)}
	}

	t.Run("SeriesSumsBrokersAndQueuesPerBucket", func(t *testing.T) {
		s := setup(t, newStore)
		fill(t, s)
		got := series(t, s, window(0, 3))
		if len(got) != 3 {
			t.Fatalf("%d buckets, want 3: %+v", len(got), got)
		}
		for i, b := range got {
			// Queue a: two brokers at ops(i+1); queue b: two at ops(1).
			want := store.QueueOps{}
			for range 2 {
				want.Add(ops(int64(i + 1)))
				want.Add(ops(1))
			}
			if !b.Bucket.Equal(minute(i)) || b.Ops != want {
				t.Errorf("bucket %d: %v %+v, want %v %+v", i, b.Bucket, b.Ops, minute(i), want)
			}
			// Parked: summed over brokers and queues in the minute.
			if b.Parked != 2*int64(i+1)+2 {
				t.Errorf("bucket %d: parked %d, want %d", i, b.Parked, 2*(i+1)+2)
			}
			if b.Queue != "" || b.Hostname != "" {
				t.Errorf("bucket %d names queue %q broker %q", i, b.Queue, b.Hostname)
			}
		}
		// One bucket of three minutes (To is exclusive; buckets align on
		// the epoch): parked keeps the largest minute.
		wide := window(0, 3)
		wide.Bucket = 3 * time.Minute
		start := store.BucketOf(minute(0), 3*time.Minute)
		wide.From = start
		wide.To = start.Add(3 * time.Minute)
		var want store.QueueOps
		var parked int64
		for _, b := range series(t, s, window(0, 3)) {
			if !b.Bucket.Before(wide.From) && b.Bucket.Before(wide.To) {
				want.Add(b.Ops)
				parked = max(parked, b.Parked)
			}
		}
		got = series(t, s, wide)
		if len(got) != 1 || got[0].Ops != want || got[0].Parked != parked || !got[0].Bucket.Equal(start) {
			t.Errorf("3-minute bucket: %+v, want ops %+v parked %d at %v", got, want, parked, start)
		}
		// [From, To): the last minute is left out.
		if got := series(t, s, window(1, 2)); len(got) != 1 || !got[0].Bucket.Equal(minute(1)) {
			t.Errorf("window of minute 1: %+v", got)
		}
	})

	t.Run("WideBucketsReadTheRollup", func(t *testing.T) {
		s := setup(t, newStore)
		// Two brokers over 20 minutes from a slot's start: the second
		// broker parks 3 polls in minute 4 only.
		start := store.BucketOf(minute(0), store.RollupSlot)
		var qs []store.QueueMinute
		for i := range 20 {
			at := start.Add(time.Duration(i) * time.Minute)
			qs = append(qs, store.QueueMinute{Queue: "a", Minute: at, Hostname: "h", WorkerID: "w1", Ops: ops(1), Parked: 1})
			w2 := store.QueueMinute{Queue: "a", Minute: at, Hostname: "h", WorkerID: "w2", Ops: ops(2)}
			if i == 4 {
				w2.Parked = 3
			}
			qs = append(qs, w2, store.QueueMinute{Queue: "b", Minute: at, Hostname: "h", WorkerID: "w1", Ops: ops(1)})
		}
		record(t, s, &store.StatsRecordParams{Queues: qs})
		p := store.StatsSeriesParams{From: start, To: start.Add(30 * time.Minute), Bucket: store.RollupSlot,
			Group: store.SeriesByQueue, Queues: []string{"a"}}
		if got := series(t, s, p); len(got) != 0 {
			t.Fatalf("slots before the rollup: %+v", got)
		}
		if err := s.StatsRollup(ctx, &store.StatsRollupParams{From: start.Add(time.Minute), To: start.Add(20 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		// The same series from the minute rows, 15-minute buckets by hand.
		byMinute := p
		byMinute.Bucket, byMinute.Hostname = time.Minute, "h" // a broker filter reads minutes
		want := map[int64]store.QueueOps{}
		for _, b := range series(t, s, byMinute) {
			k := store.BucketOf(b.Bucket, store.RollupSlot).UnixMilli()
			o := want[k]
			o.Add(b.Ops)
			want[k] = o
		}
		got := series(t, s, p)
		if len(got) != 2 || got[0].Ops != want[start.UnixMilli()] ||
			got[1].Ops != want[start.Add(store.RollupSlot).UnixMilli()] {
			t.Fatalf("slots: %+v, want %+v", got, want)
		}
		if got[0].Parked != 4 || got[1].Parked != 1 {
			t.Errorf("parked %d and %d, want 4 (1 + 3 in minute 4) and 1", got[0].Parked, got[1].Parked)
		}
		// A rollup again replaces the slots: a late minute is counted once.
		late := store.QueueMinute{Queue: "a", Minute: start.Add(20 * time.Minute), Hostname: "h", WorkerID: "w3", Ops: ops(5)}
		record(t, s, &store.StatsRecordParams{Queues: []store.QueueMinute{late}})
		for range 2 {
			if err := s.StatsRollup(ctx, &store.StatsRollupParams{From: start, To: start.Add(30 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		got = series(t, s, p)
		w := want[start.Add(store.RollupSlot).UnixMilli()]
		w.Add(ops(5))
		if len(got) != 2 || got[1].Ops != w {
			t.Errorf("after a late minute: %+v, want %+v", got[1].Ops, w)
		}
		// Every queue together, in one hour-wide bucket.
		hour := store.StatsSeriesParams{From: store.BucketOf(start, time.Hour), To: store.BucketOf(start, time.Hour).Add(time.Hour),
			Bucket: time.Hour}
		if got := series(t, s, hour); len(got) != 1 || got[0].Ops.PushRequests != 20*(1+2+1)+5 {
			t.Errorf("hour bucket: %+v", got)
		}
	})

	t.Run("SeriesByQueueAndReplica", func(t *testing.T) {
		s := setup(t, newStore)
		fill(t, s)
		p := window(0, 1)
		p.Group = store.SeriesByQueue
		got := series(t, s, p)
		if len(got) != 2 || got[0].Queue != "a" || got[1].Queue != "b" || got[0].Tenant != store.DefaultTenant {
			t.Fatalf("by queue: %+v", got)
		}
		var want store.QueueOps
		want.Add(ops(1))
		want.Add(ops(1))
		if got[0].Ops != want || got[0].Parked != 2 {
			t.Errorf("queue a at minute 0: %+v parked %d, want %+v parked 2", got[0].Ops, got[0].Parked, want)
		}
		p.Group = store.SeriesByReplica
		got = series(t, s, p)
		if len(got) != 4 || got[0].Queue != "a" || got[0].WorkerID != "w1" || got[1].WorkerID != "w2" ||
			got[0].Hostname != "h" || got[0].Ops != ops(1) {
			t.Fatalf("by replica: %+v", got)
		}
		p.WorkerID = "w2"
		if got := series(t, s, p); len(got) != 2 || got[0].WorkerID != "w2" || got[1].WorkerID != "w2" {
			t.Errorf("worker w2 only: %+v", got)
		}
		p.WorkerID, p.Hostname = "", "other"
		if got := series(t, s, p); len(got) != 0 {
			t.Errorf("hostname other: %+v", got)
		}
	})

	t.Run("SeriesFilters", func(t *testing.T) {
		s := setup(t, newStore)
		fill(t, s)
		// Tenant A sees its own queue a only.
		p := window(0, 3)
		p.Tenant, p.Group = tenantA, store.SeriesByQueue
		got := series(t, s, p)
		if len(got) != 3 || got[0].Tenant != tenantA || got[0].Ops != ops(100) {
			t.Fatalf("tenant A: %+v", got)
		}
		// Every tenant.
		p = window(0, 1)
		p.AllTenants, p.Group = true, store.SeriesByQueue
		if got := series(t, s, p); len(got) != 3 {
			t.Errorf("every tenant at minute 0: %+v", got)
		}
		// Queue filter.
		p = window(0, 3)
		p.Queues = []string{"b"}
		got = series(t, s, p)
		if len(got) != 3 || got[0].Ops.PushRequests != 2 {
			t.Errorf("queue b: %+v", got)
		}
		// Namespace and task filters read the queues' own.
		if _, err := s.QueueConfigure(ctx, &store.QueueConfigureParams{Name: "b", Namespace: "shop", Task: "bill",
			Options: store.DefaultQueueOptions(), Now: T0}); err != nil {
			t.Fatal(err)
		}
		p = window(0, 3)
		p.Namespace = "shop"
		if got := series(t, s, p); len(got) != 3 || got[0].Ops.PushRequests != 2 {
			t.Errorf("namespace shop: %+v", got)
		}
		p.Task = "bill"
		if got := series(t, s, p); len(got) != 3 {
			t.Errorf("namespace shop, task bill: %+v", got)
		}
		p.Task = "other"
		if got := series(t, s, p); len(got) != 0 {
			t.Errorf("task other: %+v", got)
		}
	})

	t.Run("RecordReplacesItsMinute", func(t *testing.T) {
		s := setup(t, newStore)
		row := store.QueueMinute{Queue: "a", Minute: minute(0), Hostname: "h", WorkerID: "w", Ops: ops(1), Parked: 5}
		record(t, s, &store.StatsRecordParams{Queues: []store.QueueMinute{row}})
		row.Ops, row.Parked = ops(3), 1
		record(t, s, &store.StatsRecordParams{Queues: []store.QueueMinute{row}})
		got := series(t, s, window(0, 1))
		if len(got) != 1 || got[0].Ops != ops(3) || got[0].Parked != 1 {
			t.Errorf("after a second record of the minute: %+v, want ops(3) parked 1", got)
		}
		if err := s.StatsRecord(ctx, &store.StatsRecordParams{}); err != nil {
			t.Errorf("empty record: %v", err)
		}
	})

	t.Run("WorkerSeries", func(t *testing.T) {
		s := setup(t, newStore)
		var ws []store.WorkerMinute
		for i := range 3 {
			for _, w := range []string{"w2", "w1"} {
				ws = append(ws, store.WorkerMinute{Hostname: "h", WorkerID: w, Minute: minute(i), PID: 42, Port: 6632,
					Ops: ops(int64(i + 1)), DBErrors: int64(i),
					Gauges: map[string]store.GaugeStat{"rss": {Avg: 1.5, Min: 1, Max: 2, Last: 2, N: 60}}})
			}
		}
		record(t, s, &store.StatsRecordParams{Workers: ws})
		got, err := s.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: minute(0), To: minute(3)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 || got[0].WorkerID != "w1" || !got[0].Minute.Equal(minute(0)) || got[3].WorkerID != "w2" {
			t.Fatalf("worker rows: %+v", got)
		}
		w := got[2]
		if w.PID != 42 || w.Port != 6632 || w.Ops != ops(3) || w.DBErrors != 2 ||
			!reflect.DeepEqual(w.Gauges, map[string]store.GaugeStat{"rss": {Avg: 1.5, Min: 1, Max: 2, Last: 2, N: 60}}) {
			t.Errorf("w1 minute 2: %+v", w)
		}
		got, err = s.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: minute(1), To: minute(2), WorkerID: "w2"})
		if err != nil || len(got) != 1 || got[0].WorkerID != "w2" {
			t.Errorf("w2 at minute 1: %+v, %v", got, err)
		}
	})

	t.Run("StateSeriesKeepsTheLastOfABucket", func(t *testing.T) {
		s := setup(t, newStore)
		var sts []store.QueueState
		for i := range 4 {
			sts = append(sts, store.QueueState{Queue: "a", Minute: minute(i), Pending: int64(10 + i), Processing: 1,
				DeadLetter: 2, GroupLag: 3, Partitions: 4})
		}
		sts = append(sts, store.QueueState{Tenant: tenantA, Queue: "a", Minute: minute(0), Pending: 99})
		record(t, s, &store.StatsRecordParams{States: sts})
		got, err := s.StatsQueueStateSeries(ctx, &store.StatsSeriesParams{From: minute(0), To: minute(4)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || got[3].Pending != 13 || got[3].Partitions != 4 || got[3].GroupLag != 3 ||
			got[3].DeadLetter != 2 || got[3].Processing != 1 || got[3].Tenant != store.DefaultTenant {
			t.Fatalf("by minute: %+v", got)
		}
		start := store.BucketOf(minute(0), 2*time.Minute)
		got, err = s.StatsQueueStateSeries(ctx, &store.StatsSeriesParams{From: start, To: start.Add(2 * time.Minute),
			Bucket: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		for _, st := range sts[:4] {
			if !st.Minute.Before(start) && st.Minute.Before(start.Add(2*time.Minute)) {
				last = st.Pending
			}
		}
		if len(got) != 1 || got[0].Pending != last || !got[0].Minute.Equal(start) {
			t.Errorf("2-minute bucket: %+v, want pending %d at %v", got, last, start)
		}
		got, err = s.StatsQueueStateSeries(ctx, &store.StatsSeriesParams{Tenant: tenantA, From: minute(0),
			To: minute(4), Queues: []string{"a"}})
		if err != nil || len(got) != 1 || got[0].Pending != 99 {
			t.Errorf("tenant A: %+v, %v", got, err)
		}
	})

	t.Run("SweepIsBounded", func(t *testing.T) {
		s := setup(t, newStore)
		fill(t, s)
		record(t, s, &store.StatsRecordParams{
			States:  []store.QueueState{{Queue: "a", Minute: minute(0)}, {Queue: "a", Minute: minute(2)}},
			Workers: []store.WorkerMinute{{Hostname: "h", WorkerID: "w", Minute: minute(0)}, {Hostname: "h", WorkerID: "w", Minute: minute(2)}},
		})
		// Before minute 2: minutes 0 and 1 go, 5 queue rows a minute.
		res, err := s.StatsSweep(ctx, &store.StatsSweepParams{Before: minute(2), Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if !res.More || res.Deleted != 4+1+1 {
			t.Errorf("first sweep: %+v, want 6 deleted and more", res)
		}
		deleted := res.Deleted
		for res.More {
			if res, err = s.StatsSweep(ctx, &store.StatsSweepParams{Before: minute(2), Limit: 4}); err != nil {
				t.Fatal(err)
			}
			deleted += res.Deleted
		}
		if deleted != 10+1+1 {
			t.Errorf("swept %d rows, want 12", deleted)
		}
		p := window(0, 3)
		p.AllTenants = true
		if got := series(t, s, p); len(got) != 1 || !got[0].Bucket.Equal(minute(2)) {
			t.Errorf("after the sweep: %+v", got)
		}
		ws, err := s.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: minute(0), To: minute(3)})
		if err != nil || len(ws) != 1 {
			t.Errorf("broker rows after the sweep: %+v, %v", ws, err)
		}
	})

	t.Run("RetentionSeriesWithoutHistory", func(t *testing.T) {
		s := setup(t, newStore)
		got, err := s.StatsRetentionSeries(ctx, &store.StatsSeriesParams{From: minute(0), To: minute(60),
			Queues: []string{"a"}})
		if err != nil || len(got) != 0 {
			t.Errorf("retention series of an empty store: %+v, %v", got, err)
		}
	})

	t.Run("QueueGauges", func(t *testing.T) {
		s := setup(t, newStore)
		// deep: 5 messages over two partitions; g reads p1 and leases 2
		// of p2's; h dead-letters one of p1's.
		PushAt(t, s, T0, "deep", "p1", 3)
		PushAt(t, s, At(time.Second), "deep", "p2", 2)
		popGroup(t, s, "deep", "p1", "g", At(2*time.Second), true)
		p := PopParams("deep", "g", At(3*time.Second))
		p.Partition, p.Batch = "p2", 2
		if m := Pop(t, s, p); len(m) != 2 {
			t.Fatalf("lease of p2: %d messages", len(m))
		}
		hp := PopParams("deep", "h", At(3*time.Second))
		hp.Partition = "p1"
		m := Pop(t, s, hp)
		wantVerdict(t, "h dead-letters", Ack(t, s, At(3*time.Second), AckOf(m[0], "h", hp.LeaseID, store.AckDLQ))[0], vDLQ)
		// shallow: 1 message, nobody reads it. Tenant A's: 2 messages.
		PushAt(t, s, At(4*time.Second), "shallow", "p", 1)
		PushItems(t, s, At(5*time.Second), itemOf(tenantA, "a", "p", 1), itemOf(tenantA, "a", "p", 2))
		// empty: configured, no message.
		Configure(t, s, "empty", store.DefaultQueueOptions())

		now := At(10 * time.Second)
		g, err := s.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: now, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if g.Total != 4 || len(g.Queues) != 3 {
			t.Fatalf("total %d, %d described, want 4 and 3", g.Total, len(g.Queues))
		}
		// deep: pending is h's (2 unread in p1) + p2's (the lease holds
		// both for g; h never read p2: 2 pending) = 4.
		d := g.Queues[0]
		if d.Queue != "deep" || d.Tenant != store.DefaultTenant || d.Partitions != 2 || d.Pending != 4 ||
			d.Processing != 2 || d.DeadLetter != 1 || d.GroupLag != 4 || !d.OldestUnread.Equal(T0) {
			t.Errorf("deep: %+v", d)
		}
		a := g.Queues[1]
		if a.Queue != "a" || a.Tenant != tenantA || a.Pending != 2 || a.GroupLag != 0 ||
			!a.OldestUnread.Equal(At(5*time.Second)) {
			t.Errorf("tenant A's a: %+v", a)
		}
		if sh := g.Queues[2]; sh.Queue != "shallow" || sh.Pending != 1 || !sh.OldestUnread.Equal(At(4*time.Second)) {
			t.Errorf("shallow: %+v", sh)
		}
		if g.Pending != 4+2+1 || g.DeadLetter != 1 {
			t.Errorf("totals: pending %d dead %d, want 7 and 1", g.Pending, g.DeadLetter)
		}
		g, err = s.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: now})
		if err != nil || g.Total != 4 || len(g.Queues) != 4 || g.Queues[3].Queue != "empty" || g.Queues[3].Pending != 0 ||
			!g.Queues[3].OldestUnread.IsZero() {
			t.Errorf("all queues: %+v, %v", g, err)
		}
	})

	t.Run("QueueMessagesNewestFirstWithStatus", func(t *testing.T) {
		s := setup(t, newStore)
		// Pushed one at a time, alternating partitions: newest first is
		// the reverse of push order on both engines.
		var items []store.PushItem
		for i := range 6 {
			it := Item("q", []string{"p1", "p2"}[i%2], i)
			PushItems(t, s, At(time.Duration(i)*time.Second), it)
			items = append(items, it)
		}
		PushAt(t, s, At(time.Minute), "other", "p1", 1)
		list := func(offset, limit int) []store.ListedMessage {
			t.Helper()
			return queueModeList(t, s, &store.MessageListParams{Queue: "q", Offset: offset, Limit: limit,
				Now: At(2 * time.Minute)})
		}
		got := list(0, 10)
		if len(got) != 6 {
			t.Fatalf("%d messages, want 6", len(got))
		}
		for i, m := range got {
			it := items[5-i]
			if m.ID != it.MessageID || m.TransactionID != it.TransactionID || m.Partition != it.Partition ||
				m.Status != store.StatusPending || !m.CreatedAt.Equal(At(time.Duration(5-i)*time.Second)) ||
				m.PartitionID == "" {
				t.Errorf("message %d: %+v, want payload %d pending", i, m, 5-i)
			}
		}
		if page := list(2, 3); len(page) != 3 || page[0].ID != items[3].MessageID || page[2].ID != items[1].MessageID {
			t.Errorf("offset 2 limit 3: %+v", page)
		}
		if page := list(5, 3); len(page) != 1 || page[0].ID != items[0].MessageID {
			t.Errorf("last page: %+v", page)
		}
		// Queue mode: p1 (0, 2, 4) is read up to 2 and leases 4; p2's 1 is
		// dead-lettered (its cursor passes it).
		now := At(90 * time.Second)
		p := PopParams("q", store.QueueMode, now)
		p.Partition, p.Batch = "p1", 2
		m := Pop(t, s, p)
		Ack(t, s, now, AckOf(m[1], store.QueueMode, p.LeaseID, store.AckCompleted))
		p = PopParams("q", store.QueueMode, now)
		p.Partition = "p1"
		Pop(t, s, p)
		p = PopParams("q", store.QueueMode, now)
		p.Partition = "p2"
		m = Pop(t, s, p)
		wantVerdict(t, "dlq of p2's first", Ack(t, s, now, AckOf(m[0], store.QueueMode, p.LeaseID, store.AckDLQ))[0], vDLQ)
		want := map[string]store.MessageStatus{
			items[0].MessageID: store.StatusCompleted, items[2].MessageID: store.StatusCompleted,
			items[4].MessageID: store.StatusProcessing, items[1].MessageID: store.StatusDeadLetter,
			items[3].MessageID: store.StatusPending, items[5].MessageID: store.StatusPending,
		}
		for _, m := range list(0, 10) {
			if m.Status != want[m.ID] {
				t.Errorf("message of %s (%s): %s, want %s", m.Partition, m.TransactionID, m.Status, want[m.ID])
			}
		}
		if got := queueModeList(t, s, &store.MessageListParams{Queue: "nope", Now: now}); len(got) != 0 {
			t.Errorf("unknown queue: %+v", got)
		}
		if got := queueModeList(t, s, &store.MessageListParams{Queue: "q", Tenant: tenantA, Now: now}); len(got) != 0 {
			t.Errorf("another tenant's queue: %+v", got)
		}
		// A cleared partition's messages are gone from the list.
		if _, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Partition: "p2", Now: now}); err != nil {
			t.Fatal(err)
		}
		if got := list(0, 10); len(got) != 3 || got[0].Partition != "p1" {
			t.Errorf("after clearing p2: %+v", got)
		}
	})

	t.Run("QueueMessagesJudgedByQueueModeAlone", func(t *testing.T) {
		s := setup(t, newStore)
		a, b := Item("q", "p", 0), Item("q", "p", 1)
		PushItems(t, s, T0, a)
		PushItems(t, s, At(time.Second), b)
		now := At(time.Minute)
		// Queue mode commits both; a bus group only the first.
		p := PopParams("q", store.QueueMode, now)
		p.Batch = 2
		m := Pop(t, s, p)
		Ack(t, s, now, AckOf(m[1], store.QueueMode, p.LeaseID, store.AckCompleted))
		p = PopParams("q", "bus", now)
		m = Pop(t, s, p)
		Ack(t, s, now, AckOf(m[0], "bus", p.LeaseID, store.AckCompleted))
		statuses := func(got []store.ListedMessage) map[string]store.MessageStatus {
			out := map[string]store.MessageStatus{}
			for _, m := range got {
				out[m.ID] = m.Status
			}
			return out
		}
		want := map[string]store.MessageStatus{a.MessageID: store.StatusCompleted, b.MessageID: store.StatusCompleted}
		if got := statuses(queueModeList(t, s, &store.MessageListParams{Queue: "q", Now: now})); !maps.Equal(got, want) {
			t.Errorf("judged by queue mode: %v, want %v", got, want)
		}
		all := list(t, s, &store.MessageListParams{Queue: "q", From: T0, To: now, Now: now}).Messages
		want[b.MessageID] = store.StatusPending // the bus group has still to read it
		if got := statuses(all); !maps.Equal(got, want) {
			t.Errorf("judged by every group: %v, want %v", got, want)
		}
		// A status filter judged by queue mode finds the second completed,
		// though the bus group's cursor bounds every group's completed.
		got := queueModeList(t, s, &store.MessageListParams{Queue: "q", Now: now, Status: store.StatusCompleted})
		if len(got) != 2 || got[0].ID != b.MessageID {
			t.Errorf("completed for queue mode: %+v, want both", got)
		}
	})

	t.Run("QueueMessagesAcrossManyPartitions", func(t *testing.T) {
		s := setup(t, newStore)
		// 300 partitions (more than one page of the merge's partition
		// reads), one message each, pushed in order.
		var items []store.PushItem
		for i := range 300 {
			items = append(items, Item("q", "p"+string(rune('a'+i%26))+string(rune('a'+i/26)), i))
		}
		for i := range items {
			PushItems(t, s, At(time.Duration(i)*time.Millisecond), items[i])
		}
		out := queueModeList(t, s, &store.MessageListParams{Queue: "q", Offset: 280, Limit: 50, Now: At(time.Minute)})
		if len(out) != 20 || out[0].ID != items[19].MessageID || out[19].ID != items[0].MessageID {
			t.Errorf("offset 280: %d messages, first %+v", len(out), out[0])
		}
	})

	t.Run("Leases", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p1", 2)
		PushAt(t, s, T0, "q", "p2", 2)
		PushAt(t, s, T0, "r", "p1", 1)
		PushItems(t, s, T0, itemOf(tenantA, "q", "p1", 1))
		now := At(time.Second)
		p := PopParams("q", "g", now)
		p.Partitions, p.Batch = 2, 10 // one lease over two lanes
		if m := Pop(t, s, p); len(m) != 4 {
			t.Fatalf("pop of q: %d messages", len(m))
		}
		Pop(t, s, PopParams("r", "g", now))
		count := func(tenant, queue string, at time.Time) store.LeaseSummary {
			t.Helper()
			l, err := s.StatsLeases(ctx, &store.StatsLeasesParams{Tenant: tenant, Queue: queue, Now: at})
			if err != nil {
				t.Fatal(err)
			}
			return *l
		}
		if got := count("", "", now); got != (store.LeaseSummary{Leases: 2, Lanes: 3}) {
			t.Errorf("default tenant: %+v, want 2 leases on 3 lanes", got)
		}
		if got := count("", "q", now); got != (store.LeaseSummary{Leases: 1, Lanes: 2}) {
			t.Errorf("queue q: %+v", got)
		}
		if got := count(tenantA, "", now); got != (store.LeaseSummary{}) {
			t.Errorf("tenant A: %+v", got)
		}
		if got := count("", "", At(time.Hour)); got != (store.LeaseSummary{}) {
			t.Errorf("after the leases expired: %+v", got)
		}
	})

	t.Run("QueueConfig", func(t *testing.T) {
		s := setup(t, newStore)
		opts := Options(func(o *store.QueueOptions) { o.LeaseTime, o.RetryLimit, o.MaxSize, o.Priority = 30, 7, 100, 5 })
		if _, err := s.QueueConfigure(ctx, &store.QueueConfigureParams{Name: "q", Namespace: "n", Task: "t",
			Options: opts, Now: T0}); err != nil {
			t.Fatal(err)
		}
		d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: T0})
		if err != nil {
			t.Fatal(err)
		}
		if q := d.Queue; q.Name != "q" || q.Namespace != "n" || q.Task != "t" || d.Options != opts || q.ID == "" {
			t.Errorf("config: %+v %+v", q, d.Options)
		}
		_, err = s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Tenant: tenantA, Now: T0})
		wantNotFound(t, "another tenant's queue", err, store.ErrQueueNotFound)
	})

	t.Run("EngineAndPool", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p", 3)
		e, err := s.StatsEngine(ctx, &store.StatsEngineParams{Now: T0})
		if err != nil {
			t.Fatal(err)
		}
		if e.Database.SizeBytes <= 0 || e.Database.PageSize <= 0 || len(e.Settings) == 0 {
			t.Errorf("engine: %+v", e.Database)
		}
		if u := s.StatsPool(); u.Size <= 0 || u.Idle+u.Active > u.Open || u.Open > u.Size {
			t.Errorf("pool: %+v", u)
		}
	})

	t.Run("ClosedStoreFails", func(t *testing.T) {
		s := setup(t, newStore)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := s.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: T0})
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("gauges after Close: %v", err)
		}
		err = s.StatsRecord(ctx, &store.StatsRecordParams{Workers: []store.WorkerMinute{{Hostname: "h"}}})
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("record after Close: %v", err)
		}
	})
}
