package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// transferStore asserts the migration's interface on a store.
func transferStore(t testing.TB, s store.Store) store.TransferStore {
	t.Helper()
	x, ok := s.(store.TransferStore)
	if !ok {
		t.Fatalf("%T does not implement store.TransferStore", s)
	}
	return x
}

// importMessages are n messages with distinct fields, created a millisecond
// and a few microseconds apart from start.
func importMessages(start time.Time, first, n int) []store.TransferMessage {
	out := make([]store.TransferMessage, n)
	for i := range out {
		k := first + i
		out[i] = store.TransferMessage{
			ID: NewID(), TransactionID: fmt.Sprintf("txn-%d", k), Payload: []byte(fmt.Sprintf(`{"k":%d}`, k)),
			CreatedAt: start.Add(time.Duration(k)*time.Millisecond + 7*time.Microsecond),
		}
		if k%2 == 0 {
			out[i].TraceID, out[i].ProducerSub = NewID(), "producer-"+fmt.Sprint(k)
		}
	}
	return out
}

func runTransfer(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	t.Run("ImportKeepsOrderPositionsAndDeadLetters", func(t *testing.T) {
		s := setup(t, newStore)
		x := transferStore(t, s)
		if n, err := x.TransferQueueCount(ctx); err != nil || n != 0 {
			t.Fatalf("TransferQueueCount of a fresh store = %d, %v; want 0", n, err)
		}
		ref := store.TransferQueueRef{Name: "moved"}
		opts := store.DefaultQueueOptions()
		opts.RetryLimit, opts.LeaseTime, opts.Priority, opts.DeadLetterQueue = 7, 45, 3, true
		if err := x.ImportQueue(ctx, store.TransferQueue{TransferQueueRef: ref, Namespace: "ns", Task: "tk",
			Options: opts, CreatedAt: T0}); err != nil {
			t.Fatalf("ImportQueue: %v", err)
		}
		const keptID = "0190f7a2-0000-7000-8000-000000000001"
		p1, err := x.ImportPartition(ctx, ref, store.TransferPartition{ID: keptID, Name: "p1", CreatedAt: T0})
		if err != nil || p1 != keptID {
			t.Fatalf("ImportPartition(p1) = %q, %v; want the id kept", p1, err)
		}
		p2, err := x.ImportPartition(ctx, ref, store.TransferPartition{Name: "p2", CreatedAt: T0})
		if err != nil || p2 == "" {
			t.Fatalf("ImportPartition(p2) = %q, %v", p2, err)
		}
		ms := importMessages(T0, 0, 5)
		for _, batch := range [][]store.TransferMessage{ms[:3], ms[3:]} {
			if err := x.ImportMessages(ctx, p1, batch); err != nil {
				t.Fatalf("ImportMessages: %v", err)
			}
		}
		ms2 := importMessages(T0, 10, 2)
		if err := x.ImportMessages(ctx, p2, ms2); err != nil {
			t.Fatalf("ImportMessages(p2): %v", err)
		}
		if err := x.ImportMessages(ctx, NewID(), ms2); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ImportMessages into an unknown partition: %v, want ErrNotFound", err)
		}
		for _, g := range []store.TransferGroup{
			{Name: "g", CreatedAt: T0, Consumed: map[string]int64{p1: 2}},
			{Name: "done", CreatedAt: T0, Consumed: map[string]int64{p1: 5, p2: 9}},
			{Name: store.QueueMode, CreatedAt: T0},
		} {
			if err := x.ImportGroup(ctx, ref, g); err != nil {
				t.Fatalf("ImportGroup(%s): %v", g.Name, err)
			}
		}
		dl := []store.TransferDeadLetter{{TransactionID: "txn-1", Group: "g", Error: "boom", RetryCount: 4,
			FailedAt: At(time.Minute)}}
		if err := x.ImportDeadLetters(ctx, p1, dl); err != nil {
			t.Fatalf("ImportDeadLetters: %v", err)
		}
		if err := x.ImportDeadLetters(ctx, p1, []store.TransferDeadLetter{{TransactionID: "nope", Group: "g"}}); err == nil {
			t.Fatal("ImportDeadLetters of an unknown transactionId succeeded")
		}
		c, err := x.TransferCounts(ctx)
		if err != nil {
			t.Fatalf("TransferCounts: %v", err)
		}
		if want := (store.TransferCounts{Queues: 1, Partitions: 2, Messages: 7, ConsumerGroups: 3, DeadLetters: 1}); c != want {
			t.Fatalf("TransferCounts = %+v, want %+v", c, want)
		}

		now := At(time.Hour)
		got, _ := popGroup(t, s, "moved", "p1", "g", now, true)
		wantMessages(t, "group g after 2 consumed", got, ms[2:])
		if got, _ := popGroup(t, s, "moved", "", "done", now, true); len(got) != 0 {
			t.Fatalf("group done popped %d messages, want none", len(got))
		}
		got, _ = popGroup(t, s, "moved", "p1", store.QueueMode, now, true)
		wantMessages(t, "queue mode from the start", got, ms)

		// A push after the import lands after the imported messages.
		PushItems(t, s, now, Item("moved", "p1", 99))
		got, _ = popGroup(t, s, "moved", "p1", "done", now, true)
		if len(got) != 1 || string(got[0].Payload) != `{"n":99}` {
			t.Fatalf("after a push, group done popped %d messages, want the pushed one", len(got))
		}

		d := dlqList(t, s, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: "moved"}})
		if len(d) != 1 || d[0].TransactionID != "txn-1" || d[0].Error != "boom" || d[0].RetryCount != 4 ||
			d[0].ConsumerGroup != "g" || !d[0].FailedAt.Equal(At(time.Minute)) {
			t.Fatalf("DLQ after import = %+v", d)
		}
		det, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "moved", Now: now})
		if err != nil || det.Queue.Namespace != "ns" || det.Queue.Task != "tk" || det.Queue.Messages.Total != 8 {
			t.Fatalf("QueueGet after import = %+v, %v; want ns/tk and 8 messages", det, err)
		}
		if det.Options != opts {
			t.Fatalf("options after import = %+v; want %+v", det.Options, opts)
		}

		// The export reads back what was imported, with offsets that the
		// cursors name.
		back, err := x.ExportMessages(ctx, p1, 0, 3)
		if err != nil || len(back) != 3 {
			t.Fatalf("ExportMessages = %d, %v; want 3", len(back), err)
		}
		more, err := x.ExportMessages(ctx, p1, back[2].Offset, 100)
		if err != nil || len(more) != 3 {
			t.Fatalf("ExportMessages after %d = %d, %v; want 3", back[2].Offset, len(more), err)
		}
		for i, m := range append(back, more[:2]...) {
			w := ms[i]
			if m.ID != w.ID || m.TransactionID != w.TransactionID || m.TraceID != w.TraceID ||
				m.ProducerSub != w.ProducerSub || string(m.Payload) != string(w.Payload) ||
				!m.CreatedAt.Equal(w.CreatedAt.Truncate(time.Millisecond)) {
				t.Fatalf("exported message %d = %+v, want %+v", i, m, w)
			}
		}
		groups, err := x.ExportGroups(ctx, ref)
		if err != nil || len(groups) != 3 {
			t.Fatalf("ExportGroups = %+v, %v", groups, err)
		}
		dls, err := x.ExportDeadLetters(ctx, p1, 0, 10)
		if err != nil || len(dls) != 1 || dls[0].TransactionID != "txn-1" || dls[0].RetryCount != 4 {
			t.Fatalf("ExportDeadLetters = %+v, %v", dls, err)
		}
		var qs []store.TransferQueue
		if err := x.ExportQueues(ctx, func(q store.TransferQueue) error { qs = append(qs, q); return nil }); err != nil ||
			len(qs) != 1 || qs[0].Options != opts || qs[0].Namespace != "ns" {
			t.Fatalf("ExportQueues = %+v, %v", qs, err)
		}
	})

	t.Run("ExportCursorsOfAGroupPartWay", func(t *testing.T) {
		s := setup(t, newStore)
		x := transferStore(t, s)
		Push(t, s, "src", "a", 6)
		consume(t, s, "src", "a", "g", 4, At(time.Second))
		groups, err := x.ExportGroups(ctx, store.TransferQueueRef{Name: "src"})
		if err != nil || len(groups) != 1 {
			t.Fatalf("ExportGroups = %+v, %v", groups, err)
		}
		var pid string
		if err := x.ExportPartitions(ctx, store.TransferQueueRef{Name: "src"}, func(p store.TransferPartition) error {
			if p.Name == "a" {
				pid = p.ID
			}
			return nil
		}); err != nil || pid == "" {
			t.Fatalf("ExportPartitions: %v", err)
		}
		ms, err := x.ExportMessages(ctx, pid, 0, 100)
		if err != nil || len(ms) != 6 {
			t.Fatalf("ExportMessages = %d, %v", len(ms), err)
		}
		if got := groups[0].Cursors[pid]; got != ms[3].Offset {
			t.Fatalf("cursor of g = %d, want the 4th message's offset %d", got, ms[3].Offset)
		}
		if n, err := x.TransferQueueCount(ctx); err != nil || n != 1 {
			t.Fatalf("TransferQueueCount = %d, %v; want 1", n, err)
		}
	})

	t.Run("KVRowsKeepTheirVersions", func(t *testing.T) {
		src, dst := setup(t, newStore), newStore(t)
		xs, xd := transferStore(t, src), transferStore(t, dst)
		for i := range 5 {
			KVApply(t, src, At(time.Duration(i)*time.Second), KVSet("ns", fmt.Sprintf("k%d", i), fmt.Sprintf(`{"v":%d}`, i)))
		}
		KVApply(t, src, At(time.Minute), KVSet("ns", "k1", `"again"`))
		var after store.TransferKV
		for {
			rows, err := xs.ExportKV(ctx, after, 2)
			if err != nil {
				t.Fatalf("ExportKV: %v", err)
			}
			if err := xd.ImportKV(ctx, rows); err != nil {
				t.Fatalf("ImportKV: %v", err)
			}
			if len(rows) < 2 {
				break
			}
			after = rows[len(rows)-1]
		}
		e := kvGet(t, dst, At(time.Hour), "ns", "k1")
		if e == nil || string(e.Value) != `"again"` || e.Version != 2 || !e.UpdatedAt.Equal(At(time.Minute)) {
			t.Fatalf("imported k1 = %+v, want version 2 of \"again\"", e)
		}
		c, err := xd.TransferCounts(ctx)
		if err != nil || c.KV != 5 {
			t.Fatalf("TransferCounts = %+v, %v; want 5 keys", c, err)
		}
	})
	runTransferFeatures(t, newStore)
}

