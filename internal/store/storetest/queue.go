package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func runQueue(t *testing.T, newStore func(t *testing.T) store.Store) {
	const g = "workers"
	ctx := context.Background()

	t.Run("ConfigureCreates", func(t *testing.T) {
		s := setup(t, newStore)
		opts := Options(func(o *store.QueueOptions) {
			o.LeaseTime, o.RetryLimit, o.Priority, o.DelayedProcessing, o.WindowBuffer = 20, 5, 3, 7, 2
			o.DeadLetterQueue, o.DLQAfterMaxRetries, o.MaxSize, o.TTL = true, true, 1000, 60
		})
		q, err := s.QueueConfigure(ctx, &store.QueueConfigureParams{
			Name: "orders", Namespace: "shop", Task: "fulfil", Options: opts, Now: T0})
		if err != nil {
			t.Fatalf("QueueConfigure: %v", err)
		}
		if q.ID == "" || q.DefaultPartitionID == "" {
			t.Errorf("configured queue: ID %q DefaultPartitionID %q, want both set", q.ID, q.DefaultPartitionID)
		}
		if q.Name != "orders" || q.Namespace != "shop" || q.Task != "fulfil" {
			t.Errorf("configured queue: got %s/%s/%s, want orders/shop/fulfil", q.Name, q.Namespace, q.Task)
		}
		if q.Options != opts {
			t.Errorf("configured options:\n got %+v\nwant %+v", q.Options, opts)
		}
		res := PushItems(t, s, T0, Item("orders", store.DefaultPartition, 0))
		if res[0].PartitionID != q.DefaultPartitionID {
			t.Errorf("push to %s: PartitionID %q, want the queue's DefaultPartitionID %q",
				store.DefaultPartition, res[0].PartitionID, q.DefaultPartitionID)
		}
	})

	t.Run("ConfigureFullReplace", func(t *testing.T) {
		s := setup(t, newStore)
		first := Configure(t, s, "q", Options(func(o *store.QueueOptions) {
			o.LeaseTime, o.RetryLimit, o.DelayedProcessing, o.Priority = 20, 0, 30, 9
		}))
		second := Configure(t, s, "q", store.DefaultQueueOptions())
		if second.Options != store.DefaultQueueOptions() {
			t.Errorf("options after replacing with the defaults:\n got %+v\nwant %+v", second.Options, store.DefaultQueueOptions())
		}
		if second.ID != first.ID || second.DefaultPartitionID != first.DefaultPartitionID {
			t.Errorf("reconfigure changed ids: %s/%s -> %s/%s", first.ID, first.DefaultPartitionID, second.ID, second.DefaultPartitionID)
		}
		// Behaviour follows the new options: no delay, 300 s leases, retryLimit 3.
		items := PushAt(t, s, T0, "q", "p", 1)
		m, lease := popAll(t, s, "q", "p", g, T0)
		wantIDs(t, "pop with the delay removed", m, items...)
		wantEmpty(t, "pop 21 s later (the old lease time)", Pop(t, s, PopParams("q", g, At(21*time.Second))))
		wantVerdict(t, "first failure (old retryLimit 0)", Ack(t, s, At(22*time.Second), AckOf(m[0], g, lease, store.AckFailed))[0], vReleased)
	})

	t.Run("ConfigureKeepsMessages", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 3)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 1 }))
		m, _ := popAll(t, s, "q", "p", g, At(time.Second))
		wantIDs(t, "pop after configuring an implicit queue", m, items...)
	})

	t.Run("ImplicitQueueDefaults", func(t *testing.T) {
		s := setup(t, newStore)
		res := PushItems(t, s, T0, Item("q", store.DefaultPartition, 0))
		// retryLimit 3: the fourth failure dead-letters.
		for i, want := range []store.AckResult{vReleased, vReleased, vReleased, vDLQ} {
			now := At(time.Duration(i+1) * time.Second)
			m, lease := popAll(t, s, "q", store.DefaultPartition, g, now)
			if len(m) != 1 {
				t.Fatalf("delivery %d: got %s, want the message", i+1, payloads(m))
			}
			wantVerdict(t, "failure", Ack(t, s, now, AckOf(m[0], g, lease, store.AckFailed))[0], want)
		}
		q := Configure(t, s, "q", store.DefaultQueueOptions())
		if q.DefaultPartitionID != res[0].PartitionID {
			t.Errorf("DefaultPartitionID %q, want the partition pushed to (%q)", q.DefaultPartitionID, res[0].PartitionID)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := setup(t, newStore)
		existed, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Tenant: store.DefaultTenant, Now: T0})
		if err != nil || existed {
			t.Fatalf("QueueDelete of a missing queue: existed %v err %v, want false nil", existed, err)
		}
		items := Push(t, s, "q", "p", 3)
		keep := Push(t, s, "other", "p", 1)
		popAll(t, s, "q", "p", g, T0)
		existed, err = s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Tenant: store.DefaultTenant, Now: T0})
		if err != nil || !existed {
			t.Fatalf("QueueDelete: existed %v err %v, want true nil", existed, err)
		}
		wantEmpty(t, "pop of a deleted queue", Pop(t, s, PopParams("q", g, At(time.Second))))
		existed, err = s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Tenant: store.DefaultTenant, Now: T0})
		if err != nil || existed {
			t.Errorf("second QueueDelete: existed %v err %v, want false nil", existed, err)
		}
		// The messages are gone with their dedup keys and lanes.
		PushItems(t, s, At(2*time.Second), items...)
		m, _ := popAll(t, s, "q", "p", g, At(3*time.Second))
		wantIDs(t, "queue recreated after delete", m, items...)
		m, _ = popAll(t, s, "other", "p", g, At(3*time.Second))
		wantIDs(t, "another queue after the delete", m, keep...)
	})

	t.Run("DeleteThenPurge", func(t *testing.T) {
		s := setup(t, newStore)
		res, err := s.QueuePurge(ctx, &store.QueuePurgeParams{Limit: 10, Now: T0})
		if err != nil || res.Deleted != 0 || res.More {
			t.Fatalf("QueuePurge with nothing deleted: %+v %v, want nothing and no more", res, err)
		}
		items := PushAt(t, s, T0, "q", "p1", 15)
		items = append(items, PushAt(t, s, T0, "q", "p2", 10)...)
		m, lease := popAll(t, s, "q", "p1", g, T0)
		Ack(t, s, T0, AckOf(m[0], g, lease, store.AckDLQ)) // one dead letter
		keep := Push(t, s, "other", "p", 2)
		if _, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Now: T0}); err != nil {
			t.Fatal(err)
		}
		// The queue can be used again at once, before anything is purged,
		// and sees nothing of its predecessor.
		again := Push(t, s, "q", "p1", 1)
		total, steps := 0, 0
		for more := true; more; steps++ {
			if steps > 100 {
				t.Fatal("QueuePurge never finished")
			}
			res, err := s.QueuePurge(ctx, &store.QueuePurgeParams{Limit: 4, Now: T0})
			if err != nil {
				t.Fatalf("QueuePurge: %v", err)
			}
			if res.Deleted > 4 {
				t.Fatalf("QueuePurge with limit 4 deleted %d rows", res.Deleted)
			}
			total += res.Deleted
			more = res.More
		}
		if want := len(items) + 1; total != want {
			t.Errorf("purged %d messages and dead letters, want %d", total, want)
		}
		if steps < 7 {
			t.Errorf("purge of %d rows with limit 4 took %d steps; a step is not bounded", total, steps)
		}
		m, _ = popAll(t, s, "q", "p1", g, At(time.Second))
		wantIDs(t, "the recreated queue after the purge", m, again...)
		m, _ = popAll(t, s, "other", "p", g, At(time.Second))
		wantIDs(t, "another queue after the purge", m, keep...)
	})

	t.Run("DeleteThenConfigure", func(t *testing.T) {
		s := setup(t, newStore)
		first := Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.Priority = 4 }))
		if _, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Tenant: store.DefaultTenant, Now: T0}); err != nil {
			t.Fatalf("QueueDelete: %v", err)
		}
		second := Configure(t, s, "q", store.DefaultQueueOptions())
		if second.ID == first.ID {
			t.Errorf("a queue recreated after delete kept the id %s", first.ID)
		}
		if second.Options != store.DefaultQueueOptions() {
			t.Errorf("recreated options %+v, want the defaults", second.Options)
		}
	})
}

// runQueueReuse: a queue deleted and created again before the first one is
// purged, several times over, never sees the old one's messages or lanes.
func runQueueReuse(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("DeleteAgainBeforePurge", func(t *testing.T) {
		s := setup(t, newStore)
		ctx := context.Background()
		var last []store.PushItem
		for round := range 3 {
			last = PushAt(t, s, At(time.Duration(round)*time.Second), "q", "p", 2)
			if round == 2 {
				break
			}
			m, _ := popAll(t, s, "q", "p", "g", At(time.Duration(round)*time.Second))
			if len(m) != 2 {
				t.Fatalf("round %d: popped %d, want the 2 pushed", round, len(m))
			}
			existed, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Now: At(time.Duration(round) * time.Second)})
			if err != nil || !existed {
				t.Fatalf("round %d: QueueDelete: existed %v err %v", round, existed, err)
			}
		}
		m, _ := popAll(t, s, "q", "p", "g", At(time.Minute))
		wantIDs(t, "the third queue of the name, before any purge", m, last...)
	})
}
