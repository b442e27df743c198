package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// wantAbort fails unless err is a *store.TxAbortError.
func wantAbort(t testing.TB, what string, res []store.TxOpResult, err error) {
	t.Helper()
	var abort *store.TxAbortError
	if !errors.As(err, &abort) {
		t.Fatalf("%s: got error %v (%T), want *store.TxAbortError", what, err, err)
	}
	if abort.Reason == "" {
		t.Errorf("%s: TxAbortError with an empty reason", what)
	}
	if len(res) != 0 {
		t.Errorf("%s: got %d results with the abort, want none", what, len(res))
	}
}

func runTx(t *testing.T, newStore func(t *testing.T) store.Store) {
	const g = "workers"
	ctx := context.Background()

	t.Run("Commits", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "src", "p", 2)
		m, lease := popAll(t, s, "src", "p", g, At(time.Second))
		out1, out2 := Item("dst", "x", 1), Item("dst", "y", 2)
		ack := AckOf(m[1], g, lease, store.AckCompleted)
		res, err := s.TxRun(ctx, &store.TxRunParams{
			Now:            At(2 * time.Second),
			Ops:            []store.TxOp{{Items: []store.PushItem{out1, out2}}, {Ack: &ack}},
			RequiredLeases: []string{lease},
		})
		if err != nil {
			t.Fatalf("Transaction: %v", err)
		}
		if len(res) != 3 {
			t.Fatalf("Transaction returned %d results, want 3 (two pushes, one ack)", len(res))
		}
		for i, it := range []store.PushItem{out1, out2} {
			r := res[i].Push
			if r == nil || res[i].Ack != nil {
				t.Fatalf("result %d: got %+v, want a push result", i, res[i])
			}
			if r.Status != store.PushQueued || r.MessageID != it.MessageID || r.PartitionID == "" {
				t.Errorf("push result %d: got %+v, want queued %s with a partition id", i, *r, it.MessageID)
			}
		}
		if res[2].Ack == nil || res[2].Push != nil {
			t.Fatalf("result 2: got %+v, want an ack result", res[2])
		}
		wantVerdict(t, "ack in the transaction", *res[2].Ack, vReleased)
		wantEmpty(t, "source after the transaction", Pop(t, s, PopParams("src", g, At(3*time.Second))))
		p := PopParams("dst", g, At(3*time.Second))
		p.Batch, p.Partitions = 10, 2
		if got := Pop(t, s, p); len(got) != 2 {
			t.Errorf("destination after the transaction: got %s, want 2 messages", payloads(got))
		}
	})

	t.Run("MissingRequiredLease", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "src", "p", 1)
		ack := store.Ack{TransactionID: items[0].TransactionID, PartitionID: pushPartition(t, s, "src", "p"),
			ConsumerGroup: g, Status: store.AckCompleted}
		res, err := s.TxRun(ctx, &store.TxRunParams{
			Now:            At(time.Second),
			Ops:            []store.TxOp{{Items: []store.PushItem{Item("dst", "p", 0)}}, {Ack: &ack}},
			RequiredLeases: []string{"no-such-lease"},
		})
		wantAbort(t, "transaction requiring an unknown lease", res, err)
		assertUntouched(t, s, items)
	})

	t.Run("ExpiredRequiredLease", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "src", Options(func(o *store.QueueOptions) { o.LeaseTime = 10 }))
		items := Push(t, s, "src", "p", 1)
		m, lease := popAll(t, s, "src", "p", g, T0)
		ack := AckOf(m[0], g, "", store.AckCompleted)
		res, err := s.TxRun(ctx, &store.TxRunParams{
			Now:            At(10 * time.Second),
			Ops:            []store.TxOp{{Ack: &ack}, {Items: []store.PushItem{Item("dst", "p", 0)}}},
			RequiredLeases: []string{lease},
		})
		wantAbort(t, "transaction requiring an expired lease", res, err)
		m, _ = popAll(t, s, "src", "p", g, At(20*time.Second))
		wantIDs(t, "source after the abort", m, items...)
		wantEmpty(t, "destination after the abort", Pop(t, s, PopParams("dst", g, At(20*time.Second))))
	})

	t.Run("FailingAck", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "src", "p", 2)
		part := pushPartition(t, s, "src", "p")
		good := store.Ack{TransactionID: items[0].TransactionID, PartitionID: part, ConsumerGroup: g}
		bad := store.Ack{TransactionID: "no-such-transaction", PartitionID: part, ConsumerGroup: g}
		res, err := s.TxRun(ctx, &store.TxRunParams{
			Now: At(time.Second),
			Ops: []store.TxOp{{Ack: &good}, {Items: []store.PushItem{Item("dst", "p", 0)}}, {Ack: &bad}},
		})
		wantAbort(t, "transaction with an unresolvable ack", res, err)
		assertUntouched(t, s, items)
	})

	t.Run("AckUnderForeignLease", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "src", "p", 1)
		m, lease := popAll(t, s, "src", "p", g, T0)
		wrong := AckOf(m[0], g, "not-"+lease, store.AckCompleted)
		res, err := s.TxRun(ctx, &store.TxRunParams{
			Now: At(time.Second),
			Ops: []store.TxOp{{Items: []store.PushItem{Item("dst", "p", 0)}}, {Ack: &wrong}},
		})
		wantAbort(t, "transaction acking under a foreign lease", res, err)
		wantEmpty(t, "destination after the abort", Pop(t, s, PopParams("dst", g, At(2*time.Second))))
		right := AckOf(m[0], g, lease, store.AckCompleted)
		wantVerdict(t, "the lease is still held after the abort", Ack(t, s, At(2*time.Second), right)[0], vReleased)
	})

	t.Run("DuplicatePush", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 1)
		fresh := Item("q", "p", 1)
		dup := Item("q", "p", 2)
		dup.TransactionID = items[0].TransactionID
		res, err := s.TxRun(ctx, &store.TxRunParams{
			Now: At(time.Second),
			Ops: []store.TxOp{{Items: []store.PushItem{fresh}}, {Items: []store.PushItem{dup}}},
		})
		wantAbort(t, "transaction pushing a duplicate", res, err)
		p := PopParams("q", g, At(2*time.Second))
		p.Batch = 10
		wantIDs(t, "queue after the abort", Pop(t, s, p), items...)
		// The fresh item was not written: pushing it again queues it.
		PushItems(t, s, At(3*time.Second), fresh)
	})

	t.Run("AckUsesTheRetryBudget", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 1 }))
		items := Push(t, s, "q", "p", 2)
		for i, want := range []store.AckResult{vReleased, vDLQ} {
			now := At(time.Duration(i+1) * time.Second)
			m, lease := popAll(t, s, "q", "p", g, now)
			wantIDs(t, "delivery", m, items...)
			failed := AckOf(m[0], g, lease, store.AckFailed)
			res, err := s.TxRun(ctx, &store.TxRunParams{
				Now: now, Ops: []store.TxOp{{Ack: &failed}}, RequiredLeases: []string{lease},
			})
			if err != nil {
				t.Fatalf("transaction with a failed ack %d: %v", i+1, err)
			}
			wantVerdict(t, "failed ack in a transaction", *res[0].Ack, want)
		}
		m, _ := popAll(t, s, "q", "p", g, At(time.Minute))
		wantIDs(t, "pop after the dead letter", m, items[1:]...)
	})

	t.Run("StoreUsableAfterAbort", func(t *testing.T) {
		s := setup(t, newStore)
		_, err := s.TxRun(ctx, &store.TxRunParams{
			Now: T0, Ops: []store.TxOp{{Items: []store.PushItem{Item("new-queue", "p", 0)}}},
			RequiredLeases: []string{"missing"},
		})
		wantAbort(t, "abort", nil, err)
		// The queue the aborted push would have created does not exist,
		// and creating it now works.
		wantEmpty(t, "queue of an aborted push", Pop(t, s, PopParams("new-queue", g, T0)))
		items := Push(t, s, "new-queue", "p", 1)
		m, _ := popAll(t, s, "new-queue", "p", g, At(time.Second))
		wantIDs(t, "queue created after the abort", m, items...)
	})
}

// pushPartition returns the partition id of queue/part, which must hold at
// least one message, learnt from a pop by a probe group of its own (so no
// other group's lane is touched).
func pushPartition(t testing.TB, s store.Store, queue, part string) string {
	t.Helper()
	p := &store.LanePopParams{Queue: queue, Partition: part, ConsumerGroup: "storetest-probe", Batch: 1,
		Partitions: 1, LeaseID: NewID(), Now: T0}
	m := Pop(t, s, p)
	if len(m) == 0 {
		t.Fatalf("partition %s/%s has no message to learn its id from", queue, part)
	}
	return m[0].PartitionID
}

// assertUntouched checks that nothing of an aborted transaction was written:
// the source messages are still unacked for the workers group and the
// destination queue dst holds nothing.
func assertUntouched(t testing.TB, s store.Store, src []store.PushItem) {
	t.Helper()
	p := PopParams(src[0].Queue, "workers", At(time.Minute))
	p.Batch = 100
	wantIDs(t, "source after the abort", Pop(t, s, p), src...)
	wantEmpty(t, "destination after the abort", Pop(t, s, PopParams("dst", "workers", At(time.Minute))))
}