// copyFeaturePages copies every feature's rows from src to dst one row a
// page, so that every page boundary of every export is crossed.
func copyFeaturePages(t testing.TB, src, dst store.TransferStore) {
	t.Helper()
	ctx := context.Background()
	pages(t, "timers", func(a store.TransferTimer) ([]store.TransferTimer, error) { return src.ExportTimers(ctx, a.ID, 1) },
		func(rows []store.TransferTimer) error { return dst.ImportTimers(ctx, rows) })
	pages(t, "ephemeral queues", func(a store.TransferEphemeralQueue) ([]store.TransferEphemeralQueue, error) {
		return src.ExportEphemeralQueues(ctx, a, 1)
	}, func(rows []store.TransferEphemeralQueue) error { return dst.ImportEphemeralQueues(ctx, rows) })
	pages(t, "stream queries", func(a store.TransferStreamsQuery) ([]store.TransferStreamsQuery, error) {
		return src.ExportStreamsQueries(ctx, a.ID, 1)
	}, func(rows []store.TransferStreamsQuery) error { return dst.ImportStreamsQueries(ctx, rows) })
	pages(t, "stream state", func(a store.TransferStreamsState) ([]store.TransferStreamsState, error) {
		return src.ExportStreamsState(ctx, a, 1)
	}, func(rows []store.TransferStreamsState) error { return dst.ImportStreamsState(ctx, rows) })
	pages(t, "stream shards", func(a store.TransferStreamsShard) ([]store.TransferStreamsShard, error) {
		return src.ExportStreamsShards(ctx, a, 1)
	}, func(rows []store.TransferStreamsShard) error { return dst.ImportStreamsShards(ctx, rows) })
	pages(t, "webhooks", func(a store.TransferWebhook) ([]store.TransferWebhook, error) { return src.ExportWebhooks(ctx, a, 1) },
		func(rows []store.TransferWebhook) error { return dst.ImportWebhooks(ctx, rows) })
}

