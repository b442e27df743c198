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

// fake serves rows newest first from one partition whose queue-mode cursor
// is cursor; it counts the rows it hands out.
type fake struct {
	rows   []Row
	cursor int64
	next   int
	served int
	lanes  int
}

func newFake(n int, cursor int64) *fake {
	f := &fake{cursor: cursor}
	for i := n; i >= 1; i-- {
		r := Row{Offset: int64(i), PartitionKey: 1}
		r.TransactionID = fmt.Sprint("t", i)
		r.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		f.rows = append(f.rows, r)
	}
	return f
}

func (f *fake) Next(n int) ([]Row, error) {
	end := min(f.next+n, len(f.rows))
	out := f.rows[f.next:end]
	f.next, f.served = end, f.served+len(out)
	return out, nil
}

func (f *fake) Lanes(pids []int64) (map[int64][]lane.Group, error) {
	f.lanes++
	return map[int64][]lane.Group{1: {{Name: store.QueueMode, State: lane.State{Cursor: f.cursor}}}}, nil
}

func txns(ms []store.ListedMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.TransactionID
	}
	return out
}

func TestCollectReadsOnlyThePage(t *testing.T) {
	f := newFake(10, 4)
	got, err := Collect(&store.MessageListParams{From: t0, Limit: 3, Offset: 2, Now: t0}, f)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(txns(got), []string{"t8", "t7", "t6"}) || f.served != 5 || f.lanes != 1 {
		t.Errorf("got %v after serving %d rows, %d lane reads", txns(got), f.served, f.lanes)
	}
	if got[0].Status != store.StatusPending {
		t.Errorf("status %q", got[0].Status)
	}
}

func TestCollectStopsAtTheWindowStart(t *testing.T) {
	f := newFake(10, 0)
	got, _ := Collect(&store.MessageListParams{From: t0.Add(8 * time.Second), Limit: 5, Now: t0}, f)
	if !slices.Equal(txns(got), []string{"t10", "t9", "t8"}) {
		t.Errorf("got %v", txns(got))
	}
	f = newFake(10, 0)
	got, _ = Collect(&store.MessageListParams{From: t0.Add(8 * time.Second), Limit: 5, Now: t0,
		Status: store.StatusPending}, f)
	if !slices.Equal(txns(got), []string{"t10", "t9", "t8"}) {
		t.Errorf("with a status filter: got %v", txns(got))
	}
}

func TestCollectFiltersStatusWithOffset(t *testing.T) {
	f := newFake(2500, 2000) // 500 pending above 2000 completed
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 2, Offset: 1, Now: t0,
		Status: store.StatusCompleted}, f)
	if !slices.Equal(txns(got), []string{"t1999", "t1998"}) {
		t.Errorf("got %v", txns(got))
	}
	if f.served != chunk || f.lanes != 1 {
		t.Errorf("served %d rows in chunks, %d lane reads", f.served, f.lanes)
	}
}

func TestCollectBoundsTheScan(t *testing.T) {
	f := newFake(store.MessageListScanLimit+5000, 0)
	got, _ := Collect(&store.MessageListParams{From: t0, Limit: 10, Now: t0, Status: store.StatusCompleted}, f)
	if len(got) != 0 || f.served != store.MessageListScanLimit {
		t.Errorf("got %d messages after %d rows, want none after %d", len(got), f.served, store.MessageListScanLimit)
	}
}
