package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// pushed is a message pushed by the control plane's tests, with its
// partitionId.
type pushed struct {
	store.PushItem
	PartitionID string
}

func (p pushed) ref() store.MessageRef {
	return store.MessageRef{PartitionID: p.PartitionID, TransactionID: p.TransactionID}
}

// pushOne pushes one message {"n":n} to queue/partition at now.
func pushOne(t testing.TB, s store.Store, now time.Time, queue, partition string, n int) pushed {
	t.Helper()
	it := Item(queue, partition, n)
	res := PushItems(t, s, now, it)
	return pushed{PushItem: it, PartitionID: res[0].PartitionID}
}

// pushSeries pushes n messages to queue/partition one second apart from
// start, so that createdAt orders them.
func pushSeries(t testing.TB, s store.Store, start time.Time, queue, partition string, n int) []pushed {
	t.Helper()
	out := make([]pushed, n)
	for i := range out {
		out[i] = pushOne(t, s, start.Add(time.Duration(i)*time.Second), queue, partition, i)
	}
	return out
}

// window is a listing of the hour around T0 as seen at now.
func window(now time.Time) *store.MessageListParams {
	return &store.MessageListParams{From: T0.Add(-time.Hour), To: T0.Add(time.Hour), Now: now, Limit: 1000}
}

// list runs a listing and fails the test on an error.
func list(t testing.TB, s store.Store, p *store.MessageListParams) *store.MessageListResult {
	t.Helper()
	res, err := s.MessageList(context.Background(), p)
	if err != nil {
		t.Fatalf("MessageList: %v", err)
	}
	if res.Messages == nil {
		t.Fatal("MessageList returned nil Messages; want an empty list")
	}
	return res
}

// queueModeList lists as the status view does: every creation time, each
// message judged by queue mode's lane alone.
func queueModeList(t testing.TB, s store.Store, p *store.MessageListParams) []store.ListedMessage {
	t.Helper()
	p.Group, p.From, p.To = store.QueueMode, time.UnixMilli(0), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	return list(t, s, p).Messages
}

// listedTxns lists the transactionIds of a listing, in order.
func listedTxns(res *store.MessageListResult) []string {
	out := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// txnsOf lists the transactionIds of pushed messages in reverse (the order
// of a listing, newest first).
func txnsOf(ps ...pushed) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[len(ps)-1-i] = p.TransactionID
	}
	return out
}

func wantTxns(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got transactionIds %v, want %v", what, got, want)
	}
}

// statuses maps transactionId to status.
func statuses(res *store.MessageListResult) map[string]store.MessageStatus {
	out := make(map[string]store.MessageStatus, len(res.Messages))
	for _, m := range res.Messages {
		out[m.TransactionID] = m.Status
	}
	return out
}

