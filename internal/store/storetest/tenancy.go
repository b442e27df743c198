package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Two tenants of the suite; names are unique per tenant, so both own a queue
// called "orders".
const (
	tenantA = "0192f0a0-aaaa-7000-8000-00000000000a"
	tenantB = "0192f0a0-bbbb-7000-8000-00000000000b"
)

// itemOf is Item owned by tenant.
func itemOf(tenant, queue, partition string, n int) store.PushItem {
	it := Item(queue, partition, n)
	it.Tenant = tenant
	return it
}

func runTenancy(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	popOf := func(tenant, queue, group string, now time.Time) *store.LanePopParams {
		p := PopParams(queue, group, now)
		p.Tenant = tenant
		p.Batch = 100
		return p
	}

	t.Run("SameQueueNameIsolated", func(t *testing.T) {
		s := setup(t, newStore)
		a := []store.PushItem{itemOf(tenantA, "orders", "p", 1), itemOf(tenantA, "orders", "p", 2)}
		b := []store.PushItem{itemOf(tenantB, "orders", "p", 3)}
		resA := PushItems(t, s, T0, a...)
		resB := PushItems(t, s, T0, b...)
		if resA[0].PartitionID == resB[0].PartitionID {
			t.Fatalf("tenants share partition %s of queue orders", resA[0].PartitionID)
		}
		// The same transactionId in the other tenant's queue is not a
		// duplicate: dedup is per queue, and the queues are different.
		same := a[0]
		same.Tenant, same.MessageID = tenantB, NewID()
		if r := PushItems(t, s, T0, same); r[0].Status != store.PushQueued {
			t.Fatalf("tenant B's push of tenant A's transactionId: %s", r[0].Status)
		}
		wantIDs(t, "tenant A pops orders", Pop(t, s, popOf(tenantA, "orders", "g", At(time.Second))), a...)
		wantIDs(t, "tenant B pops orders", Pop(t, s, popOf(tenantB, "orders", "g", At(time.Second))), b[0], same)
		wantEmpty(t, "default tenant pops orders", Pop(t, s, popOf(store.DefaultTenant, "orders", "g", At(time.Second))))
	})

	t.Run("NamespacePopIsolated", func(t *testing.T) {
		s := setup(t, newStore)
		a := itemOf(tenantA, "shop.orders", "p", 1)
		a.Namespace, a.Task = "shop", "orders"
		PushItems(t, s, T0, a)
		p := popOf(tenantB, "", "g", At(time.Second))
		p.Namespace = "shop"
		wantEmpty(t, "tenant B pops namespace shop", Pop(t, s, p))
		p = popOf(tenantA, "", "g", At(time.Second))
		p.Namespace = "shop"
		wantIDs(t, "tenant A pops namespace shop", Pop(t, s, p), a)
	})

	t.Run("AckAndLeaseOfAnotherTenant", func(t *testing.T) {
		s := setup(t, newStore)
		a := itemOf(tenantA, "orders", "p", 1)
		PushItems(t, s, T0, a)
		p := popOf(tenantA, "orders", "g", At(time.Second))
		m := Pop(t, s, p)
		wantIDs(t, "tenant A pops", m, a)

		// Tenant B knows the partitionId and transactionId: still
		// unresolvable, and the lease stays with tenant A.
		res, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Tenant: tenantB, Now: At(2 * time.Second),
			Acks: []store.Ack{AckOf(m[0], "g", "", store.AckCompleted)}})
		if err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, "tenant B acks tenant A's message", res[0], vUnresolv)
		ext, err := s.LeaseExtend(ctx, &store.LeaseExtendParams{Tenant: tenantB, LeaseID: p.LeaseID, Seconds: 60,
			Now: At(2 * time.Second)})
		if err != nil || ext.Renewed != 0 {
			t.Fatalf("tenant B extends tenant A's lease: renewed %v err %v, want 0 nil", ext, err)
		}
		_, err = s.TxRun(ctx, &store.TxRunParams{Tenant: tenantB, Now: At(2 * time.Second),
			RequiredLeases: []string{p.LeaseID}})
		if abort := (*store.TxAbortError)(nil); !errors.As(err, &abort) {
			t.Fatalf("tenant B's transaction requiring tenant A's lease: %v, want a TxAbortError", err)
		}
		res, err = s.MessageAckMany(ctx, &store.MessageAckManyParams{Tenant: tenantA, Now: At(2 * time.Second),
			Acks: []store.Ack{AckOf(m[0], "g", p.LeaseID, store.AckCompleted)}})
		if err != nil {
			t.Fatal(err)
		}
		wantVerdict(t, "tenant A acks its message", res[0], vReleased)
	})

	t.Run("ConfigureAndDeletePerTenant", func(t *testing.T) {
		s := setup(t, newStore)
		qa, err := s.QueueConfigure(ctx, &store.QueueConfigureParams{Tenant: tenantA, Name: "orders", Now: T0,
			Options: Options(func(o *store.QueueOptions) { o.Priority = 7 })})
		if err != nil {
			t.Fatal(err)
		}
		qb, err := s.QueueConfigure(ctx, &store.QueueConfigureParams{Tenant: tenantB, Name: "orders", Now: T0,
			Options: store.DefaultQueueOptions()})
		if err != nil {
			t.Fatal(err)
		}
		if qa.ID == qb.ID || qa.Tenant != tenantA || qb.Tenant != tenantB {
			t.Fatalf("configured queues: A %s (%s), B %s (%s); want two queues, one per tenant",
				qa.ID, qa.Tenant, qb.ID, qb.Tenant)
		}
		b := itemOf(tenantB, "orders", "p", 1)
		PushItems(t, s, T0, b)
		existed, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Tenant: tenantA, Name: "orders", Now: T0})
		if err != nil || !existed {
			t.Fatalf("tenant A deletes orders: existed %v err %v", existed, err)
		}
		wantIDs(t, "tenant B's orders after tenant A deleted its own", Pop(t, s,
			popOf(tenantB, "orders", "g", At(time.Second))), b)
		existed, err = s.QueueDelete(ctx, &store.QueueDeleteParams{Tenant: tenantA, Name: "orders", Now: T0})
		if err != nil || existed {
			t.Fatalf("tenant A deletes orders again: existed %v err %v, want false nil", existed, err)
		}
	})
}
