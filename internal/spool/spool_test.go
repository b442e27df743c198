package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/queen-go/queen/internal/store"
)

func items(from, n int) []store.PushItem {
	out := make([]store.PushItem, n)
	for i := range out {
		out[i] = store.PushItem{Queue: "q", Partition: "p", TransactionID: fmt.Sprint(from + i),
			MessageID: fmt.Sprint("m", from+i), Payload: []byte(fmt.Sprintf(`{"n":%d}`, from+i))}
	}
	return out
}

func collect(t *testing.T, s *Spool, batch int) []store.PushItem {
	t.Helper()
	var got []store.PushItem
	n, err := s.Replay(context.Background(), batch, func(_ context.Context, its []store.PushItem) ([]Refusal, error) {
		if len(its) > batch {
			t.Fatalf("replay batch of %d, want at most %d", len(its), batch)
		}
		got = append(got, its...)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(got) {
		t.Fatalf("Replay returned %d, pushed %d", n, len(got))
	}
	return got
}

func TestReplayKeepsOrderAcrossSegmentsAndRestarts(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 5)); err != nil {
		t.Fatal(err)
	}
	// A process that dies without closing leaves an open segment behind.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Pending() != 5 {
		t.Fatalf("pending after restart = %d, want 5", s2.Pending())
	}
	if err := s2.Append(items(5, 7)); err != nil {
		t.Fatal(err)
	}
	got := collect(t, s2, 3)
	checkOrder(t, got, 12)
	if s2.Pending() != 0 {
		t.Fatalf("pending after replay = %d", s2.Pending())
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 {
		t.Fatalf("segments left after replay: %v", left)
	}
}

// An outage stops replay; the next replay resumes with the batch that
// failed, and the segment stays on disk until all of it is stored.
func TestFailedReplayResumesWithTheFailedBatch(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 4)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("database down")
	calls := 0
	n, err := s.Replay(context.Background(), 2, func(context.Context, []store.PushItem) ([]Refusal, error) {
		calls++
		if calls == 2 {
			return nil, boom
		}
		return nil, nil
	})
	if !errors.Is(err, boom) || n != 2 {
		t.Fatalf("Replay = %d, %v, want 2, %v", n, err, boom)
	}
	if s.Pending() != 2 {
		t.Fatalf("pending = %d, want 2", s.Pending())
	}
	if sealed, _ := s.sealed(); len(sealed) != 1 {
		t.Fatalf("segments = %v, want the one partly replayed", sealed)
	}
	// A crash now restarts the segment from its beginning.
	restarted, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if restarted.Pending() != 4 {
		t.Fatalf("pending after restart = %d, want 4", restarted.Pending())
	}
	got := collect(t, s, 10)
	if len(got) != 2 || got[0].TransactionID != "2" || got[1].TransactionID != "3" {
		t.Fatalf("second replay got %+v, want items 2 and 3", got)
	}
	if s.Pending() != 0 {
		t.Fatalf("pending = %d, want 0", s.Pending())
	}
}

func TestTornTailIsIgnored(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 2)); err != nil {
		t.Fatal(err)
	}
	name := s.cur.Name()
	s.Close()
	// A crash in the middle of a write leaves half a record.
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 1, 0, '{'})
	f.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s2, 10); len(got) != 2 {
		t.Fatalf("replayed %d items, want the 2 complete ones", len(got))
	}
}