// pages reads one-row pages until one comes back empty, writing each.
func pages[T any](t testing.TB, what string, read func(after T) ([]T, error), write func([]T) error) {
	t.Helper()
	var after T
	for range 1000 {
		rows, err := read(after)
		if err != nil {
			t.Fatalf("export %s: %v", what, err)
		}
		if err := write(rows); err != nil {
			t.Fatalf("import %s: %v", what, err)
		}
		if len(rows) == 0 {
			return
		}
		after = rows[len(rows)-1]
	}
	t.Fatalf("export %s: no end after 1000 pages", what)
}

func runTransferFeatures(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	t.Run("FeaturesKeepTheirState", func(t *testing.T) {
		src, dst := setup(t, newStore), newStore(t)
		xs, xd := transferStore(t, src), transferStore(t, dst)

		// Timers: one to come, sealed; one cancelled.
		due := TimerAt("later", "p", 1, At(time.Hour))
		due.Item.Sealed = store.SealBound
		gone := TimerAt("later", "p", 2, At(2*time.Hour))
		ScheduleTimers(t, src, T0, due, gone)
		if _, err := src.TimerCancel(ctx, &store.TimerCancelParams{ID: gone.ID, Now: At(time.Second)}); err != nil {
			t.Fatalf("TimerCancel: %v", err)
		}
		// An ephemeral queue.
		eq := EphemeralCreate(t, src, T0, "chan", time.Hour, 10)
		// A stream query whose state was reset once (the old state is not
		// copied) and then written again, with a window.
		reg := store.StreamQueryRegisterParams{Name: "counts", SourceQueue: "events", SinkQueue: "totals", ConfigHash: "h1"}
		q := Register(t, src, reg)
		part := NewID()
		Cycle(t, src, store.StreamCycleParams{QueryID: q.QueryID, PartitionID: part, StateOps: []store.StreamStateOp{Upsert("old", `0`)}})
		reg.ConfigHash, reg.Reset = "h2", true
		Register(t, src, reg)
		Cycle(t, src, store.StreamCycleParams{QueryID: q.QueryID, PartitionID: part,
			StateOps: []store.StreamStateOp{Upsert("a", `1`), windowOp("w", 60), Upsert("b", `{"x":2}`)}})
		// Webhook documents of two tenants.
		for _, w := range []store.WebhookPutParams{
			{WebhookKey: store.WebhookKey{Kind: "ingress_key", ID: "k1"}, Queue: "orders", Doc: []byte(`{"hash":"h"}`), Now: At(time.Second)},
			{WebhookKey: store.WebhookKey{Tenant: "acme", Kind: "delivery_target", ID: "t1"}, Queue: "orders", Doc: []byte(`{"url":"u"}`), Now: At(time.Minute)},
		} {
			if err := src.WebhookPut(ctx, &w); err != nil {
				t.Fatalf("WebhookPut: %v", err)
			}
		}

		copyFeaturePages(t, xs, xd)
		cs, err := xs.TransferCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cd, err := xd.TransferCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := store.TransferCounts{Timers: 2, EphemeralQueues: 1, StreamsQueries: 1, StreamsState: 3, Webhooks: 2}
		if cs != want || cd != want {
			t.Fatalf("TransferCounts: source %+v, target %+v; want %+v", cs, cd, want)
		}

		for _, id := range []string{due.ID, gone.ID} {
			a, err := src.TimerGet(ctx, &store.TimerGetParams{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			b, err := dst.TimerGet(ctx, &store.TimerGetParams{ID: id})
			if err != nil || *a != *b {
				t.Fatalf("timer %s at the target = %+v, %v; want %+v", id, b, err, a)
			}
		}
		exp, err := xd.ExportTimers(ctx, "", 10)
		if err != nil || len(exp) != 2 {
			t.Fatalf("ExportTimers at the target = %d, %v", len(exp), err)
		}
		for _, x := range exp {
			if x.ID == due.ID && (x.Sealed != store.SealBound || string(x.Payload) != `{"n":1}`) {
				t.Fatalf("the sealed timer at the target = %+v, want its seal and payload", x)
			}
		}
		fired := fireDue(t, dst, At(3*time.Hour))
		if len(fired) != 1 || fired[0] != due.ID {
			t.Fatalf("timers fired at the target = %v, want only %s", fired, due.ID)
		}

		el, err := dst.EphemeralList(ctx, &store.EphemeralListParams{Now: At(time.Minute)})
		if err != nil || len(el.Queues) != 1 || el.Queues[0].Name != "chan" || el.Queues[0].MaxMessages != 10 ||
			el.Queues[0].TTL != time.Hour || !el.Queues[0].ExpiresAt.Equal(eq.ExpiresAt) {
			t.Fatalf("ephemeral queues at the target = %+v, %v; want chan as at the source (%+v)", el, err, eq)
		}

		wantState(t, "state at the target", stateOf(t, dst, store.StreamStateGetParams{QueryID: q.QueryID, PartitionID: part}),
			"a=1", "b="+`{"x":2}`, "w="+`{"windowEnd":60,"count":1}`)
		ripe := 60.0
		wantState(t, "ripe windows at the target", stateOf(t, dst, store.StreamStateGetParams{QueryID: q.QueryID,
			PartitionID: part, RipeAtOrBefore: &ripe}), "w="+`{"windowEnd":60,"count":1}`)
		if a, b := querySize(t, src, "", "counts"), querySize(t, dst, "", "counts"); a != b || b.Rows != 3 {
			t.Fatalf("state size at the target = %+v, want %+v (3 rows)", b, a)
		}
		// The target hands out state keys after the imported ones: a new
		// query there starts empty.
		fresh := Register(t, dst, store.StreamQueryRegisterParams{Name: "fresh", SourceQueue: "events", ConfigHash: "x"})
		wantState(t, "a new query at the target", stateOf(t, dst, store.StreamStateGetParams{QueryID: fresh.QueryID, PartitionID: part}))
		reg.ConfigHash, reg.Reset = "h3", true
		Register(t, dst, reg)
		wantState(t, "the copied query reset at the target", stateOf(t, dst, store.StreamStateGetParams{QueryID: q.QueryID, PartitionID: part}))

		for _, k := range []store.WebhookKey{{Kind: "ingress_key", ID: "k1"}, {Tenant: "acme", Kind: "delivery_target", ID: "t1"}} {
			a, err := src.WebhookGet(ctx, &k)
			if err != nil {
				t.Fatal(err)
			}
			b, err := dst.WebhookGet(ctx, &k)
			if err != nil || string(a.Doc) != string(b.Doc) || a.Queue != b.Queue || !a.CreatedAt.Equal(b.CreatedAt) ||
				!a.UpdatedAt.Equal(b.UpdatedAt) {
				t.Fatalf("webhook %+v at the target = %+v, %v; want %+v", k, b, err, a)
			}
		}
	})
}

// wantMessages checks popped messages against imported ones, in order.
func wantMessages(t testing.TB, what string, got []store.Message, want []store.TransferMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: popped %d messages, want %d", what, len(got), len(want))
	}
	for i, m := range got {
		w := want[i]
		if m.ID != w.ID || m.TransactionID != w.TransactionID || m.TraceID != w.TraceID ||
			m.ProducerSub != w.ProducerSub || string(m.Payload) != string(w.Payload) ||
			!m.CreatedAt.Equal(w.CreatedAt.Truncate(time.Millisecond)) {
			t.Fatalf("%s: message %d = %+v, want %+v", what, i, m, w)
		}
	}
}
