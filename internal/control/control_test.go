package control

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// fakeStore answers the few methods a test needs; any other call panics.
type fakeStore struct {
	Store
	deletes   []int // rows each DLQDelete call deleted
	remaining int
	list      *store.MessageListParams
}

func (f *fakeStore) DLQDelete(ctx context.Context, p *store.DLQDeleteParams) (int, error) {
	n := min(p.Limit, f.remaining)
	f.remaining -= n
	f.deletes = append(f.deletes, n)
	return n, nil
}

// DLQRequeue requeues one named message into "orders", and a selection
// into queues a, a and b.
func (f *fakeStore) DLQRequeue(ctx context.Context, p *store.DLQRequeueParams) (*store.DLQRequeueResult, error) {
	if len(p.Refs) == 1 {
		return &store.DLQRequeueResult{Requeued: []store.Requeued{{Queue: "orders",
			TransactionID: p.Refs[0].TransactionID + ":retry:1"}}}, nil
	}
	return &store.DLQRequeueResult{Requeued: []store.Requeued{{Queue: "a"}, {Queue: "a"}, {Queue: "b"}}}, nil
}

func (f *fakeStore) MessageList(ctx context.Context, p *store.MessageListParams) (*store.MessageListResult, error) {
	f.list = p
	return &store.MessageListResult{}, nil
}

func (f *fakeStore) TraceRecord(ctx context.Context, p *store.TraceRecordParams) error { return nil }

var now = time.Date(2026, 7, 30, 9, 12, 44, 31e6, time.UTC)

func newControl(f *fakeStore, woken *[]string) *Control {
	return New(f, Config{Now: func() time.Time { return now }, Wake: func(keys ...string) {
		*woken = append(*woken, keys...)
	}})
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		q        MessageQuery
		from, to time.Time
	}{
		{MessageQuery{}, now.Add(-time.Hour), time.Date(2026, 7, 30, 9, 13, 0, 0, time.UTC)},
		{MessageQuery{From: now.Add(-time.Minute), To: now.Add(-time.Hour)}, now.Add(-time.Minute),
			time.Date(2026, 7, 30, 8, 13, 0, 0, time.UTC)},
	} {
		from, to := tc.q.Window(now)
		if !from.Equal(tc.from) || !to.Equal(tc.to) {
			t.Errorf("%+v: [%v, %v), want [%v, %v)", tc.q, from, to, tc.from, tc.to)
		}
	}
	f := &fakeStore{}
	var woken []string
	if _, err := newControl(f, &woken).ListMessages(context.Background(), MessageQuery{Tenant: "t"}); err != nil {
		t.Fatal(err)
	}
	if !f.list.Now.Equal(now) || !f.list.From.Equal(now.Add(-time.Hour)) || f.list.Tenant != "t" {
		t.Errorf("store params %+v", f.list)
	}
}

func TestDeleteDLQInSteps(t *testing.T) {
	f := &fakeStore{remaining: 2500}
	var woken []string
	n, err := newControl(f, &woken).DeleteDLQ(context.Background(), "", store.DLQFilter{Queue: "q"})
	if err != nil || n != 2500 || !slices.Equal(f.deletes, []int{1000, 1000, 500}) {
		t.Errorf("deleted %d in steps %v (%v), want 2500 in 1000, 1000, 500", n, f.deletes, err)
	}
	f = &fakeStore{remaining: 2000}
	n, _ = newControl(f, &woken).DeleteDLQ(context.Background(), "", store.DLQFilter{})
	if n != 2000 || !slices.Equal(f.deletes, []int{1000, 1000, 0}) {
		t.Errorf("deleted %d in steps %v", n, f.deletes)
	}
}

func TestRetriesWakeTheirQueues(t *testing.T) {
	f := &fakeStore{}
	var woken []string
	c := newControl(f, &woken)
	if _, err := c.RetryMessage(context.Background(), "", store.MessageRef{TransactionID: "t"}, ""); err != nil {
		t.Fatal(err)
	}
	if want := []string{store.QueueKey(store.DefaultTenant, "orders")}; !slices.Equal(woken, want) {
		t.Errorf("woke %v, want %v", woken, want)
	}
	woken = nil
	if _, err := c.RetryDLQ(context.Background(), store.DLQRequeueParams{Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{store.QueueKey("t1", "a"), store.QueueKey("t1", "b")}; !slices.Equal(woken, want) {
		t.Errorf("woke %v, want %v", woken, want)
	}
}

func TestRecordTraceDefaults(t *testing.T) {
	var got *store.TraceRecordParams
	f := &recordingStore{got: &got}
	c := New(f, Config{Now: func() time.Time { return now }})
	id, err := c.RecordTrace(context.Background(), TraceInput{Names: []string{"a", "b", "a"}, Data: []byte(`{}`)})
	if err != nil || id == "" || got.ID != id {
		t.Fatalf("RecordTrace: %q %v", id, err)
	}
	if got.ConsumerGroup != store.QueueMode || got.EventType != DefaultTraceEventType ||
		!slices.Equal(got.Names, []string{"a", "b"}) || !got.Now.Equal(now) {
		t.Errorf("store params %+v", got)
	}
}

type recordingStore struct {
	Store
	got **store.TraceRecordParams
}

func (r *recordingStore) TraceRecord(ctx context.Context, p *store.TraceRecordParams) error {
	*r.got = p
	return nil
}