func TestConcurrentAppendsShareFsyncsAndLoseNothing(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.Append(items(w*1000+i, 1)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// Replays racing with the appends must not make an append fail.
	replayed := 0
	for range 5 {
		n, err := s.Replay(context.Background(), 100, func(context.Context, []store.PushItem) ([]Refusal, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		replayed += n
	}
	wg.Wait()
	rest := collect(t, s, 100)
	if got := replayed + len(rest); got != writers*each {
		t.Fatalf("replayed %d records, want %d", got, writers*each)
	}
}

// A write that fails halfway (a full disk) must not leave a torn record in
// front of later ones: they would be misframed.
func TestFailedWriteIsCutOff(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 2)); err != nil {
		t.Fatal(err)
	}
	torn, err := appendRecord(nil, &items(90, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	n, err := s.cur.Write(torn[:len(torn)/2])
	if err != nil {
		t.Fatal(err)
	}
	s.undoWriteLocked(n)
	s.mu.Unlock()
	if err := s.Append(items(2, 2)); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, collect(t, s, 10), 4)
}

// When the torn bytes cannot be cut off, the segment is sealed before the
// next append, so the torn record is the end of its segment.
func TestTornSegmentIsSealedBeforeTheNextAppend(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 2)); err != nil {
		t.Fatal(err)
	}
	torn, err := appendRecord(nil, &items(90, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	name := s.cur.Name()
	w, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.Write(torn[:len(torn)/2])
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Truncate fails on a read-only descriptor.
	s.cur.Close()
	if s.cur, err = os.Open(name); err != nil {
		t.Fatal(err)
	}
	s.undoWriteLocked(n)
	if !s.torn {
		t.Fatal("segment not marked torn after a failed cut")
	}
	s.mu.Unlock()
	if err := s.Append(items(2, 2)); err != nil {
		t.Fatal(err)
	}
	sealed, _ := s.sealed()
	if len(sealed) != 1 {
		t.Fatalf("sealed segments = %v, want the torn one", sealed)
	}
	checkOrder(t, collect(t, s, 10), 4)
}

func checkOrder(t *testing.T, got []store.PushItem, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("replayed %d items, want %d", len(got), n)
	}
	for i, it := range got {
		if it.TransactionID != fmt.Sprint(i) || it.MessageID != fmt.Sprint("m", i) || string(it.Payload) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("item %d = %+v: order or content lost", i, it)
		}
	}
}

func TestCompleteRecords(t *testing.T) {
	var buf []byte
	var ends []int
	for _, it := range items(0, 3) {
		var err error
		if buf, err = appendRecord(buf, &it); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(buf))
	}
	for n := 0; n <= len(buf); n++ {
		want := 0
		for want < len(ends) && ends[want] <= n {
			want++
		}
		if got := completeRecords(buf[:n]); got != want {
			t.Fatalf("completeRecords of %d bytes = %d, want %d", n, got, want)
		}
	}
}

func TestCapRefusesAppendsPastItWholeUntilReplayFreesSpace(t *testing.T) {
	dir := t.TempDir()
	one := len(mustRecord(t, items(0, 1)))
	s, err := OpenMax(dir, int64(3*one))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 2)); err != nil {
		t.Fatal(err)
	}
	// Two more records would make four: the whole append is refused.
	if err := s.Append(items(2, 2)); !errors.Is(err, ErrFull) {
		t.Fatalf("append past the cap: %v, want ErrFull", err)
	}
	if err := s.Append(items(2, 1)); err != nil {
		t.Fatalf("append up to the cap: %v", err)
	}
	if err := s.Append(items(3, 1)); !errors.Is(err, ErrFull) {
		t.Fatalf("append at the cap: %v, want ErrFull", err)
	}
	if s.Pending() != 3 || s.Bytes() != int64(3*one) || s.RefusedFull() != 3 {
		t.Fatalf("pending %d, bytes %d, refused %d; want 3, %d, 3", s.Pending(), s.Bytes(), s.RefusedFull(), 3*one)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart counts the segments left on disk against the cap.
	s, err = OpenMax(dir, int64(3*one))
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes() != int64(3*one) {
		t.Fatalf("bytes after reopening %d, want %d", s.Bytes(), 3*one)
	}
	if err := s.Append(items(3, 1)); !errors.Is(err, ErrFull) {
		t.Fatalf("append at the cap after reopening: %v, want ErrFull", err)
	}
	got := collect(t, s, 10)
	if len(got) != 3 || got[0].TransactionID != "0" || got[2].TransactionID != "2" {
		t.Fatalf("replayed %+v, want the 3 accepted items in order", got)
	}
	if s.Bytes() != 0 {
		t.Fatalf("bytes after replay %d, want 0", s.Bytes())
	}
	if err := s.Append(items(3, 3)); err != nil {
		t.Fatalf("append after replay freed the spool: %v", err)
	}
}

func mustRecord(t *testing.T, its []store.PushItem) []byte {
	t.Helper()
	var buf []byte
	for i := range its {
		var err error
		if buf, err = appendRecord(buf, &its[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf
}
