package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// seekTo seeks group on queue (one partition, or all when part is "").
func seekTo(t testing.TB, s store.Store, queue, part, group string, target store.SeekTarget,
	now time.Time) *store.GroupSeekResult {
	t.Helper()
	res, err := s.GroupSeek(context.Background(), &store.GroupSeekParams{Queue: queue, Partition: part, Group: group,
		Target: target, Now: now})
	if err != nil {
		t.Fatalf("GroupSeek(%s/%s, %s, %+v): %v", queue, part, group, target, err)
	}
	return res
}

// ackAll acks every message of msgs (under lease) for group and requires
// success.
func ackAll(t testing.TB, s store.Store, now time.Time, group, lease string, msgs []store.Message) {
	t.Helper()
	acks := make([]store.Ack, len(msgs))
	for i, m := range msgs {
		acks[i] = AckOf(m, group, lease, store.AckCompleted)
	}
	for i, r := range Ack(t, s, now, acks...) {
		if !r.Success {
			t.Fatalf("ack %d: %s", i, verdict(r))
		}
	}
}

// laneNames lists lanes as queue/partition/group.
func laneNames(lanes []store.LaneInfo) []string {
	out := make([]string, len(lanes))
	for i, l := range lanes {
		out[i] = l.Queue + "/" + l.Partition + "/" + l.ConsumerGroup
	}
	return out
}

