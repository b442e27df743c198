package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// wantCounts fails unless got has the figures of want.
func wantCounts(t testing.TB, what string, got, want store.MessageCounts) {
	t.Helper()
	if got != want {
		t.Errorf("%s: figures %+v, want %+v", what, got, want)
	}
}

// wantNotFound fails unless err is the not-found error want (which is also
// store.ErrNotFound).
func wantNotFound(t testing.TB, what string, err error, want *store.NotFoundError) {
	t.Helper()
	if !errors.Is(err, want) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("%s: %v, want %q (store.ErrNotFound)", what, err, want.Error())
	}
}

// popGroup pops up to 100 messages of queue (one partition, or any when
// part is "") for group at now, optionally with autoAck.
func popGroup(t testing.TB, s store.Store, queue, part, group string, now time.Time, autoAck bool) ([]store.Message, string) {
	t.Helper()
	p := PopParams(queue, group, now)
	p.Partition, p.Batch, p.AutoAck, p.Partitions = part, 100, autoAck, 100
	return Pop(t, s, p), p.LeaseID
}

// queueByName returns the queue called name of a list, failing if absent.
func queueByName(t testing.TB, list []store.QueueInfo, name string) store.QueueInfo {
	t.Helper()
	for _, q := range list {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("queue %s is not listed", name)
	return store.QueueInfo{}
}

func runInspect(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("FiguresFollowPopsAndAcks", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "q", "p1", 4)
		PushAt(t, s, At(time.Second), "q", "p2", 2)
		// g leases three messages of p1 and commits the first.
		m, lease := popGroup(t, s, "q", "p1", "g", At(2*time.Second), false)
		if len(m) != 4 {
			t.Fatalf("pop of p1: %d messages", len(m))
		}
		wantVerdict(t, "g commits all four", Ack(t, s, At(3*time.Second), AckOf(m[3], "g", lease,
			store.AckCompleted))[0], vReleased)
		p := PopParams("q", "g2", At(2*time.Second))
		p.Partition, p.Batch = "p1", 3
		m = Pop(t, s, p)
		wantVerdict(t, "g2 commits the first of three", Ack(t, s, At(3*time.Second), AckOf(m[0], "g2", p.LeaseID,
			store.AckCompleted))[0], vOK)
		// h reads p2 with autoAck.
		popGroup(t, s, "q", "p2", "h", At(3*time.Second), true)

		now := At(4 * time.Second)
		d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: now})
		if err != nil {
			t.Fatalf("QueueGet: %v", err)
		}
		if len(d.Partitions) != 2 || d.Partitions[0].Name != "p1" || d.Partitions[1].Name != "p2" {
			t.Fatalf("partitions %+v, want p1 and p2 by name", d.Partitions)
		}
		// p1: g read 4 of 4; g2 read 1 and leases 2 (pending 1); h read
		// none (pending 4).
		wantCounts(t, "p1", d.Partitions[0].Messages, store.MessageCounts{Total: 4, Pending: 4, Processing: 2,
			Completed: 4})
		// p2: h read 2; g and g2 none.
		wantCounts(t, "p2", d.Partitions[1].Messages, store.MessageCounts{Total: 2, Pending: 2, Completed: 2})
		wantCounts(t, "queue totals", d.Queue.Messages, store.MessageCounts{Total: 6, Pending: 6, Processing: 2,
			Completed: 6})
		if d.Queue.Partitions != 2 || d.Queue.Name != "q" || d.Queue.ID == "" {
			t.Errorf("queue %+v", d.Queue)
		}
		p1 := d.Partitions[0]
		if !p1.OldestMessage.Equal(T0) || !p1.NewestMessage.Equal(T0) || !d.Partitions[1].OldestMessage.Equal(At(time.Second)) {
			t.Errorf("oldest/newest: p1 %v/%v p2 %v", p1.OldestMessage, p1.NewestMessage, d.Partitions[1].OldestMessage)
		}
		if p1.LastActivity.Before(At(2*time.Second)) || p1.ID == "" || !p1.CreatedAt.Equal(T0) || p1.Queue != "q" {
			t.Errorf("p1: %+v", p1)
		}
		l, err := s.QueueList(ctx, &store.QueueListParams{Now: now})
		if err != nil {
			t.Fatalf("QueueList: %v", err)
		}
		wantCounts(t, "listed queue", queueByName(t, l.Queues, "q").Messages, store.MessageCounts{Total: 6,
			Pending: 6, Processing: 2, Completed: 6})
		// Once the lease has expired, nothing is processing.
		d, _ = s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: At(time.Hour)})
		wantCounts(t, "after the lease expired", d.Queue.Messages, store.MessageCounts{Total: 6, Pending: 6,
			Completed: 6})
	})

	t.Run("DeadLettersAndUnreadQueues", func(t *testing.T) {
		s := setup(t, newStore)
		PushAt(t, s, T0, "unread", "p", 3)
		PushAt(t, s, T0, "dl", "p", 2)
		m, lease := popAll(t, s, "dl", "p", "g", T0)
		Ack(t, s, T0, AckOf(m[0], "g", lease, store.AckDLQ))
		d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "dl", Now: At(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		wantCounts(t, "dl", d.Queue.Messages, store.MessageCounts{Total: 2, Pending: 1, Completed: 1, DeadLetter: 1})
		wantCounts(t, "dl/p", d.Partitions[0].Messages, d.Queue.Messages)
		// No group has read "unread": everything is pending.
		d, _ = s.QueueGet(ctx, &store.QueueGetParams{Name: "unread", Now: At(time.Second)})
		wantCounts(t, "unread", d.Queue.Messages, store.MessageCounts{Total: 3, Pending: 3})
	})

	t.Run("QueueListDeadLettersAndOldestUnread", func(t *testing.T) {
		s := setup(t, newStore)
		// read: g has read p1 (T0) and leases p2's first (1 s): the oldest
		// g has still to read is p2's first; h dead-letters p1's first.
		PushAt(t, s, T0, "read", "p1", 2)
		PushAt(t, s, At(time.Second), "read", "p2", 2)
		popGroup(t, s, "read", "p1", "g", At(2*time.Second), true)
		p := PopParams("read", "g", At(2*time.Second))
		p.Partition = "p2"
		if m := Pop(t, s, p); len(m) != 1 {
			t.Fatalf("lease of p2: %d messages", len(m))
		}
		hp := PopParams("read", "h", At(3*time.Second))
		hp.Partition = "p1"
		m := Pop(t, s, hp)
		wantVerdict(t, "h dead-letters", Ack(t, s, At(3*time.Second), AckOf(m[0], "h", hp.LeaseID, store.AckDLQ))[0], vDLQ)
		// h has still to read p1's second (T0) and all of p2 (1 s).
		// done: queue mode read everything; unread: nobody reads it;
		// empty: configured, no message.
		PushAt(t, s, At(4*time.Second), "done", "p", 2)
		popGroup(t, s, "done", "p", store.QueueMode, At(5*time.Second), true)
		PushAt(t, s, At(6*time.Second), "unread", "p", 2)
		Configure(t, s, "empty", store.DefaultQueueOptions())

		l, err := s.QueueList(ctx, &store.QueueListParams{Now: At(10 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			queue  string
			dead   int64
			oldest time.Time
		}{{"read", 1, T0}, {"done", 0, time.Time{}}, {"unread", 0, At(6 * time.Second)}, {"empty", 0, time.Time{}}} {
			q := queueByName(t, l.Queues, c.queue)
			if q.Messages.DeadLetter != c.dead || !q.OldestUnread.Equal(c.oldest) {
				t.Errorf("%s: dead letters %d, oldest unread %v; want %d, %v", c.queue, q.Messages.DeadLetter,
					q.OldestUnread, c.dead, c.oldest)
			}
		}
		// Once h has read p1, the oldest unread is p2's first.
		hp = PopParams("read", "h", At(7*time.Second))
		hp.Partition, hp.AutoAck = "p1", true
		Pop(t, s, hp)
		l, _ = s.QueueList(ctx, &store.QueueListParams{Now: At(10 * time.Second)})
		if q := queueByName(t, l.Queues, "read"); !q.OldestUnread.Equal(At(time.Second)) {
			t.Errorf("read after h caught up on p1: oldest unread %v, want %v", q.OldestUnread, At(time.Second))
		}
		// The list agrees with the queue gauges.
		g, err := s.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: At(10 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for _, gq := range g.Queues {
			q := queueByName(t, l.Queues, gq.Queue)
			if q.Messages.DeadLetter != gq.DeadLetter || !q.OldestUnread.Equal(gq.OldestUnread) {
				t.Errorf("%s: list %d %v, gauges %d %v", gq.Queue, q.Messages.DeadLetter, q.OldestUnread,
					gq.DeadLetter, gq.OldestUnread)
			}
		}
	})

	t.Run("QueueListPagesNewestFirst", func(t *testing.T) {
		s := setup(t, newStore)
		for i, name := range []string{"old", "mid", "new"} {
			it := Item(name, "p", i)
			it.Namespace, it.Task = "shop", []string{"bill", "ship", "bill"}[i]
			PushItems(t, s, At(time.Duration(i)*time.Minute), it)
		}
		PushItems(t, s, At(time.Hour), Item("plain", "p", 0))
		list := func(p store.QueueListParams) []string {
			t.Helper()
			p.Now = At(2 * time.Hour)
			res, err := s.QueueList(ctx, &p)
			if err != nil {
				t.Fatalf("QueueList(%+v): %v", p, err)
			}
			var names []string
			for _, q := range res.Queues {
				names = append(names, q.Name)
			}
			return append(names, "total="+itoa(res.Total))
		}
		for _, tc := range []struct {
			p    store.QueueListParams
			want []string
		}{
			{store.QueueListParams{}, []string{"plain", "new", "mid", "old", "total=4"}},
			{store.QueueListParams{Limit: 2}, []string{"plain", "new", "total=4"}},
			{store.QueueListParams{Limit: 2, Offset: 2}, []string{"mid", "old", "total=4"}},
			{store.QueueListParams{Offset: 9}, []string{"total=4"}},
			{store.QueueListParams{Namespace: "shop"}, []string{"new", "mid", "old", "total=3"}},
			{store.QueueListParams{Namespace: "shop", Task: "bill"}, []string{"new", "old", "total=2"}},
			{store.QueueListParams{Task: "none"}, []string{"total=0"}},
		} {
			if got := list(tc.p); !equalStrings(got, tc.want) {
				t.Errorf("QueueList(%+v): %v, want %v", tc.p, got, tc.want)
			}
		}
		res, _ := s.QueueList(ctx, &store.QueueListParams{Limit: 1, Now: At(2 * time.Hour)})
		q := res.Queues[0]
		if !q.CreatedAt.Equal(At(time.Hour)) || q.Partitions != 1 || q.Namespace != "" || q.ID == "" {
			t.Errorf("listed queue %+v", q)
		}
	})

	t.Run("QueueGetPagesPartitions", func(t *testing.T) {
		s := setup(t, newStore)
		_, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: T0})
		wantNotFound(t, "QueueGet of a missing queue", err, store.ErrQueueNotFound)
		for _, p := range []string{"c", "a", "b"} {
			PushAt(t, s, T0, "q", p, 1)
		}
		d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: T0, Limit: 2, Offset: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Partitions) != 2 || d.Partitions[0].Name != "b" || d.Partitions[1].Name != "c" {
			t.Fatalf("page 2 of 2: %+v, want b c", d.Partitions)
		}
		if d.Queue.Partitions != 3 || d.Queue.Messages.Total != 3 {
			t.Errorf("the queue's figures count every partition: %+v", d.Queue)
		}
		// A configured queue without messages.
		Configure(t, s, "empty", store.DefaultQueueOptions())
		d, err = s.QueueGet(ctx, &store.QueueGetParams{Name: "empty", Now: T0})
		if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Name != store.DefaultPartition {
			t.Fatalf("empty queue: %+v %v", d, err)
		}
		if p := d.Partitions[0]; !p.OldestMessage.IsZero() || !p.NewestMessage.IsZero() || p.Messages.Total != 0 {
			t.Errorf("partition without messages: %+v", p)
		}
	})

	t.Run("PartitionList", func(t *testing.T) {
		s := setup(t, newStore)
		_, err := s.PartitionList(ctx, &store.PartitionListParams{Queue: "q", Now: T0})
		wantNotFound(t, "PartitionList of a missing queue", err, store.ErrQueueNotFound)
		PushAt(t, s, T0, "b", "x", 2)
		PushAt(t, s, T0, "a", "z", 1)
		PushAt(t, s, T0, "a", "y", 1)
		names := func(p store.PartitionListParams) []string {
			t.Helper()
			p.Now = At(time.Second)
			res, err := s.PartitionList(ctx, &p)
			if err != nil {
				t.Fatalf("PartitionList(%+v): %v", p, err)
			}
			var out []string
			for _, pi := range res.Partitions {
				out = append(out, pi.Queue+"/"+pi.Name)
			}
			return append(out, "total="+itoa(res.Total))
		}
		for _, tc := range []struct {
			p    store.PartitionListParams
			want []string
		}{
			{store.PartitionListParams{}, []string{"a/y", "a/z", "b/x", "total=3"}},
			{store.PartitionListParams{Limit: 1, Offset: 1}, []string{"a/z", "total=3"}},
			{store.PartitionListParams{Queue: "a"}, []string{"a/y", "a/z", "total=2"}},
			{store.PartitionListParams{Queue: "a", Offset: 1}, []string{"a/z", "total=2"}},
		} {
			if got := names(tc.p); !equalStrings(got, tc.want) {
				t.Errorf("PartitionList(%+v): %v, want %v", tc.p, got, tc.want)
			}
		}
		res, _ := s.PartitionList(ctx, &store.PartitionListParams{Queue: "b", Now: T0})
		wantCounts(t, "b/x", res.Partitions[0].Messages, store.MessageCounts{Total: 2, Pending: 2})
	})

	t.Run("RollupByNamespaceAndTask", func(t *testing.T) {
		s := setup(t, newStore)
		for _, q := range []struct{ name, ns, task string }{
			{"a", "shop", "bill"}, {"b", "shop", "ship"}, {"c", "", "bill"}, {"d", "ops", ""},
		} {
			it := Item(q.name, "p", 0)
			it.Namespace, it.Task = q.ns, q.task
			PushItems(t, s, T0, it, Item(q.name, "p2", 1))
		}
		roll := func(by store.RollupKey, limit, offset int) ([]store.QueueRollup, int) {
			t.Helper()
			res, err := s.QueueRollup(ctx, &store.QueueRollupParams{By: by, Limit: limit, Offset: offset, Now: T0})
			if err != nil {
				t.Fatalf("QueueRollup: %v", err)
			}
			return res.Rollups, res.Total
		}
		rs, total := roll(store.RollupNamespace, 0, 0)
		if total != 2 || len(rs) != 2 || rs[0].Key != "ops" || rs[1].Key != "shop" {
			t.Fatalf("namespaces %+v total %d, want ops and shop", rs, total)
		}
		if r := rs[1]; r.Queues != 2 || r.Partitions != 4 || r.Messages.Total != 4 || r.Messages.Pending != 4 {
			t.Errorf("namespace shop: %+v", r)
		}
		rs, total = roll(store.RollupTask, 1, 1)
		if total != 2 || len(rs) != 1 || rs[0].Key != "ship" || rs[0].Queues != 1 {
			t.Errorf("page 2 of tasks: %+v total %d, want ship", rs, total)
		}
		rs, _ = roll(store.RollupTask, 0, 0)
		if rs[0].Key != "bill" || rs[0].Queues != 2 {
			t.Errorf("task bill: %+v", rs[0])
		}
	})

	t.Run("Overview", func(t *testing.T) {
		s := setup(t, newStore)
		it := Item("a", "p", 0)
		it.Namespace, it.Task = "shop", "bill"
		PushItems(t, s, T0, it)
		PushAt(t, s, T0, "a", "p2", 2)
		PushAt(t, s, At(time.Minute), "b", "p", 3)
		popGroup(t, s, "a", "p2", "g", At(time.Minute), true) // g joins a: its lane on p is behind
		o, err := s.QueueOverview(ctx, &store.QueueOverviewParams{Now: At(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if o.Queues != 2 || o.Partitions != 3 || o.Namespaces != 1 || o.Tasks != 1 {
			t.Errorf("overview counts %+v", o)
		}
		wantCounts(t, "overview", o.Messages, store.MessageCounts{Total: 6, Pending: 4, Completed: 2})
		if len(o.Lags) != 1 || o.Lags[0].Messages != 1 || !o.Lags[0].OldestUnread.Equal(T0) {
			t.Errorf("lags %+v, want g's lane on a/p: 1 message since T0", o.Lags)
		}
	})

	t.Run("Clear", func(t *testing.T) {
		s := setup(t, newStore)
		_, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Now: T0})
		wantNotFound(t, "QueueClear of a missing queue", err, store.ErrQueueNotFound)
		res, err := s.QueueClearPurge(ctx, &store.QueuePurgeParams{Limit: 10, Now: T0})
		if err != nil || res.Deleted != 0 || res.More {
			t.Fatalf("QueueClearPurge with nothing cleared: %+v %v", res, err)
		}
		p1 := PushAt(t, s, T0, "q", "p1", 3)
		PushAt(t, s, T0, "q", "p2", 2)
		_, err = s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Partition: "nope", Now: T0})
		wantNotFound(t, "QueueClear of a missing partition", err, store.ErrPartitionNotFound)
		m, lease := popAll(t, s, "q", "p1", "g", T0)
		m2, lease2 := popAll(t, s, "q", "p2", "g", T0)
		Ack(t, s, T0, AckOf(m2[0], "g", lease2, store.AckDLQ)) // a dead letter in p2

		c, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Partition: "p1", Now: At(time.Second)})
		if err != nil || c.Messages != 3 || c.Partitions != 1 {
			t.Fatalf("clear p1: %+v %v, want 3 messages in 1 partition", c, err)
		}
		// Unreachable at once, the lease gone with them.
		got, _ := popAll(t, s, "q", "p1", "g", At(2*time.Second))
		wantEmpty(t, "pop of a cleared partition", got)
		// The cursor is past the cleared messages: an ack under the dropped
		// lease changes nothing and says the message is behind the cursor.
		wantVerdict(t, "ack under the lease the clear dropped", Ack(t, s, At(2*time.Second),
			AckOf(m[0], "g", lease, store.AckCompleted))[0], vCommitted)
		d, _ := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: At(2 * time.Second)})
		wantCounts(t, "p1 after its clear", d.Partitions[0].Messages, store.MessageCounts{})
		wantCounts(t, "p2 untouched", d.Partitions[1].Messages, store.MessageCounts{Total: 2, Pending: 1, Completed: 1,
			DeadLetter: 1})
		if !d.Partitions[0].OldestMessage.IsZero() || !d.Partitions[0].NewestMessage.IsZero() {
			t.Errorf("a cleared partition has messages: %+v", d.Partitions[0])
		}
		// A group joining now reads from the beginning: after the clear.
		got, _ = popAll(t, s, "q", "p1", "z", At(2*time.Second))
		wantEmpty(t, "a new group on the cleared partition", got)
		// A new message is delivered as usual.
		fresh := PushAt(t, s, At(3*time.Second), "q", "p1", 1)
		got, _ = popAll(t, s, "q", "p1", "g", At(3*time.Second))
		wantIDs(t, "pop after the clear", got, fresh...)
		got, zl := popAll(t, s, "q", "p1", "z", At(3*time.Second))
		wantIDs(t, "the new group after the clear", got, fresh...)
		ackAll(t, s, At(3*time.Second), "z", zl, got)
		// An ack of a cleared message by a group that never read the
		// partition creates its lane after the clear: nothing moves back.
		Ack(t, s, At(3*time.Second), AckOf(m[1], "y", "", store.AckCompleted))
		got, _ = popAll(t, s, "q", "p1", "y", At(3*time.Second))
		wantIDs(t, "a group whose first ack was of a cleared message", got, fresh...)

		c, err = s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Now: At(4 * time.Second)})
		if err != nil || c.Messages != 3 || c.Partitions != 2 {
			t.Fatalf("clear q: %+v %v, want 3 messages in 2 partitions", c, err)
		}
		// The newest messages of the store are among the cleared: they go
		// too, and new ones still come after every cursor.
		total := 0
		for steps, more := 0, true; more; steps++ {
			if steps > 50 {
				t.Fatal("QueueClearPurge never finished")
			}
			res, err := s.QueueClearPurge(ctx, &store.QueuePurgeParams{Limit: 2, Now: At(5 * time.Second)})
			if err != nil || res.Deleted > 2 {
				t.Fatalf("QueueClearPurge: %+v %v", res, err)
			}
			total, more = total+res.Deleted, res.More
		}
		if total != 7 { // 6 messages and a dead letter
			t.Errorf("purged %d rows, want 7", total)
		}
		// The cleared transactionIds are free again.
		again := p1[0]
		again.MessageID = NewID()
		PushItems(t, s, At(6*time.Second), again)
		got, _ = popAll(t, s, "q", "p1", "g", At(6*time.Second))
		wantIDs(t, "a cleared transactionId pushed again", got, again)
		next := PushAt(t, s, At(6*time.Second), "q", "p2", 1)
		got, _ = popAll(t, s, "q", "p2", "g", At(6*time.Second))
		wantIDs(t, "a new message after the purge", got, next...)
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
