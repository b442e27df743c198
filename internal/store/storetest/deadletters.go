package storetest

import (
	"sort"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// DeadLetterRow is a dead-letter row as a driver's own test reads it from
// its tables (the store has no method that lists dead letters yet).
type DeadLetterRow struct {
	Error string
	Group string
}

// RunSweepDeadLetters checks the dead letters the sweeps write and delete,
// on a fresh store s whose dead-letter rows deadLetters lists: eviction
// writes one per consumer group and message, with "max wait time exceeded"
// (for the queue-mode group when nobody has joined), and retention deletes
// those of the messages it deletes.
func RunSweepDeadLetters(t *testing.T, s store.Store, deadLetters func(t *testing.T) []DeadLetterRow) {
	count := func() map[DeadLetterRow]int {
		out := make(map[DeadLetterRow]int)
		for _, r := range deadLetters(t) {
			out[r]++
		}
		return out
	}
	Configure(t, s, "joined", Options(func(o *store.QueueOptions) {
		o.MaxWaitTimeSeconds, o.RetentionEnabled, o.RetentionSeconds = 10, true, 100
	}))
	Configure(t, s, "nobody", Options(func(o *store.QueueOptions) { o.MaxWaitTimeSeconds = 10 }))
	PushAt(t, s, At(0), "joined", "p", 3)
	PushAt(t, s, At(0), "nobody", "p", 2)
	for _, g := range []string{"g1", "g2"} {
		p := PopParams("joined", g, At(time.Second))
		msgs := Pop(t, s, p)
		if g == "g1" {
			Ack(t, s, At(time.Second), AckOf(msgs[0], g, p.LeaseID, store.AckCompleted))
		} else {
			Ack(t, s, At(time.Second), AckOf(msgs[0], g, p.LeaseID, store.AckRetry))
		}
	}
	if n := Sweep(t, s, store.RetentionEviction, At(20*time.Second), 2); n != 5 {
		t.Fatalf("eviction removed %d messages, want 3 + 2", n)
	}
	got := count()
	want := map[DeadLetterRow]int{
		{Group: "g1", Error: "max wait time exceeded"}:            2,
		{Group: "g2", Error: "max wait time exceeded"}:            3,
		{Group: store.QueueMode, Error: "max wait time exceeded"}: 2,
	}
	if !equalCounts(got, want) {
		t.Fatalf("dead letters after eviction: %v, want %v", got, want)
	}
	if n := Sweep(t, s, store.RetentionExpired, At(200*time.Second), 10); n != 3 {
		t.Fatalf("retention removed %d messages, want 3", n)
	}
	want = map[DeadLetterRow]int{{Group: store.QueueMode, Error: "max wait time exceeded"}: 2}
	if got := count(); !equalCounts(got, want) {
		t.Fatalf("dead letters after retention deleted their messages: %v, want %v", got, want)
	}
}

func equalCounts(a, b map[DeadLetterRow]int) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]DeadLetterRow, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Group < keys[j].Group })
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}