func runGroups(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	epoch := store.SeekTarget{Time: time.Unix(0, 0)}

	t.Run("SeekBackwardsReconsumesInOrder", func(t *testing.T) {
		s := setup(t, newStore)
		a := PushAt(t, s, T0, "q", "p", 3)
		b := PushAt(t, s, At(10*time.Second), "q", "p", 2)
		all := append(append([]store.PushItem{}, a...), b...)
		m, lease := popAll(t, s, "q", "p", "g", At(20*time.Second))
		wantIDs(t, "first read", m, all...)
		ackAll(t, s, At(20*time.Second), "g", lease, m)
		wantEmpty(t, "all read", Pop(t, s, PopParams("q", "g", At(21*time.Second))))

		res := seekTo(t, s, "q", "", "g", epoch, At(22*time.Second))
		if res.Lanes != 1 || res.Joined {
			t.Errorf("seek to the beginning: %+v, want one lane moved", res)
		}
		m, lease = popAll(t, s, "q", "p", "g", At(23*time.Second))
		wantIDs(t, "after a seek to the beginning", m, all...)
		ackAll(t, s, At(23*time.Second), "g", lease, m)

		// To a time between the two pushes: the later ones come again.
		seekTo(t, s, "q", "", "g", store.SeekTarget{Time: At(5 * time.Second)}, At(24*time.Second))
		m, lease = popAll(t, s, "q", "p", "g", At(25*time.Second))
		wantIDs(t, "after a seek to T0+5s", m, b...)
		// To the exact time of the first push: it counts as read.
		seekTo(t, s, "q", "", "g", store.SeekTarget{Time: T0}, At(26*time.Second))
		m, _ = popAll(t, s, "q", "p", "g", At(27*time.Second))
		wantIDs(t, "after a seek to T0", m, b...)
		_ = lease
	})

	t.Run("SeekToEndReadsOnlyNewMessages", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p1", 3)
		PushAt(t, s, T0, "q", "p2", 2)
		m, lease := popAll(t, s, "q", "p1", "g", At(time.Second)) // joined, p1 leased
		res := seekTo(t, s, "q", "", "g", store.SeekTarget{ToEnd: true}, At(2*time.Second))
		if res.Lanes != 2 {
			t.Errorf("seek to the end moved %d lanes, want 2", res.Lanes)
		}
		wantEmpty(t, "pop after a seek to the end", Pop(t, s, PopParams("q", "g", At(3*time.Second))))
		// The cursor is past the message: an ack under the dropped lease
		// changes nothing and says the message is behind the cursor.
		wantVerdict(t, "ack under the lease the seek dropped", Ack(t, s, At(3*time.Second),
			AckOf(m[0], "g", lease, store.AckCompleted))[0], vCommitted)
		fresh := PushAt(t, s, At(4*time.Second), "q", "p2", 1)
		p := PopParams("q", "g", At(5*time.Second))
		p.Batch = 10
		wantIDs(t, "pop after a new push", Pop(t, s, p), fresh...)
		d, _ := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: At(6 * time.Second)})
		wantCounts(t, "p1 figures after the seek", d.Partitions[0].Messages, store.MessageCounts{Total: 3, Completed: 3})
	})

	t.Run("SeekDropsLeaseAndRedelivers", func(t *testing.T) {
		s := setup(t, newStore)
		items := PushAt(t, s, T0, "q", "p", 2)
		m, lease := popAll(t, s, "q", "p", "g", At(time.Second))
		wantIDs(t, "leased", m, items...)
		seekTo(t, s, "q", "", "g", epoch, At(2*time.Second))
		m2, lease2 := popAll(t, s, "q", "p", "g", At(3*time.Second))
		wantIDs(t, "at once after the seek, lease or not", m2, items...)
		wantVerdict(t, "ack under the old lease", Ack(t, s, At(4*time.Second), AckOf(m[1], "g", lease,
			store.AckCompleted))[0], vBadLease)
		wantVerdict(t, "ack under the new lease", Ack(t, s, At(4*time.Second), AckOf(m2[1], "g", lease2,
			store.AckCompleted))[0], vReleased)
	})

	t.Run("SeekOnePartition", func(t *testing.T) {
		s := setup(t, newStore)
		p1 := PushAt(t, s, T0, "q", "p1", 2)
		PushAt(t, s, At(time.Second), "q", "p2", 2)
		for _, part := range []string{"p1", "p2"} {
			m, lease := popAll(t, s, "q", part, "g", At(2*time.Second))
			ackAll(t, s, At(2*time.Second), "g", lease, m)
		}
		res := seekTo(t, s, "q", "p1", "g", epoch, At(3*time.Second))
		if res.Lanes != 1 || !res.CursorAt.IsZero() {
			t.Errorf("seek of p1 to the beginning: %+v, want 1 lane and no message at the cursor", res)
		}
		m, _ := popGroup(t, s, "q", "", "g", At(4*time.Second), false)
		wantIDs(t, "pop of the queue after seeking p1 back", m, p1...)
		res = seekTo(t, s, "q", "p2", "g", store.SeekTarget{ToEnd: true}, At(5*time.Second))
		if res.Lanes != 1 || !res.CursorAt.Equal(At(time.Second)) {
			t.Errorf("seek of p2 to its end: %+v, want the cursor on a message of T0+1s", res)
		}
		_, err := s.GroupSeek(ctx, &store.GroupSeekParams{Queue: "q", Partition: "nope", Group: "g", Now: T0,
			Target: store.SeekTarget{ToEnd: true}})
		wantNotFound(t, "seek of a missing partition", err, store.ErrPartitionNotFound)
		_, err = s.GroupSeek(ctx, &store.GroupSeekParams{Queue: "nope", Group: "g", Now: T0, Target: epoch})
		wantNotFound(t, "seek of a missing queue", err, store.ErrQueueNotFound)
	})

	t.Run("SeekJoinsAGroup", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p1", 3)
		later := PushAt(t, s, At(10*time.Second), "q", "p2", 2)
		res := seekTo(t, s, "q", "", "late", store.SeekTarget{Time: At(5 * time.Second)}, At(20*time.Second))
		if !res.Joined || res.Lanes != 2 {
			t.Fatalf("seek of a group that never popped: %+v, want it joined with 2 lanes", res)
		}
		// Its first pop asks for everything: the seek's join wins.
		p := PopParams("q", "late", At(21*time.Second))
		p.Batch, p.Partitions = 10, 10
		p.Subscription = store.Subscription{Mode: store.SubscribeAll}
		wantIDs(t, "first pop after the seek", Pop(t, s, p), later...)
		groups, err := s.GroupList(ctx, &store.GroupListParams{Now: At(22 * time.Second)})
		if err != nil || len(groups) != 1 || !groups[0].SubscribedFrom.Equal(At(5*time.Second)) ||
			!groups[0].JoinedAt.Equal(At(20*time.Second)) {
			t.Fatalf("GroupList: %+v %v, want late subscribed from T0+5s", groups, err)
		}
		// A partition seek of a new group positions all its lanes.
		res = seekTo(t, s, "q", "p1", "end", store.SeekTarget{ToEnd: true}, At(23*time.Second))
		if !res.Joined || res.Lanes != 2 {
			t.Errorf("partition seek of a new group: %+v, want 2 lanes", res)
		}
		wantEmpty(t, "the new group at the end", Pop(t, s, PopParams("q", "end", At(24*time.Second))))
	})

	t.Run("ListGetAndLagging", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p1", 3)
		PushAt(t, s, At(time.Second), "q", "p2", 2)
		p := PopParams("q", "g", At(time.Minute))
		p.Partition, p.Batch = "p1", 2
		m := Pop(t, s, p)
		Ack(t, s, At(time.Minute), AckOf(m[0], "g", p.LeaseID, store.AckCompleted))
		popGroup(t, s, "q", "p1", "h", At(time.Minute), true)
		now := At(2 * time.Minute)

		groups, err := s.GroupList(ctx, &store.GroupListParams{Now: now})
		if err != nil || len(groups) != 2 {
			t.Fatalf("GroupList: %+v %v", groups, err)
		}
		g, h := groups[0], groups[1]
		if g.ConsumerGroup != "g" || g.Queue != "q" || g.Consumed != 1 || g.Lag != 4 || g.LaggingPartitions != 2 ||
			!g.OldestUnread.Equal(T0) || !g.SubscribedFrom.IsZero() {
			t.Errorf("group g: %+v", g)
		}
		if len(g.Members) != 1 || g.Members[0].Partition != "p1" || g.Members[0].LeaseID != p.LeaseID ||
			g.Members[0].PartitionID == "" || !g.Members[0].LeaseExpiresAt.After(now) {
			t.Errorf("group g's members: %+v, want its lease on p1", g.Members)
		}
		if h.ConsumerGroup != "h" || h.Consumed != 3 || h.Lag != 2 || h.LaggingPartitions != 1 ||
			!h.OldestUnread.Equal(At(time.Second)) || len(h.Members) != 0 {
			t.Errorf("group h: %+v", h)
		}
		page, _ := s.GroupList(ctx, &store.GroupListParams{Now: now, Limit: 1, Offset: 1})
		if len(page) != 1 || page[0].ConsumerGroup != "h" {
			t.Errorf("GroupList page 2: %+v", page)
		}

		lanes, err := s.GroupGet(ctx, &store.GroupGetParams{Group: "g", Now: now})
		if err != nil || !equalStrings(laneNames(lanes), []string{"q/p1/g", "q/p2/g"}) {
			t.Fatalf("GroupGet(g): %v %v", laneNames(lanes), err)
		}
		if l := lanes[0]; l.Consumed != 1 || l.Lag != 2 || l.Processing != 1 || l.LeaseID != p.LeaseID ||
			!l.OldestUnread.Equal(T0) || l.PartitionID == "" || l.LastClaimedAt.IsZero() {
			t.Errorf("g on p1: %+v", l)
		}
		if l := lanes[1]; l.Consumed != 0 || l.Lag != 2 || l.Processing != 0 || l.LeaseID != "" ||
			!l.OldestUnread.Equal(At(time.Second)) {
			t.Errorf("g on p2: %+v", l)
		}
		lanes, _ = s.GroupGet(ctx, &store.GroupGetParams{Group: "g", Now: now, Limit: 1, Offset: 1})
		if !equalStrings(laneNames(lanes), []string{"q/p2/g"}) {
			t.Errorf("GroupGet page 2: %v", laneNames(lanes))
		}
		_, err = s.GroupGet(ctx, &store.GroupGetParams{Group: "nobody", Now: now})
		wantNotFound(t, "GroupGet of an unknown group", err, store.ErrGroupNotFound)

		lag := func(minLag time.Duration, limit int) []string {
			t.Helper()
			lanes, err := s.GroupLagging(ctx, &store.GroupLaggingParams{MinLag: minLag, Limit: limit, Now: At(2 * time.Hour)})
			if err != nil {
				t.Fatalf("GroupLagging: %v", err)
			}
			return laneNames(lanes)
		}
		if got := lag(time.Hour, 0); !equalStrings(got, []string{"q/p1/g", "q/p2/g", "q/p2/h"}) {
			t.Errorf("lagging over an hour: %v", got)
		}
		if got := lag(time.Hour, 1); !equalStrings(got, []string{"q/p1/g"}) {
			t.Errorf("lagging, first only: %v", got)
		}
		if got := lag(2*time.Hour-500*time.Millisecond, 0); !equalStrings(got, []string{"q/p1/g"}) {
			t.Errorf("lagging over 2h less 0.5s: %v, want only the lane behind since T0", got)
		}
		if got := lag(3*time.Hour, 0); len(got) != 0 {
			t.Errorf("lagging over 3h: %v, want none", got)
		}
	})

	t.Run("DeleteWithAndWithoutMetadata", func(t *testing.T) {
		s := setup(t, newStore)
		items := PushAt(t, s, T0, "q", "p", 3)
		PushAt(t, s, T0, "r", "p", 1)
		for _, g := range []string{"g", "h"} {
			m, _ := popGroup(t, s, "q", "p", g, At(time.Second), true)
			wantIDs(t, g+" reads q", m, items...)
		}
		popGroup(t, s, "r", "p", "g", At(time.Second), true)
		_, err := s.GroupDelete(ctx, &store.GroupDeleteParams{Group: "g", Queue: "nope", Now: T0})
		wantNotFound(t, "delete on a missing queue", err, store.ErrQueueNotFound)

		// g leaves every queue.
		res, err := s.GroupDelete(ctx, &store.GroupDeleteParams{Group: "g", DeleteMetadata: true, Now: At(2 * time.Second)})
		if err != nil || res.Lanes != 2 || !equalStrings(res.Queues, []string{"q", "r"}) {
			t.Fatalf("delete g: %+v %v, want 2 lanes on q and r", res, err)
		}
		_, err = s.GroupGet(ctx, &store.GroupGetParams{Group: "g", Now: At(2 * time.Second)})
		wantNotFound(t, "GroupGet after delete", err, store.ErrGroupNotFound)
		p := PopParams("q", "g", At(3*time.Second))
		p.Subscription = store.Subscription{Mode: store.SubscribeFrom, From: At(3 * time.Second)}
		wantEmpty(t, "g joins afresh, subscribed to new messages", Pop(t, s, p))

		// h stays joined and restarts from its subscription: the beginning.
		res, err = s.GroupDelete(ctx, &store.GroupDeleteParams{Group: "h", Queue: "q", Now: At(4 * time.Second)})
		if err != nil || res.Lanes != 1 {
			t.Fatalf("delete h's cursors on q: %+v %v", res, err)
		}
		m, _ := popGroup(t, s, "q", "p", "h", At(5*time.Second), false)
		wantIDs(t, "h after its cursors were deleted", m, items...)
		if _, err := s.GroupGet(ctx, &store.GroupGetParams{Group: "h", Now: At(5 * time.Second)}); err != nil {
			t.Errorf("h is still a group: %v", err)
		}
	})

	t.Run("SubscriptionSet", func(t *testing.T) {
		s := setup(t, newStore)
		_, err := s.GroupSubscriptionSet(ctx, &store.GroupSubscriptionSetParams{Group: "k", From: T0, Now: T0})
		wantNotFound(t, "subscription of an unknown group", err, store.ErrGroupNotFound)
		PushAt(t, s, T0, "q", "p", 2)
		later := PushAt(t, s, At(time.Minute), "q", "p", 1)
		PushAt(t, s, T0, "r", "p", 1)
		for _, q := range []string{"q", "r"} {
			p := PopParams(q, "k", At(2*time.Minute))
			p.AutoAck, p.Batch = true, 10
			p.Subscription = store.Subscription{Mode: store.SubscribeFrom, From: At(2 * time.Minute)}
			Pop(t, s, p) // joined after everything: reads nothing
		}
		n, err := s.GroupSubscriptionSet(ctx, &store.GroupSubscriptionSetParams{Group: "k", From: At(30 * time.Second),
			Now: At(3 * time.Minute)})
		if err != nil || n != 2 {
			t.Fatalf("GroupSubscriptionSet: %d %v, want 2 queues", n, err)
		}
		// Cursors in use do not move; restarted ones start from it.
		wantEmpty(t, "k after the subscription change", Pop(t, s, PopParams("q", "k", At(4*time.Minute))))
		if _, err := s.GroupDelete(ctx, &store.GroupDeleteParams{Group: "k", Queue: "q", Now: At(5 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		m, _ := popGroup(t, s, "q", "p", "k", At(6*time.Minute), false)
		wantIDs(t, "k restarted from T0+30s", m, later...)
	})

	t.Run("FiguresAfterSeek", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p", 4)
		PushAt(t, s, At(time.Minute), "q", "p", 2)
		PushAt(t, s, At(time.Minute), "other", "p", 3) // interleaved offsets
		PushAt(t, s, At(2*time.Minute), "q", "p", 1)
		m, lease := popAll(t, s, "q", "p", "g", At(3*time.Minute))
		ackAll(t, s, At(3*time.Minute), "g", lease, m)
		for _, tc := range []struct {
			to                 store.SeekTarget
			consumed, lag      int64
			oldestUnreadOffset time.Duration
		}{
			{store.SeekTarget{Time: At(90 * time.Second)}, 6, 1, 2 * time.Minute},
			{store.SeekTarget{Time: At(30 * time.Second)}, 4, 3, time.Minute},
			{epoch, 0, 7, 0},
			{store.SeekTarget{ToEnd: true}, 7, 0, -1},
			{store.SeekTarget{Time: At(time.Minute)}, 6, 1, 2 * time.Minute},
		} {
			seekTo(t, s, "q", "", "g", tc.to, At(4*time.Minute))
			lanes, err := s.GroupGet(ctx, &store.GroupGetParams{Group: "g", Now: At(4 * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			l := lanes[0]
			wantOldest := time.Time{}
			if tc.oldestUnreadOffset >= 0 {
				wantOldest = At(tc.oldestUnreadOffset)
			}
			if l.Consumed != tc.consumed || l.Lag != tc.lag || !l.OldestUnread.Equal(wantOldest) {
				t.Errorf("after a seek to %+v: consumed %d lag %d oldest unread %v, want %d %d %v", tc.to,
					l.Consumed, l.Lag, l.OldestUnread, tc.consumed, tc.lag, wantOldest)
			}
		}
	})

	t.Run("TenantsAreIsolated", func(t *testing.T) {
		s := setup(t, newStore)
		PushItems(t, s, T0, itemOf(tenantA, "orders", "p", 1), itemOf(tenantA, "orders", "p", 2))
		PushItems(t, s, T0, itemOf(tenantB, "orders", "p", 3), itemOf(tenantB, "only-b", "p", 4))
		pa := PopParams("orders", "g", At(time.Second))
		pa.Tenant, pa.AutoAck = tenantA, true
		Pop(t, s, pa)
		now := At(time.Hour)

		la, err := s.QueueList(ctx, &store.QueueListParams{Tenant: tenantA, Now: now})
		if err != nil || la.Total != 1 || la.Queues[0].Messages.Total != 2 {
			t.Fatalf("tenant A's queues: %+v %v", la, err)
		}
		if l, _ := s.QueueList(ctx, &store.QueueListParams{Now: now}); l.Total != 0 {
			t.Errorf("the default tenant sees %d queues", l.Total)
		}
		db, err := s.QueueGet(ctx, &store.QueueGetParams{Tenant: tenantB, Name: "orders", Now: now})
		if err != nil || db.Queue.Messages.Total != 1 || db.Queue.Messages.Completed != 0 {
			t.Fatalf("tenant B's orders: %+v %v", db, err)
		}
		_, err = s.QueueGet(ctx, &store.QueueGetParams{Tenant: tenantA, Name: "only-b", Now: now})
		wantNotFound(t, "tenant A describes tenant B's queue", err, store.ErrQueueNotFound)
		if pl, _ := s.PartitionList(ctx, &store.PartitionListParams{Tenant: tenantA, Now: now}); pl.Total != 1 {
			t.Errorf("tenant A lists %d partitions, want 1", pl.Total)
		}
		if o, _ := s.QueueOverview(ctx, &store.QueueOverviewParams{Tenant: tenantB, Now: now}); o.Queues != 2 ||
			o.Messages.Total != 2 || o.Messages.Completed != 0 {
			t.Errorf("tenant B's overview: %+v", o)
		}
		if gs, _ := s.GroupList(ctx, &store.GroupListParams{Tenant: tenantB, Now: now}); len(gs) != 0 {
			t.Errorf("tenant B sees tenant A's groups: %+v", gs)
		}
		_, err = s.GroupGet(ctx, &store.GroupGetParams{Tenant: tenantB, Group: "g", Now: now})
		wantNotFound(t, "tenant B describes tenant A's group", err, store.ErrGroupNotFound)
		_, err = s.GroupSeek(ctx, &store.GroupSeekParams{Tenant: tenantA, Queue: "only-b", Group: "g", Now: now,
			Target: epoch})
		wantNotFound(t, "tenant A seeks on tenant B's queue", err, store.ErrQueueNotFound)
		if lanes, _ := s.GroupLagging(ctx, &store.GroupLaggingParams{Tenant: tenantB, Now: now}); len(lanes) != 0 {
			t.Errorf("tenant B lags: %v", laneNames(lanes))
		}
		if _, err := s.GroupSubscriptionSet(ctx, &store.GroupSubscriptionSetParams{Tenant: tenantB, Group: "g", Now: now,
			From: T0}); err == nil {
			t.Error("tenant B changed tenant A's group")
		}
		// Clearing and seeking tenant A's orders leaves tenant B's alone.
		if _, err := s.QueueClear(ctx, &store.QueueClearParams{Tenant: tenantA, Name: "orders", Now: now}); err != nil {
			t.Fatal(err)
		}
		_, err = s.GroupSeek(ctx, &store.GroupSeekParams{Tenant: tenantA, Queue: "orders", Group: "g", Now: now,
			Target: epoch})
		if err != nil {
			t.Fatal(err)
		}
		db, _ = s.QueueGet(ctx, &store.QueueGetParams{Tenant: tenantB, Name: "orders", Now: now})
		if db.Queue.Messages.Total != 1 {
			t.Errorf("tenant B's orders after tenant A's clear: %+v", db.Queue.Messages)
		}
		if _, err := s.GroupDelete(ctx, &store.GroupDeleteParams{Tenant: tenantB, Group: "g", Queue: "only-b",
			DeleteMetadata: true, Now: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GroupGet(ctx, &store.GroupGetParams{Tenant: tenantA, Group: "g", Now: now}); err != nil {
			t.Errorf("tenant A's group after tenant B's delete: %v", err)
		}
	})
}
