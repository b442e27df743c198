package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// dlqList lists dead letters and fails the test on an error.
func dlqList(t testing.TB, s store.Store, p *store.DLQListParams) []store.DeadLetter {
	t.Helper()
	out, err := s.DLQList(context.Background(), p)
	if err != nil {
		t.Fatalf("DLQList: %v", err)
	}
	if out == nil {
		t.Fatal("DLQList returned nil; want an empty list")
	}
	return out
}

// deadLetter dead-letters m for group by hand at now.
func deadLetter(t testing.TB, s store.Store, m pushed, group string, now time.Time) {
	t.Helper()
	if err := s.MessageDeadLetter(context.Background(), &store.MessageDeadLetterParams{MessageRef: m.ref(),
		ConsumerGroup: group, Error: "failed " + group, Now: now}); err != nil {
		t.Fatalf("MessageDeadLetter: %v", err)
	}
}

func dlqTxns(dl []store.DeadLetter) []string {
	out := make([]string, len(dl))
	for i, d := range dl {
		out[i] = d.TransactionID
	}
	return out
}

func runDLQ(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("ExhaustedRetriesAreListed", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 1 }))
		it := Item("q", "p", 7)
		it.ProducerSub = "bob"
		PushItems(t, s, T0, it)
		for i := range 2 {
			now := At(time.Duration(i+1) * time.Second)
			p := PopParams("q", "g", now)
			got := Pop(t, s, p)
			fail := AckOf(got[0], "g", p.LeaseID, store.AckFailed)
			fail.Error = "bad payload"
			Ack(t, s, now, fail)
		}
		dl := dlqList(t, s, &store.DLQListParams{DLQFilter: store.DLQFilter{Queue: "q", ConsumerGroup: "g"}})
		if len(dl) != 1 {
			t.Fatalf("dead letters: %+v", dl)
		}
		d := dl[0]
		if d.TransactionID != it.TransactionID || d.MessageID != it.MessageID || d.Queue != "q" || d.Partition != "p" ||
			d.ConsumerGroup != "g" || d.Error != "bad payload" || d.RetryCount != 2 || !jsonEqual(d.Payload, it.Payload) ||
			d.ProducerSub != "bob" || !d.CreatedAt.Equal(T0) || !d.FailedAt.Equal(At(2*time.Second)) {
			t.Errorf("dead letter: %+v", d)
		}
		if len(dlqList(t, s, &store.DLQListParams{DLQFilter: store.DLQFilter{ConsumerGroup: "other"}})) != 0 {
			t.Error("filter by another group lists it")
		}
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		s := setup(t, newStore)
		a := pushSeries(t, s, T0, "a", "p1", 3)
		b := pushOne(t, s, T0, "b", "p2", 0)
		// Failures one second apart: a0 (g1), a1 (g2), b (g1), a2 (g1).
		deadLetter(t, s, a[0], "g1", At(1*time.Second))
		deadLetter(t, s, a[1], "g2", At(2*time.Second))
		deadLetter(t, s, b, "g1", At(3*time.Second))
		deadLetter(t, s, a[2], "g1", At(4*time.Second))
		all := []string{a[2].TransactionID, b.TransactionID, a[1].TransactionID, a[0].TransactionID}
		for _, tc := range []struct {
			name string
			f    store.DLQFilter
			want []string
		}{
			{"all, newest failure first", store.DLQFilter{}, all},
			{"queue", store.DLQFilter{Queue: "a"}, []string{all[0], all[2], all[3]}},
			{"group", store.DLQFilter{ConsumerGroup: "g1"}, []string{all[0], all[1], all[3]}},
			{"queue and group", store.DLQFilter{Queue: "a", ConsumerGroup: "g1"}, []string{all[0], all[3]}},
			{"partition", store.DLQFilter{Partition: "p2"}, []string{all[1]}},
			{"from", store.DLQFilter{From: At(3 * time.Second)}, all[:2]},
			{"to", store.DLQFilter{To: At(3 * time.Second)}, all[2:]},
			{"unknown queue", store.DLQFilter{Queue: "nope"}, []string{}},
		} {
			got := dlqTxns(dlqList(t, s, &store.DLQListParams{DLQFilter: tc.f}))
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
		var pages []string
		for off := 0; off < 10; off += 3 {
			pages = append(pages, dlqTxns(dlqList(t, s, &store.DLQListParams{Limit: 3, Offset: off}))...)
		}
		if !slices.Equal(pages, all) {
			t.Errorf("pages of 3: %v, want %v", pages, all)
		}
	})

	t.Run("RequeueKeepsOriginalOrder", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "q", "p", 4)
		other := pushOne(t, s, T0, "q", "p2", 9)
		// Dead-lettered out of order; the requeue restores offset order.
		for _, i := range []int{2, 0, 3} {
			deadLetter(t, s, ms[i], store.QueueMode, At(time.Duration(10+i)*time.Second))
		}
		deadLetter(t, s, other, store.QueueMode, At(20*time.Second))
		// Queue mode consumes everything first.
		for _, part := range []string{"p", "p2"} {
			got, lease := popAll(t, s, "q", part, store.QueueMode, At(time.Minute))
			Ack(t, s, At(time.Minute), AckOf(got[len(got)-1], store.QueueMode, lease, store.AckCompleted))
		}
		res, err := s.DLQRequeue(ctx, &store.DLQRequeueParams{DLQFilter: store.DLQFilter{Partition: "p"}, Now: At(time.Minute)})
		if err != nil {
			t.Fatalf("DLQRequeue: %v", err)
		}
		var origs []string
		for _, r := range res.Requeued {
			origs = append(origs, r.OriginalTransactionID)
		}
		want := []string{ms[0].TransactionID, ms[2].TransactionID, ms[3].TransactionID}
		if !slices.Equal(origs, want) || len(res.Failed) != 0 {
			t.Fatalf("requeued %v (failed %+v), want %v in that order", origs, res.Failed, want)
		}
		got, _ := popAll(t, s, "q", "p", store.QueueMode, At(2*time.Minute))
		var popped []string
		for _, m := range got {
			popped = append(popped, m.TransactionID)
		}
		for i := range want {
			want[i] += ":retry:1"
		}
		if !slices.Equal(popped, want) {
			t.Errorf("popped %v, want %v", popped, want)
		}
		if dl := dlqTxns(dlqList(t, s, &store.DLQListParams{})); !slices.Equal(dl, []string{other.TransactionID}) {
			t.Errorf("dead letters left: %v, want only the other partition's", dl)
		}
	})

	t.Run("RequeueByRefs", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "q", "p", 3)
		deadLetter(t, s, ms[0], "g1", At(time.Second))
		deadLetter(t, s, ms[0], "g2", At(time.Second))
		deadLetter(t, s, ms[2], "g1", At(time.Second))
		unknown := store.MessageRef{PartitionID: ms[0].PartitionID, TransactionID: "nope"}
		res, err := s.DLQRequeue(ctx, &store.DLQRequeueParams{Now: At(time.Minute),
			DLQFilter: store.DLQFilter{ConsumerGroup: "g1"},
			Refs:      []store.MessageRef{ms[2].ref(), unknown, ms[1].ref(), ms[0].ref(), ms[0].ref()}})
		if err != nil {
			t.Fatalf("DLQRequeue: %v", err)
		}
		if len(res.Requeued) != 2 || res.Requeued[0].OriginalTransactionID != ms[0].TransactionID ||
			res.Requeued[1].OriginalTransactionID != ms[2].TransactionID {
			t.Errorf("requeued %+v, want ms0 then ms2 (offset order), each once", res.Requeued)
		}
		wantFailed := []store.RequeueFailure{
			{MessageRef: unknown, Error: api.TextMessageNotFound},
			{MessageRef: ms[1].ref(), Error: store.ErrNotDeadLettered.Error()},
		}
		if !slices.Equal(res.Failed, wantFailed) {
			t.Errorf("failed %+v, want %+v", res.Failed, wantFailed)
		}
		// g2's dead letter of ms0 stays: the filter named g1.
		dl := dlqList(t, s, &store.DLQListParams{})
		if len(dl) != 1 || dl[0].ConsumerGroup != "g2" || dl[0].TransactionID != ms[0].TransactionID {
			t.Errorf("dead letters left: %+v", dl)
		}
		// Requeuing it (any group) names the next free number.
		r, err := store.MessageRequeue(ctx, s, &store.MessageRequeueParams{MessageRef: ms[0].ref(), Now: At(time.Minute)})
		if err != nil || r.TransactionID != ms[0].TransactionID+":retry:2" {
			t.Errorf("second requeue of ms0: %+v %v, want :retry:2", r, err)
		}
	})

	t.Run("DeleteByFilterInSteps", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "q", "p", 5)
		for i, m := range ms {
			group := "g1"
			if i == 4 {
				group = "g2"
			}
			deadLetter(t, s, m, group, At(time.Duration(i)*time.Second))
		}
		del := func(f store.DLQFilter, limit int) int {
			t.Helper()
			n, err := s.DLQDelete(ctx, &store.DLQDeleteParams{DLQFilter: f, Limit: limit, Now: At(time.Minute)})
			if err != nil {
				t.Fatalf("DLQDelete: %v", err)
			}
			return n
		}
		if n := del(store.DLQFilter{ConsumerGroup: "g1", To: At(3 * time.Second)}, 2); n != 2 {
			t.Errorf("first step: deleted %d, want 2 (the limit)", n)
		}
		if n := del(store.DLQFilter{ConsumerGroup: "g1", To: At(3 * time.Second)}, 2); n != 1 {
			t.Errorf("second step: deleted %d, want 1", n)
		}
		if got := dlqTxns(dlqList(t, s, &store.DLQListParams{})); !slices.Equal(got, txnsOf(ms[3:]...)) {
			t.Errorf("left: %v", got)
		}
		if n := del(store.DLQFilter{}, 0); n != 2 {
			t.Errorf("delete everything: %d, want 2", n)
		}
		// The messages themselves stay.
		if n := len(list(t, s, window(At(time.Minute))).Messages); n != 5 {
			t.Errorf("messages after deleting dead letters: %d, want 5", n)
		}
	})
}
