package listing

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

var t0 = time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)

// fake holds parts partitions; message i (1-based, offset i) of all goes to
// partition i % parts and is created at t0 + i seconds. Queue mode's cursor
// is cursor on every partition. It counts what it hands out.
type fake struct {
	parts  int
	msgs   map[int64][]Row // per partition, oldest first
	cursor int64
	rows   int
	opened map[int64]bool
	calls  int
	leased bool // Partitions reports a live lease (Lanes holds none)
}

func newFake(n, parts int, cursor int64) *fake {
	f := &fake{parts: parts, msgs: map[int64][]Row{}, cursor: cursor, opened: map[int64]bool{}}
	for i := 1; i <= n; i++ {
		k := int64(i % parts)
		f.msgs[k] = append(f.msgs[k], Row{Offset: int64(i), TransactionID: fmt.Sprint("t", i),
			CreatedAt: t0.Add(time.Duration(i) * time.Second).UnixMilli()})
	}
	return f
}

func (f *fake) Partitions(status store.MessageStatus) ([]Partition, error) {
	var out []Partition
	for k, ms := range f.msgs {
		out = append(out, Partition{Key: k, Newest: ms[len(ms)-1].CreatedAt, LastOffset: ms[len(ms)-1].Offset,
			MinCursor: f.cursor, Leased: f.leased})
	}
	return out, nil
}

func (f *fake) Describe(keys []int64) (map[int64]store.ListedMessage, error) {
	out := map[int64]store.ListedMessage{}
	for _, k := range keys {
		out[k] = store.ListedMessage{Partition: fmt.Sprint("p", k)}
	}
	return out, nil
}

func (f *fake) Newest(keys, floor, below []int64, n int, dead bool) ([][]Row, error) {
	f.calls++
	out := make([][]Row, len(keys))
	for i, k := range keys {
		f.opened[k] = true
		ms := f.msgs[k]
		for j := len(ms) - 1; j >= 0 && len(out[i]) < n; j-- {
			if (below[i] == 0 || ms[j].Offset < below[i]) && ms[j].Offset > floor[i] {
				out[i] = append(out[i], ms[j])
			}
		}
		f.rows += len(out[i])
	}
	return out, nil
}

func (f *fake) Lanes(keys []int64) (map[int64][]lane.Group, error) {
	out := map[int64][]lane.Group{}
	for _, k := range keys {
		out[k] = []lane.Group{{Name: store.QueueMode, State: lane.State{Cursor: f.cursor}}}
	}
	return out, nil
}

func txns(ms []store.ListedMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.TransactionID
	}
	return out
}

func seq(from, to int) []string { // t<from> down to t<to>
	var out []string
	for i := from; i >= to; i-- {
		out = append(out, fmt.Sprint("t", i))
	}
	return out
}

func TestCollectMergesNewestFirst(t *testing.T) {
	f := newFake(1000, 7, 0)
	got, err := Collect(&store.MessageListParams{From: t0, Limit: 30, Offset: 5, Now: t0}, f)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(txns(got), seq(995, 966)) {
		t.Errorf("got %v", txns(got))
	}
	if got[0].Partition != "p1" || got[0].Status != store.StatusPending {
		t.Errorf("first: %+v", got[0])
	}
}

func TestCollectOpensOnlyWhatThePageNeeds(t *testing.T) {
	f := newFake(100_000, 10_000, 0) // ten messages per partition
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 50, Now: t0}, f)
	if !slices.Equal(txns(got), seq(100_000, 99_951)) {
		t.Fatalf("got %v", txns(got))
	}
	if len(f.opened) > 50+openBatch || f.rows > (50+openBatch)*firstRows {
		t.Errorf("opened %d partitions and read %d rows for a page of 50", len(f.opened), f.rows)
	}
}

func TestCollectOnePartitionReadsInGrowingSteps(t *testing.T) {
	f := newFake(5000, 1, 0)
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 1000, Now: t0}, f)
	if !slices.Equal(txns(got), seq(5000, 4001)) {
		t.Fatalf("got %d messages", len(got))
	}
	if f.calls > 6 || f.rows > 2000 {
		t.Errorf("%d reads of %d rows for a page of 1000", f.calls, f.rows)
	}
}

func TestCollectStopsAtTheWindowStart(t *testing.T) {
	for _, status := range []store.MessageStatus{"", store.StatusPending} {
		f := newFake(10, 3, 0)
		got, _ := Collect(&store.MessageListParams{From: t0.Add(8 * time.Second), Limit: 5, Now: t0, Status: status}, f)
		if !slices.Equal(txns(got), seq(10, 8)) {
			t.Errorf("status %q: got %v", status, txns(got))
		}
	}
}

func TestCollectFiltersStatusWithOffset(t *testing.T) {
	f := newFake(2500, 1, 2000) // 500 pending above 2000 completed
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 2, Offset: 1, Now: t0,
		Status: store.StatusCompleted}, f)
	if !slices.Equal(txns(got), seq(1999, 1998)) {
		t.Errorf("got %v", txns(got))
	}
}

func TestCollectReadsOnlyWhereTheStatusCanBe(t *testing.T) {
	f := newFake(10_000, 10, 9_000) // completed up to 9000 on every partition
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 5, Now: t0, Status: store.StatusCompleted}, f)
	if !slices.Equal(txns(got), seq(9000, 8996)) {
		t.Errorf("completed: %v", txns(got))
	}
	if f.rows > 10*deepRows {
		t.Errorf("read %d rows above the cursors' range", f.rows)
	}
	f = newFake(10_000, 10, 10_000)
	if got, _ := Collect(&store.MessageListParams{From: t0, Limit: 5, Now: t0, Status: store.StatusPending}, f); len(got) != 0 || f.rows != 0 {
		t.Errorf("pending where everything is consumed: %v after reading %d rows", txns(got), f.rows)
	}
}

func TestCollectBoundsTheScan(t *testing.T) {
	f := newFake(store.MessageListScanLimit+5000, 3, 0)
	f.leased = true // but no lane holds a lease: nothing is processing
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 10, Now: t0, Status: store.StatusProcessing}, f)
	if len(got) != 0 || f.rows > store.MessageListScanLimit+3*maxRows {
		t.Errorf("got %d messages after reading %d rows, want none after about %d", len(got), f.rows,
			store.MessageListScanLimit)
	}
}
