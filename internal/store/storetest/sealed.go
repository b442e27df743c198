package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// runSealed: the seal recorded with a message (store.Seal) comes back with
// it on every read, and follows it wherever the store copies the message.
// The store never looks at it; the broker opens by it.
func runSealed(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	sealedItem := func(queue string, n int, seal store.Seal) store.PushItem {
		it := Item(queue, "p", n)
		it.Sealed = seal
		return it
	}

	t.Run("PushPopGet", func(t *testing.T) {
		s := setup(t, newStore)
		items := []store.PushItem{sealedItem("q", 0, store.SealNone), sealedItem("q", 1, store.SealQueen),
			sealedItem("q", 2, store.SealBound)}
		res := PushItems(t, s, T0, items...)
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Batch = 10
		got := Pop(t, s, p)
		if len(got) != 3 {
			t.Fatalf("popped %d messages, want 3", len(got))
		}
		for i, m := range got {
			if m.Sealed != items[i].Sealed {
				t.Errorf("popped message %d: Sealed %d, want %d", i, m.Sealed, items[i].Sealed)
			}
			d, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: store.MessageRef{
				PartitionID: res[i].PartitionID, TransactionID: items[i].TransactionID}, Now: At(time.Second)})
			if err != nil {
				t.Fatalf("MessageGet: %v", err)
			}
			if d.Sealed != items[i].Sealed || !jsonEqual(d.Payload, items[i].Payload) {
				t.Errorf("MessageGet %d: Sealed %d payload %s, want %d %s", i, d.Sealed, d.Payload,
					items[i].Sealed, items[i].Payload)
			}
		}
	})

	t.Run("DeadLettersAndTracesByNameCarryTheSeal", func(t *testing.T) {
		s := setup(t, newStore)
		items := []store.PushItem{sealedItem("q", 0, store.SealNone), sealedItem("q", 1, store.SealQueen),
			sealedItem("q", 2, store.SealBound)}
		res := PushItems(t, s, T0, items...)
		want := map[string]store.Seal{}
		for i := range items {
			m := pushed{PushItem: items[i], PartitionID: res[i].PartitionID}
			deadLetter(t, s, m, store.QueueMode, At(time.Second))
			trace(t, s, m, At(time.Second), `{}`, "sealed-flow")
			want[items[i].TransactionID] = items[i].Sealed
		}
		dl := dlqList(t, s, &store.DLQListParams{})
		if len(dl) != len(items) {
			t.Fatalf("listed %d dead letters, want %d", len(dl), len(items))
		}
		for _, d := range dl {
			if d.Sealed != want[d.TransactionID] {
				t.Errorf("dead letter %s: Sealed %d, want %d", d.TransactionID, d.Sealed, want[d.TransactionID])
			}
		}
		traces := byName(t, s, &store.TraceListByNameParams{Name: "sealed-flow"}).Traces
		if len(traces) != len(items) {
			t.Fatalf("listed %d traces by name, want %d", len(traces), len(items))
		}
		for _, tr := range traces {
			if tr.Sealed != want[tr.TransactionID] {
				t.Errorf("trace of %s: Sealed %d, want %d", tr.TransactionID, tr.Sealed, want[tr.TransactionID])
			}
		}
		// Once the messages are gone (a clear keeps their traces), the
		// traces carry no payload and no seal.
		if _, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Now: At(time.Minute)}); err != nil {
			t.Fatalf("QueueClear: %v", err)
		}
		traces = byName(t, s, &store.TraceListByNameParams{Name: "sealed-flow"}).Traces
		if len(traces) != len(items) {
			t.Fatalf("listed %d traces by name after the clear, want %d", len(traces), len(items))
		}
		for _, tr := range traces {
			if tr.Payload != nil || tr.Sealed != store.SealNone {
				t.Errorf("trace of a cleared message: payload %s, Sealed %d; want none", tr.Payload, tr.Sealed)
			}
		}
	})

	t.Run("RequeueKeepsTheSeal", func(t *testing.T) {
		s := setup(t, newStore)
		items := []store.PushItem{sealedItem("q", 0, store.SealBound), sealedItem("q", 1, store.SealNone)}
		res := PushItems(t, s, T0, items...)
		for i := range items {
			deadLetter(t, s, pushed{PushItem: items[i], PartitionID: res[i].PartitionID}, store.QueueMode, At(time.Second))
		}
		got, lease := popAll(t, s, "q", "p", store.QueueMode, At(2*time.Second))
		if len(got) > 0 {
			Ack(t, s, At(2*time.Second), AckOf(got[len(got)-1], store.QueueMode, lease, store.AckCompleted))
		}
		if _, err := s.DLQRequeue(ctx, &store.DLQRequeueParams{Now: At(time.Minute)}); err != nil {
			t.Fatalf("DLQRequeue: %v", err)
		}
		again, _ := popAll(t, s, "q", "p", store.QueueMode, At(2*time.Minute))
		if len(again) != 2 || again[0].Sealed != store.SealBound || again[1].Sealed != store.SealNone {
			t.Fatalf("requeued: %+v, want the seals 2 then 0", again)
		}
	})

	t.Run("TransactionAndTimerKeepTheSeal", func(t *testing.T) {
		s := setup(t, newStore)
		if _, err := s.TxRun(ctx, &store.TxRunParams{Now: T0,
			Ops: []store.TxOp{{Items: []store.PushItem{sealedItem("q", 0, store.SealBound)}}}}); err != nil {
			t.Fatalf("TxRun: %v", err)
		}
		ScheduleTimers(t, s, T0, store.TimerItem{ID: NewID(), FireAt: At(time.Second),
			Item: sealedItem("q", 1, store.SealBound)})
		if fired := fireDue(t, s, At(2*time.Second)); len(fired) != 1 {
			t.Fatalf("fired %v, want one timer", fired)
		}
		got, _ := popAll(t, s, "q", "p", store.QueueMode, At(3*time.Second))
		if len(got) != 2 || got[0].Sealed != store.SealBound || got[1].Sealed != store.SealBound {
			t.Fatalf("popped %+v, want two messages sealed 2", got)
		}
	})

	t.Run("TransferKeepsTheSeal", func(t *testing.T) {
		s := setup(t, newStore)
		x := transferStore(t, s)
		ref := store.TransferQueueRef{Name: "moved"}
		if err := x.ImportQueue(ctx, store.TransferQueue{TransferQueueRef: ref, Options: store.DefaultQueueOptions(),
			CreatedAt: T0}); err != nil {
			t.Fatalf("ImportQueue: %v", err)
		}
		pid, err := x.ImportPartition(ctx, ref, store.TransferPartition{Name: "p", CreatedAt: T0})
		if err != nil {
			t.Fatalf("ImportPartition: %v", err)
		}
		ms := importMessages(T0, 0, 3)
		ms[0].Sealed, ms[1].Sealed = store.SealQueen, store.SealBound
		if err := x.ImportMessages(ctx, pid, ms); err != nil {
			t.Fatalf("ImportMessages: %v", err)
		}
		out, err := x.ExportMessages(ctx, pid, 0, 10)
		if err != nil || len(out) != 3 {
			t.Fatalf("ExportMessages: %d, %v", len(out), err)
		}
		for i := range ms {
			if out[i].Sealed != ms[i].Sealed {
				t.Errorf("exported message %d: Sealed %d, want %d", i, out[i].Sealed, ms[i].Sealed)
			}
		}
		got, _ := popAll(t, s, "moved", "p", store.QueueMode, At(time.Hour))
		if len(got) != 3 || got[0].Sealed != store.SealQueen || got[1].Sealed != store.SealBound || got[2].Sealed != store.SealNone {
			t.Fatalf("popped after import: %+v", got)
		}
	})
}
