package spool

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

type deadLetterLine struct {
	Time    time.Time
	Reason  string
	Segment string
	Item    *recordV2
	Raw     []byte
}

func readDeadLetters(t *testing.T, s *Spool) []deadLetterLine {
	t.Helper()
	f, err := os.Open(s.DeadLetterPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []deadLetterLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l deadLetterLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("dead-letter line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// refuse returns a push that stores everything (into *got) except items
// whose transactionId is in reasons, which it refuses with that reason.
func refuse(got *[]store.PushItem, reasons map[string]string) func(context.Context, []store.PushItem) ([]Refusal, error) {
	return func(_ context.Context, its []store.PushItem) ([]Refusal, error) {
		var refused []Refusal
		for i, it := range its {
			if r, ok := reasons[it.TransactionID]; ok {
				refused = append(refused, Refusal{Index: i, Reason: r})
				continue
			}
			*got = append(*got, it)
		}
		return refused, nil
	}
}

func TestRefusedItemIsDeadLetteredAndReplayGoesOn(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 7)); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UTC().Add(-time.Second)
	var got []store.PushItem
	// Batches of 3: item 4 is in the middle of the second one.
	n, err := s.Replay(context.Background(), 3, refuse(&got, map[string]string{"4": "queue q was deleted"}))
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Fatalf("Replay returned %d, want 6 stored", n)
	}
	var ids []string
	for _, it := range got {
		ids = append(ids, it.TransactionID)
	}
	if want := []string{"0", "1", "2", "3", "5", "6"}; !equal(ids, want) {
		t.Fatalf("stored %v, want %v", ids, want)
	}
	if s.Pending() != 0 {
		t.Fatalf("pending = %d, want 0", s.Pending())
	}
	if s.DeadLettered() != 1 {
		t.Fatalf("DeadLettered = %d, want 1", s.DeadLettered())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+sealedSuffix)); len(left) != 0 {
		t.Fatalf("segments left: %v", left)
	}
	lines := readDeadLetters(t, s)
	if len(lines) != 1 {
		t.Fatalf("dead-letter lines = %d, want 1", len(lines))
	}
	l := lines[0]
	if l.Reason != "queue q was deleted" || l.Time.Before(before) || l.Time.After(time.Now().Add(time.Second)) || l.Segment == "" {
		t.Fatalf("dead letter = %+v", l)
	}
	if l.Item == nil || l.Item.V != 3 || l.Item.TransactionID != "4" || l.Item.MessageID != "m4" || l.Item.Queue != "q" ||
		l.Item.Partition != "p" || l.Item.Tenant != store.DefaultTenant || string(l.Item.Payload) != `{"n":4}` {
		t.Fatalf("dead-lettered item = %+v", l.Item)
	}

	// The count survives a restart and keeps growing from there.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.DeadLettered() != 1 {
		t.Fatalf("DeadLettered after restart = %d, want 1", s2.DeadLettered())
	}
	if err := s2.Append(items(10, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Replay(context.Background(), 10, refuse(&got, map[string]string{"10": "a", "11": "b"})); err != nil {
		t.Fatal(err)
	}
	if s2.DeadLettered() != 3 || len(readDeadLetters(t, s2)) != 3 {
		t.Fatalf("DeadLettered = %d, want 3", s2.DeadLettered())
	}
}

func equal(a, b []string) bool {
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

// An outage error wins over the refusals of the same batch: the whole
// batch is retried, so nothing may be dead-lettered yet.
func TestOutageIgnoresRefusalsOfItsBatch(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 3)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("database down")
	_, err = s.Replay(context.Background(), 10, func(context.Context, []store.PushItem) ([]Refusal, error) {
		return []Refusal{{Index: 1, Reason: "no"}}, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if s.DeadLettered() != 0 || s.Pending() != 3 {
		t.Fatalf("DeadLettered = %d, pending = %d, want 0, 3", s.DeadLettered(), s.Pending())
	}
	if _, err := os.Stat(s.DeadLetterPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dead-letter file exists: %v", err)
	}
}

func TestRefusalOutsideTheBatchStopsReplay(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(items(0, 3)); err != nil {
		t.Fatal(err)
	}
	for _, refused := range [][]Refusal{{{Index: 3}}, {{Index: -1}}, {{Index: 1}, {Index: 1}}} {
		_, err := s.Replay(context.Background(), 10, func(context.Context, []store.PushItem) ([]Refusal, error) {
			return refused, nil
		})
		if err == nil {
			t.Fatalf("refusals %v accepted", refused)
		}
		if s.Pending() != 3 || s.DeadLettered() != 0 {
			t.Fatalf("refusals %v: pending = %d, dead-lettered = %d", refused, s.Pending(), s.DeadLettered())
		}
	}
}

// A record damaged on disk is set aside with its bytes, and the records
// around it are replayed in order.
func TestDamagedRecordIsDeadLettered(t *testing.T) {
	dir := t.TempDir()
	var seg []byte
	for i, it := range items(0, 3) {
		if i == 1 {
			bad := []byte(`{"v":2,"queue":"q","payload":{"n":`)
			seg = binary.BigEndian.AppendUint32(seg, uint32(len(bad)))
			seg = append(seg, bad...)
		}
		var err error
		if seg, err = appendRecord(seg, &it); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, fixtureSegment), seg, 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pending() != 4 {
		t.Fatalf("pending = %d, want 4", s.Pending())
	}
	got := collect(t, s, 10)
	if len(got) != 3 || got[0].TransactionID != "0" || got[1].TransactionID != "1" || got[2].TransactionID != "2" {
		t.Fatalf("replayed %+v", got)
	}
	if s.Pending() != 0 || s.DeadLettered() != 1 {
		t.Fatalf("pending = %d, dead-lettered = %d, want 0, 1", s.Pending(), s.DeadLettered())
	}
	l := readDeadLetters(t, s)[0]
	if l.Item != nil || string(l.Raw) != `{"v":2,"queue":"q","payload":{"n":` || l.Segment != fixtureSegment || l.Reason == "" {
		t.Fatalf("dead letter = %+v", l)
	}
}

// A record of a version this build does not know stops Open with a clear
// error instead of being replayed wrongly or set aside.
func TestOpenRefusesUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	rec := []byte(`{"v":4,"queue":"q","payload":{}}`)
	seg := binary.BigEndian.AppendUint32(nil, uint32(len(rec)))
	if err := os.WriteFile(filepath.Join(dir, fixtureSegment), append(seg, rec...), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("Open err = %v, want ErrUnknownVersion", err)
	}
}

// A crash in the middle of a dead-letter write leaves a torn line, which
// Open cuts off so that the next line starts on a line of its own.
func TestTornDeadLetterLineIsCut(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, deadLetterName)
	if err := os.WriteFile(name, []byte("{\"reason\":\"a\"}\n{\"reason\":\"b\"}\n{\"rea"), 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.DeadLettered() != 2 {
		t.Fatalf("DeadLettered = %d, want 2", s.DeadLettered())
	}
	if err := s.Append(items(0, 1)); err != nil {
		t.Fatal(err)
	}
	var got []store.PushItem
	if _, err := s.Replay(context.Background(), 10, refuse(&got, map[string]string{"0": "c"})); err != nil {
		t.Fatal(err)
	}
	lines := readDeadLetters(t, s)
	if len(lines) != 3 || lines[2].Reason != "c" {
		t.Fatalf("dead letters = %+v", lines)
	}
}
