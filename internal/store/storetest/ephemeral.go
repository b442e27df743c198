package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// EphemeralCreate creates an ephemeral queue at now and fails the test on an
// error.
func EphemeralCreate(t testing.TB, s store.Store, now time.Time, name string, ttl time.Duration, maxMessages int) *store.EphemeralQueue {
	t.Helper()
	q, err := s.EphemeralCreate(context.Background(), &store.EphemeralCreateParams{Name: name, TTL: ttl,
		MaxMessages: maxMessages, Now: now})
	if err != nil {
		t.Fatalf("EphemeralCreate(%s): %v", name, err)
	}
	return q
}

// ephPush pushes payloads {"n":i} to queue at now and returns the verdicts.
func ephPush(t testing.TB, s store.Store, now time.Time, queue string, n int) []store.EphemeralPushResult {
	t.Helper()
	items := make([]store.EphemeralItem, n)
	for i := range items {
		items[i] = store.EphemeralItem{ID: NewID(), Queue: queue, Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	res, err := s.EphemeralPush(context.Background(), &store.EphemeralPushParams{Items: items, Now: now})
	if err != nil {
		t.Fatalf("EphemeralPush(%s, %d): %v", queue, n, err)
	}
	if len(res) != n {
		t.Fatalf("EphemeralPush returned %d results for %d items", len(res), n)
	}
	return res
}

func runEphemeral(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("Lifecycle", func(t *testing.T) {
		s := setup(t, newStore)
		q := EphemeralCreate(t, s, T0, "reply", time.Minute, 3)
		if !q.ExpiresAt.Equal(At(time.Minute)) || q.TTL != time.Minute || q.MaxMessages != 3 {
			t.Fatalf("created: %+v", q)
		}
		if _, err := s.EphemeralCreate(ctx, &store.EphemeralCreateParams{Name: "reply", TTL: time.Minute,
			MaxMessages: 3, Now: At(time.Second)}); !errors.Is(err, store.ErrEphemeralExists) {
			t.Fatalf("second create: %v, want ErrEphemeralExists", err)
		}
		res := ephPush(t, s, At(time.Second), "reply", 4)
		for i, r := range res {
			want := ""
			if i == 3 {
				want = api.ReasonQueueFull
			}
			if r.Error != want {
				t.Errorf("push item %d: %q, want %q", i, r.Error, want)
			}
		}
		items := []store.EphemeralItem{{ID: NewID(), Queue: "nope", Payload: []byte(`1`)}}
		res2, err := s.EphemeralPush(ctx, &store.EphemeralPushParams{Items: items, Now: At(time.Second)})
		if err != nil || res2[0].Error != api.ReasonQueueNotFound {
			t.Fatalf("push to an unknown queue: %+v, %v", res2, err)
		}
		list, err := s.EphemeralList(ctx, &store.EphemeralListParams{Now: At(2 * time.Second)})
		if err != nil || list.Total != 1 || len(list.Queues) != 1 || list.Queues[0].Depth != 3 {
			t.Fatalf("list: %+v, %v, want reply with depth 3", list, err)
		}
		msgs, err := s.EphemeralPop(ctx, &store.EphemeralPopParams{Name: "reply", Limit: 2, Now: At(2 * time.Second)})
		if err != nil || len(msgs) != 2 || string(msgs[0].Payload) != `{"n":0}` || string(msgs[1].Payload) != `{"n":1}` {
			t.Fatalf("pop 2: %+v, %v, want n=0 and n=1", msgs, err)
		}
		msgs, err = s.EphemeralPop(ctx, &store.EphemeralPopParams{Name: "reply", Limit: 5, Now: At(2 * time.Second)})
		if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != `{"n":2}` {
			t.Fatalf("pop the rest: %+v, %v", msgs, err)
		}
		msgs, err = s.EphemeralPop(ctx, &store.EphemeralPopParams{Name: "reply", Limit: 5, Now: At(2 * time.Second)})
		if err != nil || len(msgs) != 0 {
			t.Fatalf("pop of an empty queue: %+v, %v", msgs, err)
		}
		// Keepalive moves the expiry; past it the queue is gone at once.
		q, err = s.EphemeralKeepalive(ctx, &store.EphemeralKeepaliveParams{Name: "reply", Now: At(50 * time.Second)})
		if err != nil || !q.ExpiresAt.Equal(At(110*time.Second)) {
			t.Fatalf("keepalive: %+v, %v, want expiry T0+110s", q, err)
		}
		if _, err := s.EphemeralPop(ctx, &store.EphemeralPopParams{Name: "reply", Limit: 1, Now: At(110 * time.Second)}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("pop of an expired queue: %v, want ErrNotFound", err)
		}
		if _, err := s.EphemeralKeepalive(ctx, &store.EphemeralKeepaliveParams{Name: "reply", Now: At(110 * time.Second)}); !errors.Is(err, store.ErrEphemeralNotFound) {
			t.Fatalf("keepalive of an expired queue: %v", err)
		}
		// An expired name can be created again, empty.
		ephPush(t, s, At(109*time.Second), "reply", 1)
		EphemeralCreate(t, s, At(111*time.Second), "reply", time.Minute, 10)
		msgs, err = s.EphemeralPop(ctx, &store.EphemeralPopParams{Name: "reply", Limit: 5, Now: At(112 * time.Second)})
		if err != nil || len(msgs) != 0 {
			t.Fatalf("pop of a queue created again: %+v, %v, want empty", msgs, err)
		}
		deleted, err := s.EphemeralDelete(ctx, &store.EphemeralDeleteParams{Name: "reply", Now: At(113 * time.Second)})
		if err != nil || !deleted {
			t.Fatalf("delete: %v, %v", deleted, err)
		}
		if deleted, err = s.EphemeralDelete(ctx, &store.EphemeralDeleteParams{Name: "reply", Now: At(113 * time.Second)}); err != nil || deleted {
			t.Fatalf("second delete: %v, %v, want false", deleted, err)
		}
	})

	t.Run("TenantsAndSweep", func(t *testing.T) {
		s := setup(t, newStore)
		const other = "11111111-1111-1111-1111-111111111111"
		EphemeralCreate(t, s, T0, "a", 10*time.Second, 10)
		EphemeralCreate(t, s, T0, "b", time.Hour, 10)
		if _, err := s.EphemeralCreate(ctx, &store.EphemeralCreateParams{Tenant: other, Name: "a", TTL: time.Hour,
			MaxMessages: 10, Now: T0}); err != nil {
			t.Fatalf("the same name under another tenant: %v", err)
		}
		if _, err := s.EphemeralPop(ctx, &store.EphemeralPopParams{Tenant: other, Name: "b", Limit: 1, Now: T0}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pop of another tenant's queue: %v, want ErrNotFound", err)
		}
		ephPush(t, s, T0, "a", 3)
		list, err := s.EphemeralList(ctx, &store.EphemeralListParams{Now: At(20 * time.Second)})
		if err != nil || list.Total != 1 || list.Queues[0].Name != "b" {
			t.Fatalf("list after a's expiry: %+v, %v, want only b", list, err)
		}
		n, err := s.EphemeralSweep(ctx, &store.EphemeralSweepParams{Now: At(20 * time.Second)})
		if err != nil || n != 1 {
			t.Fatalf("sweep: %d, %v, want 1", n, err)
		}
		if n, err = s.EphemeralSweep(ctx, &store.EphemeralSweepParams{Now: At(20 * time.Second)}); err != nil || n != 0 {
			t.Fatalf("second sweep: %d, %v, want 0", n, err)
		}
		if list, err := s.EphemeralList(ctx, &store.EphemeralListParams{Tenant: other, Now: At(20 * time.Second)}); err != nil || list.Total != 1 {
			t.Fatalf("other tenant after the sweep: %+v, %v", list, err)
		}
	})

	t.Run("AtMostOnceUnderRace", func(t *testing.T) {
		s := setup(t, newStore)
		const n, poppers = 400, 8
		EphemeralCreate(t, s, T0, "race", time.Hour, n)
		var sent []store.EphemeralItem
		for i := 0; i < n; i++ {
			sent = append(sent, store.EphemeralItem{ID: NewID(), Queue: "race", Payload: []byte(fmt.Sprint(i))})
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		pushed := make(chan struct{})
		// Pushes run alongside the pops, in batches of 20.
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(pushed)
			for i := 0; i < n; i += 20 {
				res, err := s.EphemeralPush(ctx, &store.EphemeralPushParams{Items: sent[i : i+20], Now: T0})
				if err != nil {
					t.Errorf("push: %v", err)
					return
				}
				for _, r := range res {
					if r.Error != "" {
						t.Errorf("push refused: %s", r.Error)
					}
				}
			}
		}()
		for p := 0; p < poppers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					finished := false
					select {
					case <-pushed:
						finished = true // an empty pop after this means the queue is drained
					default:
					}
					msgs, err := s.EphemeralPop(ctx, &store.EphemeralPopParams{Name: "race", Limit: 3, Now: T0})
					if err != nil {
						t.Errorf("pop: %v", err)
						return
					}
					if len(msgs) == 0 && finished {
						return
					}
					mu.Lock()
					for _, m := range msgs {
						seen[m.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, it := range sent {
			if seen[it.ID] != 1 {
				t.Fatalf("message %s delivered %d times, want once", it.ID, seen[it.ID])
			}
		}
	})
}
