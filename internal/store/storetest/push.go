package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func runPush(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("Queued", func(t *testing.T) {
		s := setup(t, newStore)
		items := []store.PushItem{Item("q", "a", 0), Item("q", "a", 1), Item("q", "b", 2)}
		res := PushItems(t, s, T0, items...)
		for i, r := range res {
			if r.MessageID != items[i].MessageID {
				t.Errorf("item %d: MessageID %q, want the minted %q", i, r.MessageID, items[i].MessageID)
			}
			if r.PartitionID == "" {
				t.Errorf("item %d: empty PartitionID", i)
			}
			if r.Error != "" {
				t.Errorf("item %d: Error %q on a queued item", i, r.Error)
			}
		}
		if res[0].PartitionID != res[1].PartitionID {
			t.Errorf("same partition got PartitionIDs %q and %q", res[0].PartitionID, res[1].PartitionID)
		}
		if res[0].PartitionID == res[2].PartitionID {
			t.Errorf("partitions a and b share PartitionID %q", res[0].PartitionID)
		}
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		s := setup(t, newStore)
		res, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Now: T0})
		if err != nil {
			t.Fatalf("PushMany of no items: %v", err)
		}
		if len(res) != 0 {
			t.Errorf("PushMany of no items returned %d results", len(res))
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		s := setup(t, newStore)
		it := Item("q", "p", 0)
		it.TraceID = "0197f2b1-0000-7000-8000-000000000001"
		it.ProducerSub = "alice"
		it.Payload = []byte(`{"id":1,"tags":["a","b"],"nested":{"x":null}}`)
		plain := Item("q", "p", 1)
		plain.Payload = []byte(`null`)
		now := T0.Add(1234567 * time.Microsecond) // sub-millisecond part is dropped
		res := PushItems(t, s, now, it, plain)
		p := PopParams("q", store.QueueMode, now.Add(time.Second))
		p.Batch = 10
		msgs := Pop(t, s, p)
		wantIDs(t, "pop", msgs, it, plain)
		m := msgs[0]
		if m.TransactionID != it.TransactionID || m.TraceID != it.TraceID || m.ProducerSub != it.ProducerSub {
			t.Errorf("message ids: got txn %q trace %q sub %q, want %q %q %q",
				m.TransactionID, m.TraceID, m.ProducerSub, it.TransactionID, it.TraceID, it.ProducerSub)
		}
		if m.Queue != "q" || m.Partition != "p" || m.PartitionID != res[0].PartitionID {
			t.Errorf("message lane: got %s/%s (%s), want q/p (%s)", m.Queue, m.Partition, m.PartitionID, res[0].PartitionID)
		}
		if !jsonEqual(m.Payload, it.Payload) {
			t.Errorf("payload: got %s, want %s", m.Payload, it.Payload)
		}
		if want := now.Truncate(time.Millisecond); !m.CreatedAt.Equal(want) {
			t.Errorf("CreatedAt: got %v, want %v", m.CreatedAt, want)
		}
		if msgs[1].TraceID != "" || msgs[1].ProducerSub != "" {
			t.Errorf("absent trace/sub came back as %q/%q", msgs[1].TraceID, msgs[1].ProducerSub)
		}
		if !jsonEqual(msgs[1].Payload, []byte("null")) {
			t.Errorf("null payload came back as %q", msgs[1].Payload)
		}
	})

	t.Run("DuplicateAcrossCalls", func(t *testing.T) {
		s := setup(t, newStore)
		first := Item("q", "p", 0)
		res := PushItems(t, s, T0, first)
		again := Item("q", "p", 1)
		again.TransactionID = first.TransactionID
		fresh := Item("q", "p", 2)
		res2, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{
			Items: []store.PushItem{again, fresh}, Now: At(time.Second)})
		if err != nil {
			t.Fatalf("PushMany: %v", err)
		}
		if res2[0].Status != store.PushDuplicate || res2[0].MessageID != first.MessageID {
			t.Errorf("repeat of txn %s: got status %q id %q, want duplicate of %q",
				first.TransactionID, res2[0].Status, res2[0].MessageID, first.MessageID)
		}
		if res2[0].PartitionID != res[0].PartitionID {
			t.Errorf("duplicate PartitionID %q, want %q", res2[0].PartitionID, res[0].PartitionID)
		}
		if res2[1].Status != store.PushQueued || res2[1].MessageID != fresh.MessageID {
			t.Errorf("fresh item next to a duplicate: got %q %q, want queued %q", res2[1].Status, res2[1].MessageID, fresh.MessageID)
		}
		p := PopParams("q", store.QueueMode, At(2*time.Second))
		p.Batch = 10
		wantIDs(t, "pop after duplicate push", Pop(t, s, p), first, fresh)
	})

	t.Run("DuplicateWithinOneCall", func(t *testing.T) {
		// A large call (the engines insert many rows per statement) with
		// repeats inside it: far from the first, and next to it.
		s := setup(t, newStore)
		items := make([]store.PushItem, 150)
		for i := range items {
			items[i] = Item("q", fmt.Sprintf("p%d", i%3), i)
		}
		items[140].TransactionID, items[140].Partition = items[5].TransactionID, items[5].Partition
		items[7].TransactionID, items[7].Partition = items[6].TransactionID, items[6].Partition
		res, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: items, Now: T0})
		if err != nil {
			t.Fatalf("PushMany: %v", err)
		}
		var want []store.PushItem
		for i, r := range res {
			switch i {
			case 140, 7:
				first := map[int]int{140: 5, 7: 6}[i]
				if r.Status != store.PushDuplicate || r.MessageID != items[first].MessageID ||
					r.PartitionID != res[first].PartitionID {
					t.Errorf("item %d repeats item %d: got %+v, want duplicate of %s", i, first, r, items[first].MessageID)
				}
			default:
				if r.Status != store.PushQueued || r.MessageID != items[i].MessageID {
					t.Errorf("item %d: got %+v, want queued", i, r)
				}
				if items[i].Partition == "p0" {
					want = append(want, items[i])
				}
			}
		}
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Batch, p.Partition = 200, "p0"
		wantIDs(t, "pop of p0 after a push with repeats", Pop(t, s, p), want...)
	})

	t.Run("SameTransactionIDElsewhere", func(t *testing.T) {
		s := setup(t, newStore)
		a := Item("q", "a", 0)
		b := Item("q", "b", 1)
		c := Item("other", "a", 2)
		b.TransactionID, c.TransactionID = a.TransactionID, a.TransactionID
		PushItems(t, s, T0, a)
		PushItems(t, s, T0, b, c) // fails unless both are queued
		for _, part := range []string{"a", "b"} {
			p := PopParams("q", store.QueueMode, At(time.Second))
			p.Partition = part
			if msgs := Pop(t, s, p); len(msgs) != 1 || msgs[0].TransactionID != a.TransactionID {
				t.Errorf("partition %s: got %s, want one message with txn %s", part, payloads(msgs), a.TransactionID)
			}
		}
	})

	t.Run("CreatesQueueWithNamespaceAndTask", func(t *testing.T) {
		s := setup(t, newStore)
		it := Item("q", "p", 0)
		it.Namespace, it.Task = "billing", "invoice"
		PushItems(t, s, T0, it)
		// A later push naming another namespace does not move the queue.
		later := Item("q", "p", 1)
		later.Namespace, later.Task = "other", "other"
		PushItems(t, s, T0, later)

		p := PopParams("", store.QueueMode, At(time.Second))
		p.Namespace, p.Batch = "billing", 10
		wantIDs(t, "pop by namespace", Pop(t, s, p), it, later)

		p = PopParams("", "g2", At(time.Second))
		p.Task, p.Batch = "invoice", 10
		wantIDs(t, "pop by task", Pop(t, s, p), it, later)

		p = PopParams("", "g3", At(time.Second))
		p.Namespace, p.Batch = "other", 10
		wantEmpty(t, "pop by the namespace of a later push", Pop(t, s, p))
	})
}
