package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func runPop(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("Empty", func(t *testing.T) {
		s := setup(t, newStore)
		wantEmpty(t, "pop of a missing queue", Pop(t, s, PopParams("nope", store.QueueMode, T0)))
		Configure(t, s, "q", store.DefaultQueueOptions())
		wantEmpty(t, "pop of an empty queue", Pop(t, s, PopParams("q", store.QueueMode, T0)))
		p := PopParams("", store.QueueMode, T0)
		p.Namespace = "nothing-here"
		wantEmpty(t, "pop of a namespace with no queue", Pop(t, s, p))
	})

	t.Run("FIFO", func(t *testing.T) {
		s := setup(t, newStore)
		var all []store.PushItem
		for i := range 3 {
			all = append(all, PushAt(t, s, At(time.Duration(i)*time.Second), "q", "p", 4)...)
		}
		for i := 0; i < len(all); i += 5 {
			p := PopParams("q", store.QueueMode, At(time.Minute))
			p.Batch = 5
			msgs := Pop(t, s, p)
			want := all[i:min(i+5, len(all))]
			wantIDs(t, fmt.Sprintf("pop from message %d", i), msgs, want...)
			res := Ack(t, s, At(time.Minute), AckOf(msgs[len(msgs)-1], store.QueueMode, p.LeaseID, store.AckCompleted))
			wantVerdict(t, "ack of the batch end", res[0], vReleased)
		}
		wantEmpty(t, "pop after everything was acked", Pop(t, s, PopParams("q", store.QueueMode, At(time.Minute))))
	})

	t.Run("BatchCap", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 10)
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Batch = 3
		wantIDs(t, "pop batch 3", Pop(t, s, p), items[:3]...)
	})

	t.Run("OneLeasePerLane", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 5)
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Batch = 2
		first := Pop(t, s, p)
		wantIDs(t, "first pop", first, items[:2]...)
		wantEmpty(t, "second pop while the lane is leased", Pop(t, s, PopParams("q", store.QueueMode, At(2*time.Second))))
		pinned := PopParams("q", store.QueueMode, At(2*time.Second))
		pinned.Partition = "p"
		wantEmpty(t, "pinned pop while the lane is leased", Pop(t, s, pinned))
		res := Ack(t, s, At(3*time.Second), AckOf(first[1], store.QueueMode, p.LeaseID, store.AckCompleted))
		wantVerdict(t, "ack of the batch end", res[0], vReleased)
		next := PopParams("q", store.QueueMode, At(4*time.Second))
		next.Batch = 10
		wantIDs(t, "pop after release", Pop(t, s, next), items[2:]...)
	})

	t.Run("PinnedPartition", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "q", "a", 2)
		b := Push(t, s, "q", "b", 2)
		Push(t, s, "q", "c", 2)
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Partition, p.Batch, p.Partitions = "b", 10, 3
		msgs := Pop(t, s, p)
		wantIDs(t, "pinned pop of b", msgs, b...)
		for _, m := range msgs {
			if m.Partition != "b" {
				t.Errorf("pinned pop returned a message of partition %q", m.Partition)
			}
		}
		p = PopParams("q", store.QueueMode, At(time.Second))
		p.Partition = "missing"
		wantEmpty(t, "pinned pop of a missing partition", Pop(t, s, p))
		p = PopParams("q", store.QueueMode, At(time.Second))
		p.Partition = "b"
		wantEmpty(t, "pinned pop of a leased partition", Pop(t, s, p))
		// The other lanes are still free.
		p = PopParams("q", store.QueueMode, At(time.Second))
		p.Batch, p.Partitions = 10, 5
		if msgs := Pop(t, s, p); len(msgs) != 4 {
			t.Errorf("pop of the unpinned lanes: got %s, want the 4 messages of a and c", payloads(msgs))
		}
	})

	t.Run("GroupsIndependent", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 3)
		pa := PopParams("q", "a", At(time.Second))
		pa.Batch = 10
		msgs := Pop(t, s, pa)
		wantIDs(t, "group a", msgs, items...)
		pb := PopParams("q", "b", At(time.Second))
		pb.Batch = 10
		wantIDs(t, "group b while a holds its lease", Pop(t, s, pb), items...)
		pq := PopParams("q", store.QueueMode, At(time.Second))
		pq.Batch = 10
		wantIDs(t, "queue mode", Pop(t, s, pq), items...)

		res := Ack(t, s, At(2*time.Second), AckOf(msgs[2], "a", pa.LeaseID, store.AckCompleted))
		wantVerdict(t, "group a acks all", res[0], vReleased)
		// b's lease is untouched by a's ack.
		res = Ack(t, s, At(2*time.Second), AckOf(msgs[0], "b", pb.LeaseID, store.AckCompleted))
		wantVerdict(t, "group b acks the first", res[0], vOK)
		// Group a's lease does not cover group b's lane.
		res = Ack(t, s, At(2*time.Second), AckOf(msgs[1], "b", pa.LeaseID, store.AckCompleted))
		wantVerdict(t, "group b acked under a's lease", res[0], vBadLease)
		wantEmpty(t, "group a after its commit", Pop(t, s, PopParams("q", "a", At(3*time.Second))))
		wantEmpty(t, "group b still leased", Pop(t, s, PopParams("q", "b", At(3*time.Second))))
		fresh := PopParams("q", "c", At(3*time.Second))
		fresh.Batch = 10
		wantIDs(t, "a new group reads from the beginning", Pop(t, s, fresh), items...)
	})

	t.Run("MultiPartition", func(t *testing.T) {
		s := setup(t, newStore)
		byPart := map[string][]store.PushItem{}
		for _, part := range []string{"p0", "p1", "p2", "p3"} {
			byPart[part] = Push(t, s, "q", part, 5)
		}
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Batch, p.Partitions = 100, 3
		msgs := Pop(t, s, p)
		if len(msgs) != 15 {
			t.Fatalf("pop of 3 lanes with room for all: got %d messages %s, want 15", len(msgs), payloads(msgs))
		}
		lanes := checkLanes(t, msgs, byPart)
		if len(lanes) != 3 {
			t.Fatalf("pop of 3 lanes claimed %d lanes: %v", len(lanes), lanes)
		}
		// One lease covers every claimed lane.
		ext, err := s.LeaseExtend(t.Context(), &store.LeaseExtendParams{LeaseID: p.LeaseID, Seconds: 60, Now: At(2 * time.Second)})
		if err != nil {
			t.Fatalf("LeaseExtend: %v", err)
		}
		if ext.Renewed != 3 {
			t.Errorf("LeaseExtend renewed %d lanes, want 3", ext.Renewed)
		}
		var acks []store.Ack
		for i, m := range msgs {
			if i == len(msgs)-1 || msgs[i+1].PartitionID != m.PartitionID {
				acks = append(acks, AckOf(m, store.QueueMode, p.LeaseID, store.AckCompleted))
			}
		}
		for i, r := range Ack(t, s, At(3*time.Second), acks...) {
			wantVerdict(t, fmt.Sprintf("ack of lane %d's end", i), r, vReleased)
		}
		// The fourth lane is left.
		rest := PopParams("q", store.QueueMode, At(4*time.Second))
		rest.Batch, rest.Partitions = 100, 4
		if msgs := Pop(t, s, rest); len(msgs) != 5 {
			t.Errorf("pop of the last lane: got %s, want 5 messages", payloads(msgs))
		}
	})

	t.Run("MultiPartitionGlobalCap", func(t *testing.T) {
		s := setup(t, newStore)
		byPart := map[string][]store.PushItem{}
		for _, part := range []string{"p0", "p1", "p2", "p3"} {
			byPart[part] = Push(t, s, "q", part, 5)
		}
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.Batch, p.Partitions = 7, 4
		msgs := Pop(t, s, p)
		if len(msgs) != 7 {
			t.Fatalf("pop with batch 7 over 4 lanes: got %d messages %s, want 7", len(msgs), payloads(msgs))
		}
		if lanes := checkLanes(t, msgs, byPart); len(lanes) != 2 {
			t.Errorf("batch 7 over lanes of 5 should fill one lane and part of another; got lanes %v", lanes)
		}
	})

	t.Run("AutoAck", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 5)
		p := &store.LanePopParams{Queue: "q", ConsumerGroup: store.QueueMode, Batch: 3, Partitions: 1, AutoAck: true, Now: At(time.Second)}
		auto := Pop(t, s, p)
		wantIDs(t, "first autoAck pop", auto, items[:3]...)
		// Nothing is leased: the next pop carries on after the commit.
		p2 := PopParams("q", store.QueueMode, At(time.Second))
		p2.Batch = 10
		msgs := Pop(t, s, p2)
		wantIDs(t, "pop after autoAck", msgs, items[3:]...)
		res := Ack(t, s, At(time.Second), AckOf(auto[2], store.QueueMode, "", store.AckCompleted))
		wantVerdict(t, "re-ack of the autoAcked batch end", res[0], vDup)
		// Far in the future: nothing autoAcked comes back.
		p3 := &store.LanePopParams{Queue: "q", ConsumerGroup: "other", Batch: 10, Partitions: 1, AutoAck: true, Now: At(time.Hour)}
		wantIDs(t, "autoAck pop by another group", Pop(t, s, p3), items...)
		p4 := &store.LanePopParams{Queue: "q", ConsumerGroup: "other", Batch: 10, Partitions: 1, AutoAck: true, Now: At(2 * time.Hour)}
		wantEmpty(t, "autoAck pop after everything was delivered", Pop(t, s, p4))
	})

	t.Run("SubscriptionFrom", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p1", 3)
		PushAt(t, s, T0, "q", "p2", 2)
		late := PushAt(t, s, At(10*time.Second), "q", "p1", 2)
		from := store.Subscription{Mode: store.SubscribeFrom, From: T0} // messages created at From are skipped

		p := PopParams("q", "g", At(20*time.Second))
		p.Partition, p.Batch, p.Subscription = "p1", 10, from
		msgs := Pop(t, s, p)
		wantIDs(t, "first pop of a group subscribed from T0", msgs, late...)
		Ack(t, s, At(20*time.Second), AckOf(msgs[1], "g", p.LeaseID, store.AckCompleted))

		// The subscription is the group's, per queue: a lane it never read
		// starts at the subscription time too, whatever a later pop asks.
		p = PopParams("q", "g", At(21*time.Second))
		p.Partition, p.Batch = "p2", 10
		p.Subscription = store.Subscription{Mode: store.SubscribeAll}
		wantEmpty(t, "later pop of an old lane asking for all", Pop(t, s, p))

		newer := PushAt(t, s, At(30*time.Second), "q", "p2", 1)
		lane3 := PushAt(t, s, At(30*time.Second), "q", "p3", 2) // a lane created after the join
		p = PopParams("q", "g", At(31*time.Second))
		p.Partition, p.Batch = "p2", 10
		wantIDs(t, "new message on a lane the group joined late", Pop(t, s, p), newer...)
		p = PopParams("q", "g", At(31*time.Second))
		p.Partition, p.Batch = "p3", 10
		wantIDs(t, "lane created after the join", Pop(t, s, p), lane3...)

		// Another group subscribing from the beginning reads everything.
		p = PopParams("q", "all", At(40*time.Second))
		p.Partition, p.Batch = "p1", 10
		if msgs := Pop(t, s, p); len(msgs) != 5 {
			t.Errorf("group subscribed to all: got %s, want 5 messages", payloads(msgs))
		}
		// Queue mode ignores subscriptions.
		p = PopParams("q", store.QueueMode, At(40*time.Second))
		p.Partition, p.Batch = "p1", 10
		p.Subscription = store.Subscription{Mode: store.SubscribeFrom, From: At(time.Hour)}
		if msgs := Pop(t, s, p); len(msgs) != 5 {
			t.Errorf("queue mode with a subscription: got %s, want 5 messages", payloads(msgs))
		}
	})

	t.Run("SubscriptionNew", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p", 3)
		join := At(5 * time.Second)
		p := PopParams("q", "g", join)
		p.Batch, p.Subscription = 10, store.Subscription{Mode: store.SubscribeFrom, From: join}
		wantEmpty(t, "first pop of a group subscribing to new messages", Pop(t, s, p))
		fresh := PushAt(t, s, At(6*time.Second), "q", "p", 2)
		p = PopParams("q", "g", At(7*time.Second))
		p.Batch = 10
		wantIDs(t, "pop after new messages", Pop(t, s, p), fresh...)
	})

	t.Run("DelayedProcessing", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.DelayedProcessing = 10 }))
		items := PushAt(t, s, T0, "q", "p", 2)
		wantEmpty(t, "pop inside the delay", Pop(t, s, PopParams("q", store.QueueMode, At(9*time.Second))))
		p := PopParams("q", store.QueueMode, At(11*time.Second))
		p.Batch = 10
		wantIDs(t, "pop after the delay", Pop(t, s, p), items...)
	})

	t.Run("DelayedProcessingPerMessage", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.DelayedProcessing = 10 }))
		first := PushAt(t, s, T0, "q", "p", 1)
		PushAt(t, s, At(5*time.Second), "q", "p", 1)
		p := PopParams("q", store.QueueMode, At(11*time.Second))
		p.Batch = 10
		wantIDs(t, "pop when only the first message is due", Pop(t, s, p), first...)
	})

	t.Run("DelayedLanesDoNotHideReadyOnes", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.DelayedProcessing = 10 }))
		// Many lanes whose only messages are still inside the delay, created
		// before the one lane whose message is due.
		var waiting []store.PushItem
		for i := range 40 {
			waiting = append(waiting, Item("q", fmt.Sprintf("wait-%02d", i), i))
		}
		PushItems(t, s, At(5*time.Second), waiting...)
		ready := PushAt(t, s, T0, "q", "zz-ready", 1)
		for i := range 3 {
			p := PopParams("q", store.QueueMode, At(11*time.Second))
			p.Batch, p.Partitions = 10, 1
			if msgs := Pop(t, s, p); len(msgs) > 0 {
				wantIDs(t, "pop while most lanes are delayed", msgs, ready...)
				return
			}
			t.Logf("pop %d returned nothing", i+1)
		}
		t.Fatalf("3 pops returned nothing while lane zz-ready held a due message and 40 lanes only delayed ones")
	})

	t.Run("SubscriptionSeedsDoNotHideNewMessages", func(t *testing.T) {
		s := setup(t, newStore)
		var old []store.PushItem
		for i := range 40 {
			old = append(old, Item("q", fmt.Sprintf("old-%02d", i), i))
		}
		PushItems(t, s, T0, old...)
		fresh := PushAt(t, s, At(10*time.Second), "q", "zz-new", 1)
		p := PopParams("q", "g", At(20*time.Second))
		p.Batch, p.Subscription = 10, store.Subscription{Mode: store.SubscribeFrom, From: At(5 * time.Second)}
		wantIDs(t, "first pop of a group joining after 40 lanes of old messages", Pop(t, s, p), fresh...)
	})

	t.Run("WindowBuffer", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.WindowBuffer = 5 }))
		a := PushAt(t, s, T0, "q", "p", 1)
		wantEmpty(t, "pop inside the window", Pop(t, s, PopParams("q", store.QueueMode, At(4*time.Second))))
		b := PushAt(t, s, At(3*time.Second), "q", "p", 1)
		wantEmpty(t, "pop inside the window of the last message", Pop(t, s, PopParams("q", store.QueueMode, At(7*time.Second))))
		other := PushAt(t, s, T0, "q", "quiet", 1)
		p := PopParams("q", store.QueueMode, At(7*time.Second))
		p.Batch, p.Partitions = 10, 2
		wantIDs(t, "the quiet lane is served while the busy one waits", Pop(t, s, p), other...)
		p = PopParams("q", store.QueueMode, At(9*time.Second))
		p.Batch = 10
		wantIDs(t, "pop after the window", Pop(t, s, p), append(a, b...)...)
	})

	t.Run("ByNamespacePriority", func(t *testing.T) {
		s := setup(t, newStore)
		for _, q := range []struct {
			name     string
			priority int
		}{{"low", 1}, {"high", 5}, {"mid-b", 3}, {"mid-a", 3}} {
			_, err := s.QueueConfigure(t.Context(), &store.QueueConfigureParams{
				Name: q.name, Namespace: "ns", Task: "t", Now: T0,
				Options: Options(func(o *store.QueueOptions) { o.Priority = q.priority }),
			})
			if err != nil {
				t.Fatalf("QueueConfigure(%s): %v", q.name, err)
			}
			Push(t, s, q.name, "p", 1)
		}
		Push(t, s, "elsewhere", "p", 1)
		var order []string
		for range 5 {
			p := PopParams("", store.QueueMode, At(time.Second))
			p.Namespace, p.Task = "ns", "t"
			msgs := Pop(t, s, p)
			if len(msgs) == 0 {
				break
			}
			order = append(order, msgs[0].Queue)
		}
		if want := []string{"high", "mid-a", "mid-b", "low"}; fmt.Sprint(order) != fmt.Sprint(want) {
			t.Errorf("namespace pops visited %v, want %v (priority desc, then name)", order, want)
		}
	})

	t.Run("ByNamespaceAcrossQueues", func(t *testing.T) {
		s := setup(t, newStore)
		for _, name := range []string{"a", "b"} {
			_, err := s.QueueConfigure(t.Context(), &store.QueueConfigureParams{
				Name: name, Namespace: "ns", Now: T0, Options: store.DefaultQueueOptions()})
			if err != nil {
				t.Fatalf("QueueConfigure(%s): %v", name, err)
			}
			Push(t, s, name, "p", 3)
		}
		p := PopParams("", store.QueueMode, At(time.Second))
		p.Namespace, p.Batch, p.Partitions = "ns", 5, 2
		msgs := Pop(t, s, p)
		if len(msgs) != 5 {
			t.Fatalf("pop of batch 5 over two queues of 3: got %s", payloads(msgs))
		}
		if msgs[0].Queue == msgs[4].Queue {
			t.Errorf("pop over two lanes stayed in queue %s", msgs[0].Queue)
		}
		ext, err := s.LeaseExtend(t.Context(), &store.LeaseExtendParams{LeaseID: p.LeaseID, Seconds: 60, Now: At(2 * time.Second)})
		if err != nil || ext.Renewed != 2 {
			t.Errorf("LeaseExtend of a lease over two queues: renewed %v err %v, want 2", ext, err)
		}
	})
}

// checkLanes checks that msgs come as whole runs per lane, each run a prefix
// of that partition's pushed items in order, and returns the partitions in
// claim order.
func checkLanes(t testing.TB, msgs []store.Message, byPart map[string][]store.PushItem) []string {
	t.Helper()
	var lanes []string
	seen := map[string]int{}
	for i, m := range msgs {
		if i == 0 || msgs[i-1].Partition != m.Partition {
			if _, dup := seen[m.Partition]; dup {
				t.Fatalf("lane %s appears in two runs: %s", m.Partition, payloads(msgs))
			}
			lanes = append(lanes, m.Partition)
			seen[m.Partition] = 0
		}
		k := seen[m.Partition]
		want := byPart[m.Partition]
		if k >= len(want) || want[k].MessageID != m.ID {
			t.Fatalf("lane %s message %d is %s, not the partition's next message in order", m.Partition, k, m.Payload)
		}
		seen[m.Partition] = k + 1
	}
	return lanes
}
