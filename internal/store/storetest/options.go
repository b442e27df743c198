package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// runOptions covers the queue options the engines apply on the hot path:
// retryDelay (pop candidates) and maxSize (push), and queue options read
// for the broker.
func runOptions(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, status := range []store.AckStatus{store.AckFailed, store.AckRetry} {
		t.Run(fmt.Sprintf("RetryDelayHoldsANackedLane/status=%d", status), func(t *testing.T) {
			s := setup(t, newStore)
			Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryDelay = 2000 }))
			items := Push(t, s, "q", "p", 2)
			other := Push(t, s, "q", "other", 1)
			p := PopParams("q", store.QueueMode, At(time.Second))
			p.Partition = "p"
			msgs := Pop(t, s, p)
			wantIDs(t, "first delivery", msgs, items[0])
			wantVerdict(t, "nack", Ack(t, s, At(2*time.Second), AckOf(msgs[0], store.QueueMode, p.LeaseID, status))[0],
				vReleased)
			before := At(2*time.Second + 1999*time.Millisecond)
			pinned := PopParams("q", store.QueueMode, before)
			pinned.Partition = "p"
			wantEmpty(t, "pinned pop before the retry delay has passed", Pop(t, s, pinned))
			wild := PopParams("q", store.QueueMode, before)
			wild.Batch, wild.Partitions = 10, 2
			wantIDs(t, "pop before the delay: only the other partition", Pop(t, s, wild), other...)
			pinned = PopParams("q", store.QueueMode, At(4*time.Second))
			pinned.Partition, pinned.Batch = "p", 10
			wantIDs(t, "pop once the delay has passed", Pop(t, s, pinned), items...)
		})
	}

	t.Run("NoRetryDelayRedeliversAtOnce", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 1) // created by the push: default options
		p := PopParams("q", store.QueueMode, At(time.Second))
		msgs := Pop(t, s, p)
		Ack(t, s, At(time.Second), AckOf(msgs[0], store.QueueMode, p.LeaseID, store.AckFailed))
		wantIDs(t, "pop right after the nack", Pop(t, s, PopParams("q", store.QueueMode, At(time.Second))), items...)
	})

	t.Run("RetryDelayEndsWithTheHead", func(t *testing.T) {
		// A nack that dead-letters moves on to the next message at once.
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryDelay = 60_000; o.RetryLimit = 0 }))
		items := Push(t, s, "q", "p", 2)
		p := PopParams("q", store.QueueMode, At(time.Second))
		msgs := Pop(t, s, p)
		wantVerdict(t, "failed ack with no retries left",
			Ack(t, s, At(time.Second), AckOf(msgs[0], store.QueueMode, p.LeaseID, store.AckFailed))[0], vDLQ)
		wantIDs(t, "the next message, without delay", Pop(t, s, PopParams("q", store.QueueMode, At(time.Second))),
			items[1])
	})

	t.Run("MaxSizeRefusesWhatDoesNotFit", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxSize = 3 }))
		items := []store.PushItem{Item("q", "a", 0), Item("q", "b", 1), Item("q", "a", 2), Item("q", "b", 3),
			Item("q", "a", 4)}
		res := push(t, s, At(0), items...)
		wantStatuses(t, "push of 5 into a queue of maxSize 3", res, "queued", "queued", "queued", "failed", "failed")
		for _, r := range res[3:] {
			if r.Error != "queue full (maxSize 3)" || r.PartitionID == "" {
				t.Errorf("refused item: %+v, want error %q and its partitionId", r, "queue full (maxSize 3)")
			}
		}
		// A duplicate of a stored message is still a duplicate.
		dup := items[0]
		dup.MessageID = NewID()
		wantStatuses(t, "duplicate into a full queue", push(t, s, At(time.Second), dup), "duplicate")

		// Consuming makes room: two acked, two fit again.
		p := PopParams("q", store.QueueMode, At(2*time.Second))
		p.Batch, p.Partitions = 10, 2
		msgs := Pop(t, s, p)
		if len(msgs) != 3 {
			t.Fatalf("pop: %d messages, want the 3 stored", len(msgs))
		}
		var acks []store.Ack
		for _, m := range msgs[:2] {
			acks = append(acks, AckOf(m, store.QueueMode, p.LeaseID, store.AckCompleted))
		}
		Ack(t, s, At(3*time.Second), acks...)
		res = push(t, s, At(4*time.Second), Item("q", "c", 5), Item("q", "a", 6), Item("q", "b", 7))
		wantStatuses(t, "push after two were consumed", res, "queued", "queued", "failed")

		// A leased message is not consumed yet; the cap stays.
		if n := unconsumedAfter(t, s, "q", At(5*time.Second)); n != 0 {
			t.Errorf("%d messages could be pushed, want 0 (3 unconsumed)", n)
		}
	})

	t.Run("MaxSizeCountsTheSlowestGroup", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxSize = 4 }))
		PushItems(t, s, At(0), Item("q", "p", 0), Item("q", "p", 1))
		drain(t, s, "q", "fast", At(time.Second))
		p := PopParams("q", "slow", At(time.Second)) // joins; consumes nothing
		p.Batch = 1
		Pop(t, s, p)
		res := push(t, s, At(2*time.Second), Item("q", "p", 2), Item("q", "p", 3), Item("q", "p", 4))
		wantStatuses(t, "push while the slow group has 2 to read", res, "queued", "queued", "failed")
		drain(t, s, "q", "slow", At(3*time.Hour)) // its lease has expired by then
		res = push(t, s, At(4*time.Hour), Item("q", "p", 5), Item("q", "p", 6), Item("q", "p", 7))
		wantStatuses(t, "push once the slow group caught up, the fast one 2 behind", res,
			"queued", "queued", "failed")
	})

	t.Run("MaxSizeLeavesOutDeletedMessages", func(t *testing.T) {
		// A message deleted on its own frees its place at once, whether
		// its partition is read by a group or by nobody.
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxSize = 3 }))
		a, b, c := Item("q", "read", 0), Item("q", "read", 1), Item("q", "unread", 2)
		res := PushItems(t, s, At(0), a, b, c)
		p := PopParams("q", "g", At(time.Second)) // joins; consumes nothing
		p.Partition = "read"
		Pop(t, s, p)
		wantStatuses(t, "push into the full queue", push(t, s, At(time.Second), Item("q", "read", 3)), "failed")
		for _, i := range []int{1, 2} {
			it := []store.PushItem{a, b, c}[i]
			ref := store.MessageRef{PartitionID: res[i].PartitionID, TransactionID: it.TransactionID}
			if ok, err := s.MessageDelete(context.Background(), &store.MessageDeleteParams{MessageRef: ref,
				Now: At(time.Second)}); !ok || err != nil {
				t.Fatalf("MessageDelete: %v %v", ok, err)
			}
		}
		res = push(t, s, At(2*time.Second), Item("q", "read", 4), Item("q", "unread", 5), Item("q", "unread", 6))
		wantStatuses(t, "push after two deletes", res, "queued", "queued", "failed")
	})

	t.Run("MaxSizeZeroIsNoCap", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", store.DefaultQueueOptions())
		PushAt(t, s, At(0), "q", "p", 50)
		// Lifting a cap later works too: pushes made meanwhile count.
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxSize = 60 }))
		res := push(t, s, At(time.Second), itemsOf("q", "p", 12)...)
		if n := countStatus(res, store.PushQueued); n != 10 {
			t.Errorf("%d of 12 queued into a queue of 50 with maxSize 60, want 10", n)
		}
		Configure(t, s, "q", store.DefaultQueueOptions())
		PushAt(t, s, At(2*time.Second), "q", "p", 5)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxSize = 66 }))
		res = push(t, s, At(3*time.Second), itemsOf("q", "p", 3)...)
		if n := countStatus(res, store.PushQueued); n != 1 {
			t.Errorf("%d of 3 queued into a queue of 65 with maxSize 66, want 1", n)
		}
	})

	t.Run("MaxSizeInATransaction", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.MaxSize = 1 }))
		Push(t, s, "q", "p", 1)
		res, err := s.TxRun(context.Background(), &store.TxRunParams{Now: At(time.Second),
			Ops: []store.TxOp{{Items: []store.PushItem{Item("q", "p", 1)}}}})
		wantAbort(t, "transaction pushing into a full queue", res, err)
		if !strings.Contains(err.Error(), "queue full (maxSize 1)") {
			t.Errorf("abort reason %q does not say the queue is full", err)
		}
	})

	// What the broker seals by: a queue's options as configured, the
	// defaults for a queue a push created, and no other tenant's queue.
	t.Run("QueueGetOptions", func(t *testing.T) {
		s := setup(t, newStore)
		ctx := context.Background()
		want := Options(func(o *store.QueueOptions) { o.EncryptionEnabled, o.MaxSize = true, 9 })
		Configure(t, s, "a", want)
		Push(t, s, "b", "p", 1)
		for name, want := range map[string]store.QueueOptions{"a": want, "b": store.DefaultQueueOptions()} {
			d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: name, Limit: 1, Now: T0})
			if err != nil || d.Options != want {
				t.Errorf("QueueGet(%s).Options: %+v %v, want %+v", name, d, err, want)
			}
		}
		_, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "missing", Limit: 1, Now: T0})
		wantNotFound(t, "a queue that does not exist", err, store.ErrQueueNotFound)
		_, err = s.QueueGet(ctx, &store.QueueGetParams{Name: "a", Limit: 1, Now: T0,
			Tenant: "11111111-1111-1111-1111-111111111111"})
		wantNotFound(t, "another tenant's view", err, store.ErrQueueNotFound)
	})
}

