package spool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func itemsIn(k PartitionKey, from, n int) []store.PushItem {
	out := items(from, n)
	for i := range out {
		out[i].Tenant, out[i].Queue, out[i].Partition = k.Tenant, k.Queue, k.Partition
	}
	return out
}

func counts(s *Spool) map[PartitionKey]int64 {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	return maps.Clone(s.counts)
}

func TestPendingInCountsFromOpen(t *testing.T) {
	s := openFixture(t, "v1")
	orders := PartitionKey{Queue: "orders", Partition: "acct-1"} // "" is the default tenant
	invoices := PartitionKey{Tenant: store.DefaultTenant, Queue: "billing.invoices.eu", Partition: "Default"}
	want := map[PartitionKey]int64{orders.normal(): 2, invoices: 1}
	if got := counts(s); !maps.Equal(got, want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
	if !s.PendingIn([]PartitionKey{orders}) || !s.PendingIn([]PartitionKey{{Queue: "x"}, invoices}) {
		t.Fatal("PendingIn false for a partition with spooled records")
	}
	if s.PendingIn([]PartitionKey{{Tenant: "other", Queue: "orders", Partition: "acct-1"}, {Queue: "orders", Partition: "acct-2"}}) {
		t.Fatal("PendingIn true for partitions without spooled records")
	}
}

// Counts go up on Append, down batch by batch as replay confirms, and a
// partition disappears from the map once clear.
func TestPendingInFollowsAppendAndReplay(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := PartitionKey{Tenant: "t1", Queue: "q", Partition: "a"}
	b := PartitionKey{Tenant: "t1", Queue: "q", Partition: "b"}
	c := PartitionKey{Tenant: "t2", Queue: "q", Partition: "a"}
	for _, its := range [][]store.PushItem{itemsIn(a, 0, 2), itemsIn(b, 2, 2), itemsIn(c, 4, 2)} {
		if err := s.Append(its); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := counts(s), map[PartitionKey]int64{a: 2, b: 2, c: 2}; !maps.Equal(got, want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
	batches := 0
	_, err = s.Replay(context.Background(), 2, func(_ context.Context, its []store.PushItem) ([]Refusal, error) {
		// Batch i holds partition i; earlier ones are clear, this one and
		// later ones are not.
		keys := []PartitionKey{a, b, c}
		for i, k := range keys {
			if s.PendingIn([]PartitionKey{k}) != (i >= batches) {
				t.Errorf("batch %d: PendingIn(%v) = %v", batches, k, !(i >= batches))
			}
		}
		batches++
		if keyOf(&its[0]) == c {
			return []Refusal{{Index: 0, Reason: "refused"}, {Index: 1, Reason: "refused"}}, nil
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts(s)) != 0 || s.Pending() != 0 {
		t.Fatalf("after replay: counts = %v, pending = %d", counts(s), s.Pending())
	}
}

// WaitClear wakes when replay confirms the last spooled record of its
// partitions, not when replay ends, and honours its context.
func TestWaitClear(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := PartitionKey{Queue: "q", Partition: "a"}
	b := PartitionKey{Queue: "q", Partition: "b"}
	if err := s.WaitClear(context.Background(), []PartitionKey{a}); err != nil {
		t.Fatalf("WaitClear on a clear partition = %v", err)
	}
	if err := s.Append(append(itemsIn(a, 0, 2), itemsIn(b, 2, 2)...)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.WaitClear(ctx, []PartitionKey{a}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitClear with a pending partition and an ending context = %v", err)
	}

	cleared := make(chan error, 1)
	go func() { cleared <- s.WaitClear(context.Background(), []PartitionKey{a}) }()
	batches := 0
	_, err = s.Replay(context.Background(), 2, func(context.Context, []store.PushItem) ([]Refusal, error) {
		batches++
		switch batches {
		case 1: // a's batch, not yet confirmed
			select {
			case err := <-cleared:
				t.Fatalf("WaitClear returned %v before a's records were replayed", err)
			default:
			}
		case 2: // b's batch: a's was confirmed before it
			select {
			case err := <-cleared:
				if err != nil {
					t.Fatalf("WaitClear = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("WaitClear did not return once a was clear")
			}
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Counts stay exact with appends, replays (with refusals) and waiters
// running together: at every point they equal what was appended minus what
// push confirmed, and they are empty once everything is replayed.
func TestCountsExactUnderConcurrency(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]PartitionKey, 5)
	for i := range keys {
		keys[i] = PartitionKey{Tenant: fmt.Sprint("t", i%2), Queue: "q", Partition: fmt.Sprint("p", i)}
	}
	var (
		mu        sync.Mutex
		appended  = map[PartitionKey]int64{}
		confirmed = map[PartitionKey]int64{}
	)
	kick := make([]chan struct{}, len(keys)) // wakes key i's waiter after an append
	for i := range kick {
		kick[i] = make(chan struct{}, 1)
	}
	const writers, each = 8, 50
	ctx, cancel := context.WithCancel(context.Background())
	var wg, bg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ki := (w + i) % len(keys)
				its := itemsIn(keys[ki], w*1000+i, 1+i%3)
				if err := s.Append(its); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				appended[keys[ki]] += int64(len(its))
				mu.Unlock()
				select {
				case kick[ki] <- struct{}{}:
				default:
				}
			}
		})
	}
	for i, k := range keys {
		bg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-kick[i]:
				}
				_ = s.WaitClear(ctx, []PartitionKey{k})
			}
		})
	}
	replays := 0
	bg.Go(func() {
		for ctx.Err() == nil {
			_, err := s.Replay(ctx, 7, func(_ context.Context, its []store.PushItem) ([]Refusal, error) {
				mu.Lock()
				for i := range its {
					confirmed[keyOf(&its[i])]++
				}
				mu.Unlock()
				// Refuse one item in some batches, so dead-lettering is
				// part of the race.
				if len(its) > 3 && replays%3 == 0 {
					return []Refusal{{Index: len(its) / 2, Reason: "refused"}}, nil
				}
				return nil, nil
			})
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			replays++
		}
	})
	wg.Wait()
	cancel()
	bg.Wait()

	// A push that returned without error was confirmed: Replay checks the
	// context before a push, not after.
	want := map[PartitionKey]int64{}
	var total int64
	for k, n := range appended {
		if left := n - confirmed[k]; left != 0 {
			want[k] = left
			total += left
		}
	}
	if got := counts(s); !maps.Equal(got, want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
	if s.Pending() != total {
		t.Fatalf("Pending = %d, want %d", s.Pending(), total)
	}
	collect(t, s, 100)
	if len(counts(s)) != 0 || s.Pending() != 0 {
		t.Fatalf("after replay: counts = %v, pending = %d", counts(s), s.Pending())
	}
	t.Logf("%d replays, %d dead-lettered", replays, s.DeadLettered())
}