func runMessages(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("ListNewestFirstWithStatus", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "orders", "p", 3)
		now := At(10 * time.Second)
		p := PopParams("orders", store.QueueMode, now)
		p.Batch = 2
		got := Pop(t, s, p)
		if len(got) != 2 {
			t.Fatalf("pop: %d messages, want 2", len(got))
		}
		Ack(t, s, now, AckOf(got[0], store.QueueMode, p.LeaseID, store.AckCompleted))
		res := list(t, s, window(now))
		wantTxns(t, "listing", listedTxns(res), txnsOf(ms...))
		want := []store.MessageStatus{store.StatusPending, store.StatusProcessing, store.StatusCompleted}
		for i, m := range res.Messages {
			if m.Status != want[i] {
				t.Errorf("message %d (%s): status %q, want %q", i, m.TransactionID, m.Status, want[i])
			}
			if m.Queue != "orders" || m.Partition != "p" || m.PartitionID != ms[0].PartitionID {
				t.Errorf("message %d: queue %q partition %q/%s", i, m.Queue, m.Partition, m.PartitionID)
			}
		}
		m := res.Messages[1]
		if m.LeaseExpiresAt == nil || !m.LeaseExpiresAt.Equal(now.Add(300*time.Second)) {
			t.Errorf("leased message: LeaseExpiresAt %v, want %v", m.LeaseExpiresAt, now.Add(300*time.Second))
		}
		if res.Messages[0].LeaseExpiresAt != nil || res.Messages[2].LeaseExpiresAt != nil {
			t.Error("a message no lease holds has a LeaseExpiresAt")
		}
		if m.ID != ms[1].MessageID || !m.CreatedAt.Equal(At(time.Second)) {
			t.Errorf("message 1: id %s createdAt %v, want %s %v", m.ID, m.CreatedAt, ms[1].MessageID, At(time.Second))
		}
		if res.Mode != (store.QueueModeSummary{HasQueueMode: true}) || res.Mode.Type() != "queue" {
			t.Errorf("mode %+v (%s), want queue mode only", res.Mode, res.Mode.Type())
		}
		// The lease expires: nothing is processing any more.
		later := window(At(time.Hour))
		if got := statuses(list(t, s, later)); got[ms[1].TransactionID] != store.StatusPending {
			t.Errorf("after the lease expired: %v", got)
		}
	})

	t.Run("BusStatusTwoGroups", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "events", "p", 4)
		now := At(10 * time.Second)
		// g1 commits three messages, g2 one.
		for g, n := range map[string]int{"g1": 3, "g2": 1} {
			p := PopParams("events", g, now)
			p.Batch = n
			got := Pop(t, s, p)
			Ack(t, s, now, AckOf(got[n-1], g, p.LeaseID, store.AckCompleted))
		}
		res := list(t, s, window(now))
		wantTxns(t, "listing", listedTxns(res), txnsOf(ms...))
		wantBy := []int{0, 1, 1, 2} // newest first
		for i, m := range res.Messages {
			if m.ConsumedBy != wantBy[i] || m.TotalGroups != 2 {
				t.Errorf("message %d: consumedBy %d of %d, want %d of 2", i, m.ConsumedBy, m.TotalGroups, wantBy[i])
			}
			want := store.StatusPending
			if wantBy[i] == 2 {
				want = store.StatusCompleted
			}
			if m.Status != want {
				t.Errorf("message %d: status %q, want %q", i, m.Status, want)
			}
		}
		if res.Mode != (store.QueueModeSummary{BusGroups: 2}) || res.Mode.Type() != "bus" {
			t.Errorf("mode %+v (%s), want two bus groups", res.Mode, res.Mode.Type())
		}
		d, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: ms[1].ref(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.GroupStanding{{Name: "g1", Consumed: true}, {Name: "g2", Consumed: false}}
		if !slices.EqualFunc(d.Groups, want, func(a, b store.GroupStanding) bool {
			return a.Name == b.Name && a.Consumed == b.Consumed && a.LeaseExpiresAt == nil
		}) || d.ConsumedBy != 1 || d.TotalGroups != 2 || d.HasQueueMode {
			t.Errorf("MessageGet: groups %+v consumedBy %d/%d queue mode %v, want %+v 1/2 false",
				d.Groups, d.ConsumedBy, d.TotalGroups, d.HasQueueMode, want)
		}
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "shop.orders", store.DefaultQueueOptions())
		if _, err := s.QueueConfigure(ctx, &store.QueueConfigureParams{Name: "shop.mail", Namespace: "shop",
			Task: "mail", Options: store.DefaultQueueOptions(), Now: T0}); err != nil {
			t.Fatal(err)
		}
		var all []pushed
		for i := range 6 {
			queue, part := "shop.orders", fmt.Sprint("p", i%2)
			if i%3 == 2 {
				queue = "shop.mail"
			}
			all = append(all, pushOne(t, s, At(time.Duration(i)*time.Second), queue, part, i))
		}
		sel := func(keep func(p pushed) bool) []string {
			var out []pushed
			for _, p := range all {
				if keep(p) {
					out = append(out, p)
				}
			}
			return txnsOf(out...)
		}
		now := At(time.Minute)
		p := window(now)
		wantTxns(t, "everything", listedTxns(list(t, s, p)), sel(func(pushed) bool { return true }))
		p = window(now)
		p.Queue = "shop.orders"
		wantTxns(t, "queue", listedTxns(list(t, s, p)), sel(func(x pushed) bool { return x.Queue == "shop.orders" }))
		p.Partition = "p1"
		wantTxns(t, "queue and partition", listedTxns(list(t, s, p)),
			sel(func(x pushed) bool { return x.Queue == "shop.orders" && x.Partition == "p1" }))
		p = window(now)
		p.Partition = "p0"
		wantTxns(t, "partition of every queue", listedTxns(list(t, s, p)),
			sel(func(x pushed) bool { return x.Partition == "p0" }))
		p = window(now)
		p.Namespace, p.Task = "shop", "mail"
		wantTxns(t, "namespace and task", listedTxns(list(t, s, p)),
			sel(func(x pushed) bool { return x.Queue == "shop.mail" }))
		p = window(now)
		p.From, p.To = At(time.Second), At(4*time.Second)
		wantTxns(t, "window [1s, 4s)", listedTxns(list(t, s, p)), txnsOf(all[1:4]...))
		p = window(now)
		p.Queue, p.Partition, p.From, p.To = "shop.orders", "p1", At(2*time.Second), At(4*time.Second)
		wantTxns(t, "window of one partition", listedTxns(list(t, s, p)), txnsOf(all[3]))

		// Pages of two follow each other without gaps or repeats, in both
		// plans (the whole tenant, one partition).
		for _, one := range []bool{false, true} {
			var got []string
			for off := 0; ; off += 2 {
				p := window(now)
				if one {
					p.Queue, p.Partition = "shop.orders", "p0"
				}
				p.Limit, p.Offset = 2, off
				page := listedTxns(list(t, s, p))
				got = append(got, page...)
				if len(page) < 2 {
					break
				}
			}
			want := sel(func(pushed) bool { return true })
			if one {
				want = sel(func(x pushed) bool { return x.Queue == "shop.orders" && x.Partition == "p0" })
			}
			wantTxns(t, fmt.Sprintf("pages of 2 (one partition: %v)", one), got, want)
		}

		// Unknown names select nothing.
		p = window(now)
		p.Queue, p.Partition = "shop.orders", "nope"
		if n := len(list(t, s, p).Messages); n != 0 {
			t.Errorf("unknown partition: %d messages", n)
		}
		p = window(now)
		p.Queue = "nope"
		res := list(t, s, p)
		if len(res.Messages) != 0 || res.Mode.Type() != "none" {
			t.Errorf("unknown queue: %d messages, mode %s", len(res.Messages), res.Mode.Type())
		}
	})

	t.Run("ListStatusFilter", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "q", "p", 6)
		now := At(10 * time.Second)
		p := PopParams("q", store.QueueMode, now)
		p.Batch = 4
		got := Pop(t, s, p)
		Ack(t, s, now, AckOf(got[1], store.QueueMode, p.LeaseID, store.AckCompleted)) // 0 and 1 completed
		deadLetter(t, s, ms[5], "audit", now)                                         // 5 dead for another group
		deadLetter(t, s, ms[0], "audit", now)                                         // and 0
		for _, tc := range []struct {
			status store.MessageStatus
			want   []pushed
		}{
			{store.StatusCompleted, ms[1:2]},
			{store.StatusProcessing, ms[2:4]},
			{store.StatusPending, ms[4:5]},
			{store.StatusDeadLetter, []pushed{ms[0], ms[5]}},
		} {
			p := window(now)
			p.Status = tc.status
			wantTxns(t, string(tc.status), listedTxns(list(t, s, p)), txnsOf(tc.want...))
			p.Limit, p.Offset = 1, 1
			page := listedTxns(list(t, s, p))
			if len(tc.want) >= 2 {
				wantTxns(t, string(tc.status)+" second of pages of 1", page, txnsOf(tc.want...)[1:2])
			} else if len(page) != 0 {
				t.Errorf("%s offset 1: %v", tc.status, page)
			}
		}
	})

	t.Run("GetDetail", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit, o.Priority = 1, 7 }))
		it := Item("q", "p", 1)
		it.TraceID, it.ProducerSub = "trace-1", "alice"
		res := PushItems(t, s, T0, it)
		ref := store.MessageRef{PartitionID: res[0].PartitionID, TransactionID: it.TransactionID}
		now := At(time.Second)
		p := PopParams("q", store.QueueMode, now)
		got := Pop(t, s, p)
		Ack(t, s, now, AckOf(got[0], store.QueueMode, p.LeaseID, store.AckFailed))

		d, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: ref, Now: now})
		if err != nil {
			t.Fatalf("MessageGet: %v", err)
		}
		if !jsonEqual(d.Payload, it.Payload) || d.ID != it.MessageID || d.TraceID != "trace-1" ||
			d.ProducerSub != "alice" || d.Queue != "q" || d.Partition != "p" || d.QueuePriority != 7 ||
			d.Options.RetryLimit != 1 || d.Status != store.StatusPending || d.RetryCount != 1 || d.ErrorMessage != "" {
			t.Errorf("after one failure: %+v", d)
		}
		if !d.HasQueueMode || len(d.Groups) != 1 || d.Groups[0].Name != store.QueueMode || d.Groups[0].Consumed {
			t.Errorf("groups after one failure: %+v", d.Groups)
		}
		p = PopParams("q", store.QueueMode, At(2*time.Second))
		got = Pop(t, s, p)
		d, _ = s.MessageGet(ctx, &store.MessageGetParams{MessageRef: ref, Now: At(2 * time.Second)})
		if d.Status != store.StatusProcessing || d.Groups[0].LeaseExpiresAt == nil {
			t.Errorf("while leased: status %s groups %+v", d.Status, d.Groups)
		}
		fail := AckOf(got[0], store.QueueMode, p.LeaseID, store.AckFailed)
		fail.Error = "boom"
		Ack(t, s, At(2*time.Second), fail)
		d, _ = s.MessageGet(ctx, &store.MessageGetParams{MessageRef: ref, Now: At(3 * time.Second)})
		if d.Status != store.StatusDeadLetter || d.ErrorMessage != "boom" || d.RetryCount != 2 || !d.Groups[0].Consumed {
			t.Errorf("dead-lettered: status %s error %q retryCount %d groups %+v", d.Status, d.ErrorMessage,
				d.RetryCount, d.Groups)
		}

		for _, bad := range []store.MessageRef{
			{PartitionID: ref.PartitionID, TransactionID: "nope"},
			{PartitionID: NewID(), TransactionID: ref.TransactionID},
		} {
			if _, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: bad, Now: now}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("MessageGet(%+v): %v, want ErrNotFound", bad, err)
			}
		}
	})

	t.Run("DeleteMessage", func(t *testing.T) {
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "q", "p", 3)
		del := func(ref store.MessageRef) bool {
			t.Helper()
			ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ref, Now: At(time.Minute)})
			if err != nil {
				t.Fatalf("MessageDelete: %v", err)
			}
			return ok
		}
		if !del(ms[1].ref()) {
			t.Fatal("MessageDelete of a message: false")
		}
		if del(ms[1].ref()) {
			t.Error("second MessageDelete: true")
		}
		if _, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: ms[1].ref(), Now: At(time.Minute)}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MessageGet of a deleted message: %v", err)
		}
		wantTxns(t, "listing after delete", listedTxns(list(t, s, window(At(time.Minute)))), txnsOf(ms[0], ms[2]))
		p := PopParams("q", store.QueueMode, At(time.Minute))
		p.Batch = 10
		wantIDs(t, "pop after delete", Pop(t, s, p), ms[0].PushItem, ms[2].PushItem)
	})

	t.Run("DeleteHeadSkipsIt", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit, o.DelayedProcessing = 5, 1 }))
		ms := pushSeries(t, s, T0, "q", "p", 3)
		// The head fails once: its lane counts an attempt, then it is
		// deleted; the next message is delivered, with its own budget.
		p := PopParams("q", store.QueueMode, At(time.Minute))
		got := Pop(t, s, p)
		wantIDs(t, "first pop", got, ms[0].PushItem)
		Ack(t, s, At(time.Minute), AckOf(got[0], store.QueueMode, p.LeaseID, store.AckFailed))
		if _, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ms[0].ref(), Now: At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		d, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: ms[1].ref(), Now: At(time.Minute)})
		if err != nil || d.RetryCount != 0 {
			t.Fatalf("the new head: %+v %v, want no attempts", d, err)
		}
		// A message deleted further on leaves a gap the lane reaches later.
		if _, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ms[2].ref(), Now: At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		more := pushOne(t, s, At(time.Minute), "q", "p", 9)
		p = PopParams("q", store.QueueMode, At(2*time.Minute))
		got = Pop(t, s, p)
		wantIDs(t, "pop after deleting the head", got, ms[1].PushItem)
		Ack(t, s, At(2*time.Minute), AckOf(got[0], store.QueueMode, p.LeaseID, store.AckCompleted))
		p = PopParams("q", store.QueueMode, At(3*time.Minute))
		wantIDs(t, "pop over the gap", Pop(t, s, p), more.PushItem)
	})

	t.Run("DeleteNewestThenPush", func(t *testing.T) {
		s := setup(t, newStore)
		m := pushOne(t, s, T0, "q", "p", 0)
		p := PopParams("q", store.QueueMode, At(time.Second))
		p.AutoAck = true
		wantIDs(t, "pop", Pop(t, s, p), m.PushItem)
		if _, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: m.ref(), Now: At(time.Second)}); err != nil {
			t.Fatal(err)
		}
		// The next message must not reuse the deleted one's offset, which
		// the lane's cursor already passed.
		next := pushOne(t, s, At(2*time.Second), "q", "p", 1)
		p = PopParams("q", store.QueueMode, At(3*time.Second))
		wantIDs(t, "pop after deleting the newest message", Pop(t, s, p), next.PushItem)
	})

	t.Run("DeadLetterByHand", func(t *testing.T) {
		s := setup(t, newStore)
		m := pushOne(t, s, T0, "q", "p", 0)
		mk := func(group string) error {
			return s.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: m.ref(), ConsumerGroup: group,
				Now: At(time.Second)})
		}
		if err := mk(""); err != nil {
			t.Fatalf("MessageDeadLetter: %v", err)
		}
		if err := mk(""); !errors.Is(err, store.ErrAlreadyDeadLettered) {
			t.Errorf("second MessageDeadLetter: %v, want ErrAlreadyDeadLettered", err)
		}
		if err := mk("g"); err != nil {
			t.Errorf("MessageDeadLetter for another group: %v", err)
		}
		err := s.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{Now: At(time.Second),
			MessageRef: store.MessageRef{PartitionID: m.PartitionID, TransactionID: "nope"}})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MessageDeadLetter of an unknown message: %v", err)
		}
		dl := dlqList(t, s, &store.DLQListParams{})
		if len(dl) != 2 || dl[0].Error != store.ManualDLQError || dl[0].TransactionID != m.TransactionID {
			t.Fatalf("DLQ after two manual dead letters: %+v", dl)
		}
		if got := statuses(list(t, s, window(At(time.Second)))); got[m.TransactionID] != store.StatusDeadLetter {
			t.Errorf("status: %v", got)
		}
		// Cursors do not move: queue mode still receives it.
		wantIDs(t, "pop", Pop(t, s, PopParams("q", store.QueueMode, At(2*time.Second))), m.PushItem)
	})

	t.Run("ClearedAreUnreachable", func(t *testing.T) {
		// A clear makes its messages unreachable at once; their rows are
		// freed later. Until then no read may find them.
		s := setup(t, newStore)
		ms := pushSeries(t, s, T0, "q", "p", 3)
		got, lease := popAll(t, s, "q", "p", "g", At(5*time.Second))
		Ack(t, s, At(5*time.Second), AckOf(got[0], "g", lease, store.AckDLQ))
		trace(t, s, ms[1], At(5*time.Second), `{"step":1}`, "cleared-name")
		now := At(10 * time.Second)
		if _, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "q", Now: now}); err != nil {
			t.Fatal(err)
		}
		if got := listedTxns(list(t, s, window(now))); len(got) != 0 {
			t.Errorf("listing after the clear: %v", got)
		}
		p := window(now)
		p.Status = store.StatusDeadLetter
		if got := listedTxns(list(t, s, p)); len(got) != 0 {
			t.Errorf("dead-letter listing after the clear: %v", got)
		}
		for _, m := range ms {
			if _, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: m.ref(), Now: now}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("MessageGet of a cleared message: %v", err)
			}
			err := s.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: m.ref(), Now: now})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("MessageDeadLetter of a cleared message: %v", err)
			}
			err = s.TraceRecord(ctx, &store.TraceRecordParams{MessageRef: m.ref(), ID: NewID(),
				ConsumerGroup: store.QueueMode, Data: []byte(`{}`), EventType: "info", Now: now})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("TraceRecord of a cleared message: %v", err)
			}
			if _, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: m.ref()}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("TraceList of a cleared message: %v", err)
			}
		}
		if _, err := store.MessageRequeue(ctx, s, &store.MessageRequeueParams{MessageRef: ms[0].ref(), Now: now}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MessageRequeue of a cleared dead letter: %v", err)
		}
		if dl := dlqList(t, s, &store.DLQListParams{}); len(dl) != 0 {
			t.Errorf("DLQ after the clear: %+v", dl)
		}
		res, err := s.DLQRequeue(ctx, &store.DLQRequeueParams{Now: now})
		if err != nil || len(res.Requeued) != 0 {
			t.Errorf("DLQ retry after the clear: %+v %v, want nothing requeued", res, err)
		}
		if ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ms[2].ref(), Now: now}); ok || err != nil {
			t.Errorf("MessageDelete of a cleared message: %v %v, want false", ok, err)
		}
		if qm := queueModeList(t, s, &store.MessageListParams{Queue: "q", Now: now}); len(qm) != 0 {
			t.Errorf("the status view after the clear: %+v", qm)
		}
		// The trace's name still lists it until its rows are freed, but
		// not the cleared message's payload.
		for _, tr := range byName(t, s, &store.TraceListByNameParams{Name: "cleared-name"}).Traces {
			if tr.Payload != nil {
				t.Errorf("trace of a cleared message with its payload %s", tr.Payload)
			}
		}
		// Messages pushed after the clear are read as usual.
		fresh := pushOne(t, s, At(11*time.Second), "q", "p", 9)
		wantTxns(t, "listing of a message pushed after the clear", listedTxns(list(t, s, window(At(12*time.Second)))),
			txnsOf(fresh))
		if _, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: fresh.ref(), Now: At(12 * time.Second)}); err != nil {
			t.Errorf("MessageGet after the clear: %v", err)
		}
	})

	t.Run("RequeueDeadLetter", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 0 }))
		it := Item("q", "p", 0)
		it.TraceID = "trace-1"
		res := PushItems(t, s, T0, it)
		ref := store.MessageRef{PartitionID: res[0].PartitionID, TransactionID: it.TransactionID}
		requeue := func(now time.Time) (*store.Requeued, error) {
			return store.MessageRequeue(ctx, s, &store.MessageRequeueParams{MessageRef: ref, Now: now})
		}
		if _, err := requeue(At(time.Second)); !errors.Is(err, store.ErrNotDeadLettered) {
			t.Errorf("requeue of a live message: %v, want ErrNotDeadLettered", err)
		}
		if _, err := store.MessageRequeue(ctx, s, &store.MessageRequeueParams{Now: T0,
			MessageRef: store.MessageRef{PartitionID: ref.PartitionID, TransactionID: "nope"}}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("requeue of an unknown message: %v, want ErrNotFound", err)
		}
		// Each round dead-letters the message the last round requeued and
		// requeues it: the number counts on from the original's.
		for round := 1; round <= 2; round++ {
			now := At(time.Duration(round) * time.Minute)
			p := PopParams("q", store.QueueMode, now)
			got := Pop(t, s, p)
			if len(got) != 1 || got[0].TransactionID != ref.TransactionID {
				t.Fatalf("round %d: pop got %+v, want %s", round, got, ref.TransactionID)
			}
			Ack(t, s, now, AckOf(got[0], store.QueueMode, p.LeaseID, store.AckFailed))
			wantEmpty(t, "pop after dead-lettering", Pop(t, s, PopParams("q", store.QueueMode, now)))
			r, err := requeue(now)
			if err != nil {
				t.Fatalf("round %d: MessageRequeue: %v", round, err)
			}
			want := fmt.Sprintf("%s:retry:%d", it.TransactionID, round)
			if r.TransactionID != want || r.OriginalTransactionID != ref.TransactionID || r.Queue != "q" ||
				r.PartitionID != ref.PartitionID || r.MessageID == "" || r.MessageID == got[0].ID {
				t.Fatalf("round %d: requeued %+v, want transactionId %s", round, r, want)
			}
			if dl := dlqList(t, s, &store.DLQListParams{}); len(dl) != 0 {
				t.Errorf("round %d: dead letters still listed: %+v", round, dl)
			}
			if _, err := requeue(now); !errors.Is(err, store.ErrNotDeadLettered) {
				t.Errorf("round %d: second requeue: %v, want ErrNotDeadLettered", round, err)
			}
			ref.TransactionID = r.TransactionID
		}
		p := PopParams("q", store.QueueMode, At(time.Hour))
		got := Pop(t, s, p)
		if len(got) != 1 || got[0].TransactionID != ref.TransactionID || got[0].TraceID != "trace-1" ||
			!jsonEqual(got[0].Payload, it.Payload) {
			t.Fatalf("pop of the last requeue: %+v", got)
		}
	})

	t.Run("TenantsDoNotSeeEachOther", func(t *testing.T) {
		s := setup(t, newStore)
		a := itemOf(tenantA, "orders", "p", 1)
		b := itemOf(tenantB, "orders", "p", 2)
		ra := PushItems(t, s, T0, a)
		PushItems(t, s, T0, b)
		refA := store.MessageRef{PartitionID: ra[0].PartitionID, TransactionID: a.TransactionID}
		for _, tc := range []struct {
			tenant string
			want   []string
		}{{tenantA, []string{a.TransactionID}}, {tenantB, []string{b.TransactionID}}, {"", nil}} {
			p := window(At(time.Second))
			p.Tenant, p.Queue = tc.tenant, "orders"
			wantTxns(t, "tenant "+tc.tenant, listedTxns(list(t, s, p)), tc.want)
			p.Queue, p.Partition = "orders", "p"
			wantTxns(t, "tenant "+tc.tenant+" one partition", listedTxns(list(t, s, p)), tc.want)
		}
		if _, err := s.MessageGet(ctx, &store.MessageGetParams{MessageRef: refA, Tenant: tenantB, Now: T0}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tenant B reads tenant A's message: %v", err)
		}
		if ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: refA, Tenant: tenantB, Now: T0}); ok || err != nil {
			t.Errorf("tenant B deletes tenant A's message: %v %v", ok, err)
		}
		if err := s.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: refA, Tenant: tenantB, Now: T0}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tenant B dead-letters tenant A's message: %v", err)
		}
		if err := s.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: refA, Tenant: tenantA, Now: T0}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.MessageRequeue(ctx, s, &store.MessageRequeueParams{MessageRef: refA, Tenant: tenantB, Now: T0}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tenant B requeues tenant A's message: %v", err)
		}
		if got := dlqList(t, s, &store.DLQListParams{Tenant: tenantB}); len(got) != 0 {
			t.Errorf("tenant B lists tenant A's dead letters: %+v", got)
		}
		if got := dlqList(t, s, &store.DLQListParams{Tenant: tenantA}); len(got) != 1 {
			t.Errorf("tenant A's dead letters: %+v", got)
		}
		if n, err := s.DLQDelete(ctx, &store.DLQDeleteParams{Tenant: tenantB, Now: T0}); n != 0 || err != nil {
			t.Errorf("tenant B deletes dead letters: %d %v", n, err)
		}
		err := s.TraceRecord(ctx, &store.TraceRecordParams{MessageRef: refA, Tenant: tenantB, ID: NewID(),
			Data: []byte(`{}`), EventType: "info", ConsumerGroup: store.QueueMode, Now: T0})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tenant B traces tenant A's message: %v", err)
		}
		if _, err := s.TraceList(ctx, &store.TraceListParams{MessageRef: refA, Tenant: tenantB}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tenant B reads tenant A's traces: %v", err)
		}
	})
}