// push stores items and returns the verdicts whatever they are.
func push(t testing.TB, s store.Store, now time.Time, items ...store.PushItem) []store.PushResult {
	t.Helper()
	res, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: items, Now: now})
	if err != nil {
		t.Fatalf("PushMany(%d items): %v", len(items), err)
	}
	return res
}

func wantStatuses(t testing.TB, what string, res []store.PushResult, want ...string) {
	t.Helper()
	got := make([]string, len(res))
	for i, r := range res {
		got[i] = string(r.Status)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: statuses %v, want %v (results %+v)", what, got, want, res)
	}
}

func countStatus(res []store.PushResult, st store.PushStatus) int {
	n := 0
	for _, r := range res {
		if r.Status == st {
			n++
		}
	}
	return n
}

func itemsOf(queue, partition string, n int) []store.PushItem {
	items := make([]store.PushItem, n)
	for i := range items {
		items[i] = Item(queue, partition, i)
	}
	return items
}

// drain pops and acks everything group can read from queue at now.
func drain(t testing.TB, s store.Store, queue, group string, now time.Time) int {
	t.Helper()
	total := 0
	for {
		p := PopParams(queue, group, now)
		p.Batch, p.Partitions = 1000, 100
		msgs := Pop(t, s, p)
		if len(msgs) == 0 {
			return total
		}
		acks := make([]store.Ack, len(msgs))
		for i, m := range msgs {
			acks[i] = AckOf(m, group, p.LeaseID, store.AckCompleted)
		}
		for i, r := range Ack(t, s, now, acks...) {
			if !r.Success {
				t.Fatalf("drain: ack %d: %s", i, verdict(r))
			}
		}
		total += len(msgs)
	}
}

// unconsumedAfter pushes probes into queue until one is refused and returns
// how many were queued (they stay).
func unconsumedAfter(t testing.TB, s store.Store, queue string, now time.Time) int {
	t.Helper()
	for n := 0; n < 1000; n++ {
		res := push(t, s, now, Item(queue, "probe", n))
		if res[0].Status != store.PushQueued {
			return n
		}
	}
	t.Fatal("1000 probes queued: no cap")
	return 0
}
