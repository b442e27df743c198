package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// trace records a trace of m at now under names and returns its id.
func trace(t testing.TB, s store.Store, m pushed, now time.Time, data string, names ...string) string {
	t.Helper()
	id := NewID()
	if err := s.TraceRecord(context.Background(), &store.TraceRecordParams{MessageRef: m.ref(), ID: id,
		ConsumerGroup: store.QueueMode, Data: []byte(data), EventType: "info", Names: names, Now: now}); err != nil {
		t.Fatalf("TraceRecord: %v", err)
	}
	return id
}

func traceNamesOf(t testing.TB, s store.Store, p *store.TraceNamesParams) *store.TraceNamesResult {
	t.Helper()
	res, err := s.TraceNames(context.Background(), p)
	if err != nil {
		t.Fatalf("TraceNames: %v", err)
	}
	return res
}

func byName(t testing.TB, s store.Store, p *store.TraceListByNameParams) *store.TraceListByNameResult {
	t.Helper()
	res, err := s.TraceListByName(context.Background(), p)
	if err != nil {
		t.Fatalf("TraceListByName: %v", err)
	}
	return res
}

func traceIDs(ts []store.Trace) []string {
	out := make([]string, len(ts))
	for i, tr := range ts {
		out[i] = tr.ID
	}
	return out
}

func runTraces(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("RecordAndList", func(t *testing.T) {
		s := setup(t, newStore)
		m := pushOne(t, s, T0, "q", "p", 0)
		id2 := trace(t, s, m, At(2*time.Second), `{"step":2}`)
		id1 := NewID()
		if err := s.TraceRecord(ctx, &store.TraceRecordParams{MessageRef: m.ref(), ID: id1, ConsumerGroup: "g",
			Data: []byte(`{"step":1}`), EventType: "error", Names: []string{"order-1", "checkout"}, WorkerID: "w7",
			Now: At(time.Second)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: m.ref()})
		if err != nil {
			t.Fatalf("TraceList: %v", err)
		}
		if !slices.Equal(traceIDs(got), []string{id1, id2}) {
			t.Fatalf("traces %v, want oldest first %v", traceIDs(got), []string{id1, id2})
		}
		tr := got[0]
		if tr.ConsumerGroup != "g" || tr.EventType != "error" || !jsonEqual(tr.Data, []byte(`{"step":1}`)) ||
			tr.WorkerID != "w7" || !tr.CreatedAt.Equal(At(time.Second)) ||
			!slices.Equal(tr.Names, []string{"checkout", "order-1"}) || tr.TransactionID != m.TransactionID ||
			tr.PartitionID != m.PartitionID {
			t.Errorf("trace: %+v", tr)
		}
		if got[1].WorkerID != "" || got[1].Names == nil || len(got[1].Names) != 0 {
			t.Errorf("trace without names or worker: %+v", got[1])
		}
		unknown := store.MessageRef{PartitionID: m.PartitionID, TransactionID: "nope"}
		if _, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: unknown}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TraceList of an unknown message: %v", err)
		}
		err = s.TraceRecord(ctx, &store.TraceRecordParams{MessageRef: unknown, ID: NewID(), Data: []byte(`{}`), Now: T0})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TraceRecord of an unknown message: %v", err)
		}
		other := pushOne(t, s, T0, "q", "p", 1)
		if got, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: other.ref()}); err != nil || len(got) != 0 || got == nil {
			t.Errorf("TraceList of a message without traces: %v %v, want an empty list", got, err)
		}
	})

	t.Run("ByNameAndNames", func(t *testing.T) {
		s := setup(t, newStore)
		a := pushOne(t, s, T0, "q", "p", 1)
		b := pushOne(t, s, T0, "r", "p2", 2)
		t1 := trace(t, s, a, At(1*time.Second), `{"i":1}`, "flow", "a-only")
		t2 := trace(t, s, b, At(2*time.Second), `{"i":2}`, "flow")
		t3 := trace(t, s, a, At(3*time.Second), `{"i":3}`, "flow")
		trace(t, s, b, At(4*time.Second), `{"i":4}`, "late")

		res := byName(t, s, &store.TraceListByNameParams{Name: "flow"})
		if res.Total != 3 || !slices.Equal(traceIDs(res.Traces), []string{t1, t2, t3}) {
			t.Fatalf("by name: total %d traces %v, want 3 %v", res.Total, traceIDs(res.Traces), []string{t1, t2, t3})
		}
		first, second := res.Traces[0], res.Traces[1]
		if first.Queue != "q" || first.Partition != "p" || first.PartitionID != a.PartitionID ||
			first.TransactionID != a.TransactionID || !jsonEqual(first.Payload, a.Payload) ||
			!slices.Equal(first.Names, []string{"a-only", "flow"}) || second.Queue != "r" {
			t.Errorf("by name, first: %+v second: %+v", first, second)
		}
		page := byName(t, s, &store.TraceListByNameParams{Name: "flow", Limit: 2, Offset: 2})
		if page.Total != 3 || !slices.Equal(traceIDs(page.Traces), []string{t3}) {
			t.Errorf("second page of 2: %d %v", page.Total, traceIDs(page.Traces))
		}
		if none := byName(t, s, &store.TraceListByNameParams{Name: "nope"}); none.Total != 0 || len(none.Traces) != 0 {
			t.Errorf("unknown name: %+v", none)
		}

		names := traceNamesOf(t, s, &store.TraceNamesParams{})
		want := []store.TraceName{
			{Name: "late", TraceCount: 1, MessageCount: 1, LastSeen: At(4 * time.Second)},
			{Name: "flow", TraceCount: 3, MessageCount: 2, LastSeen: At(3 * time.Second)},
			{Name: "a-only", TraceCount: 1, MessageCount: 1, LastSeen: At(1 * time.Second)},
		}
		if names.Total != 3 || !slices.EqualFunc(names.Names, want, sameTraceName) {
			t.Errorf("names: total %d %+v, want 3 %+v", names.Total, names.Names, want)
		}
		page2 := traceNamesOf(t, s, &store.TraceNamesParams{Limit: 1, Offset: 1})
		if page2.Total != 3 || !slices.EqualFunc(page2.Names, want[1:2], sameTraceName) {
			t.Errorf("names page: %+v", page2)
		}

		// Deleting message a drops its traces: flow keeps b's, a-only goes.
		if _, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: a.ref(), Now: At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		names = traceNamesOf(t, s, &store.TraceNamesParams{})
		want = []store.TraceName{
			{Name: "late", TraceCount: 1, MessageCount: 1, LastSeen: At(4 * time.Second)},
			{Name: "flow", TraceCount: 1, MessageCount: 1, LastSeen: At(3 * time.Second)},
		}
		if names.Total != 2 || !slices.EqualFunc(names.Names, want, sameTraceName) {
			t.Errorf("names after deleting a message: total %d %+v, want %+v", names.Total, names.Names, want)
		}
		if res := byName(t, s, &store.TraceListByNameParams{Name: "flow"}); res.Total != 1 ||
			!slices.Equal(traceIDs(res.Traces), []string{t2}) {
			t.Errorf("flow after deleting a: %d %v", res.Total, traceIDs(res.Traces))
		}
	})

	t.Run("QueueDeleteFreesTraces", func(t *testing.T) {
		s := setup(t, newStore)
		a := pushOne(t, s, T0, "q", "p", 1)
		keep := pushOne(t, s, T0, "other", "p", 2)
		for i := range 5 {
			trace(t, s, a, At(time.Duration(i)*time.Second), `{}`, "gone", "shared")
		}
		trace(t, s, keep, At(10*time.Second), `{}`, "shared")
		if _, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Now: At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		// Unreachable at once, freed by the purge.
		if res := byName(t, s, &store.TraceListByNameParams{Name: "gone"}); len(res.Traces) != 0 {
			t.Errorf("traces of a deleted queue listed: %v", traceIDs(res.Traces))
		}
		for more, steps := true, 0; more; steps++ {
			if steps > 100 {
				t.Fatal("QueuePurge never finished")
			}
			res, err := s.QueuePurge(ctx, &store.QueuePurgeParams{Limit: 2, Now: At(time.Minute)})
			if err != nil {
				t.Fatalf("QueuePurge: %v", err)
			}
			if res.Deleted > 2 {
				t.Fatalf("QueuePurge with limit 2 deleted %d rows", res.Deleted)
			}
			more = res.More
		}
		names := traceNamesOf(t, s, &store.TraceNamesParams{})
		want := []store.TraceName{{Name: "shared", TraceCount: 1, MessageCount: 1, LastSeen: At(10 * time.Second)}}
		if names.Total != 1 || len(names.Names) != 1 || names.Names[0].Name != "shared" ||
			names.Names[0].TraceCount != 1 || names.Names[0].MessageCount != 1 {
			t.Errorf("names after the purge: total %d %+v, want %+v", names.Total, names.Names, want)
		}
		if got, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: keep.ref()}); err != nil || len(got) != 1 {
			t.Errorf("the other queue's traces: %v %v", got, err)
		}
	})

	// wantOnlyName fails unless the tenant's only trace name is name, with
	// traces traces of messages messages.
	wantOnlyName := func(t *testing.T, s store.Store, name string, traces, messages int) {
		t.Helper()
		names := traceNamesOf(t, s, &store.TraceNamesParams{})
		if names.Total != 1 || len(names.Names) != 1 || names.Names[0].Name != name ||
			names.Names[0].TraceCount != traces || names.Names[0].MessageCount != messages {
			t.Errorf("names: total %d %+v, want only %s with %d traces of %d messages", names.Total, names.Names,
				name, traces, messages)
		}
	}

	t.Run("ClearPurgeFreesTraces", func(t *testing.T) {
		s := setup(t, newStore)
		a := pushOne(t, s, T0, "q", "p", 1)
		b := pushOne(t, s, T0, "q", "p", 2)
		keep := pushOne(t, s, T0, "other", "p", 3)
		for i := range 3 {
			trace(t, s, a, At(time.Duration(i)*time.Second), `{}`, "gone", "shared")
		}
		trace(t, s, b, At(5*time.Second), `{}`, "gone")
		trace(t, s, keep, At(6*time.Second), `{}`, "shared")
		if _, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Now: At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		after := pushOne(t, s, At(time.Minute), "q", "p", 4) // not cleared: its trace stays
		trace(t, s, after, At(time.Minute), `{}`, "shared")
		rows := 0
		for more, steps := true, 0; more; steps++ {
			if steps > 100 {
				t.Fatal("QueueClearPurge never finished")
			}
			res, err := s.QueueClearPurge(ctx, &store.QueuePurgeParams{Limit: 2, Now: At(time.Minute)})
			if err != nil {
				t.Fatalf("QueueClearPurge: %v", err)
			}
			if res.Deleted > 2 {
				t.Fatalf("QueueClearPurge with limit 2 deleted %d rows", res.Deleted)
			}
			rows, more = rows+res.Deleted, res.More
		}
		if rows != 6 { // 2 messages and their 4 traces
			t.Errorf("purged %d rows, want 6", rows)
		}
		wantOnlyName(t, s, "shared", 2, 2)
		for _, m := range []pushed{keep, after} {
			if got, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: m.ref()}); err != nil || len(got) != 1 {
				t.Errorf("traces of a message not cleared: %v %v", got, err)
			}
		}
	})

	t.Run("RetentionFreesTraces", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", retention(60))
		var old []pushed
		for i := range 3 {
			old = append(old, pushOne(t, s, At(0), "q", "p", i))
		}
		kept := pushOne(t, s, At(100*time.Second), "q", "p", 9)
		for _, m := range old {
			trace(t, s, m, At(time.Second), `{}`, "expired", "shared")
			trace(t, s, m, At(2*time.Second), `{}`, "expired")
		}
		trace(t, s, kept, At(101*time.Second), `{}`, "shared")
		wantRemoved(t, "sweep", Sweep(t, s, store.RetentionExpired, At(70*time.Second), 2), 3)
		wantOnlyName(t, s, "shared", 1, 1)
		if got, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: kept.ref()}); err != nil || len(got) != 1 {
			t.Errorf("traces of the kept message: %v %v", got, err)
		}
	})

	t.Run("TenantsHaveTheirOwnNames", func(t *testing.T) {
		s := setup(t, newStore)
		a := itemOf(tenantA, "orders", "p", 1)
		b := itemOf(tenantB, "orders", "p", 2)
		ra, rb := PushItems(t, s, T0, a), PushItems(t, s, T0, b)
		for _, x := range []struct {
			tenant string
			ref    store.MessageRef
		}{
			{tenantA, store.MessageRef{PartitionID: ra[0].PartitionID, TransactionID: a.TransactionID}},
			{tenantB, store.MessageRef{PartitionID: rb[0].PartitionID, TransactionID: b.TransactionID}},
			{tenantB, store.MessageRef{PartitionID: rb[0].PartitionID, TransactionID: b.TransactionID}},
		} {
			if err := s.TraceRecord(ctx, &store.TraceRecordParams{MessageRef: x.ref, Tenant: x.tenant, ID: NewID(),
				Data: []byte(`{}`), EventType: "info", Names: []string{"flow"}, Now: T0}); err != nil {
				t.Fatal(err)
			}
		}
		for tenant, want := range map[string]int{tenantA: 1, tenantB: 2, "": 0} {
			res := byName(t, s, &store.TraceListByNameParams{Name: "flow", Tenant: tenant})
			if res.Total != want || len(res.Traces) != want {
				t.Errorf("tenant %q: total %d, %d traces, want %d", tenant, res.Total, len(res.Traces), want)
			}
			names := traceNamesOf(t, s, &store.TraceNamesParams{Tenant: tenant})
			if wantNames := min(want, 1); names.Total != wantNames || len(names.Names) != wantNames {
				t.Errorf("tenant %q: %d names %+v", tenant, names.Total, names.Names)
			}
		}
	})
}

func sameTraceName(a, b store.TraceName) bool {
	return a.Name == b.Name && a.TraceCount == b.TraceCount && a.MessageCount == b.MessageCount &&
		a.LastSeen.Equal(b.LastSeen)
}
