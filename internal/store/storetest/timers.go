package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// TimerAt is a timer of one message (payload {"n":n}) to queue/partition
// firing at fireAt, with fresh ids.
func TimerAt(queue, partition string, n int, fireAt time.Time) store.TimerItem {
	return store.TimerItem{ID: NewID(), FireAt: fireAt, Item: Item(queue, partition, n)}
}

// ScheduleTimers stores timers at now and fails the test on an error.
func ScheduleTimers(t testing.TB, s store.Store, now time.Time, items ...store.TimerItem) []store.TimerScheduleResult {
	t.Helper()
	res, err := s.TimerSchedule(context.Background(), &store.TimerScheduleParams{Items: items, Now: now})
	if err != nil {
		t.Fatalf("TimerSchedule(%d items): %v", len(items), err)
	}
	if len(res) != len(items) {
		t.Fatalf("TimerSchedule returned %d results for %d items", len(res), len(items))
	}
	return res
}

// fireDue fires the timers due at now and returns the ids fired, in order.
func fireDue(t testing.TB, s store.Store, now time.Time) []string {
	t.Helper()
	res, err := s.TimerFireDue(context.Background(), &store.TimerFireDueParams{Now: now})
	if err != nil {
		t.Fatalf("TimerFireDue(%v): %v", now.Sub(T0), err)
	}
	out := []string{}
	for _, f := range res.Fired {
		out = append(out, f.Timer.ID)
	}
	return out
}

func runTimers(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	const g = "workers"

	t.Run("ScheduleGetListIdempotent", func(t *testing.T) {
		s := setup(t, newStore)
		a, b := TimerAt("q", "p", 1, At(time.Minute)), TimerAt("other", "Default", 2, At(time.Second))
		res := ScheduleTimers(t, s, T0, a, b)
		if res[0].Duplicate || res[0].Timer.ID != a.ID || res[0].Timer.Status != store.TimerScheduled {
			t.Fatalf("schedule: %+v", res[0])
		}
		again := TimerAt("q", "p", 3, At(time.Hour))
		again.Item.TransactionID = a.Item.TransactionID
		res = ScheduleTimers(t, s, At(time.Second), again)
		if !res[0].Duplicate || res[0].Timer.ID != a.ID || !res[0].Timer.FireAt.Equal(At(time.Minute)) {
			t.Fatalf("schedule of the same transactionId: %+v, want the first timer, duplicate", res[0])
		}
		tm, err := s.TimerGet(ctx, &store.TimerGetParams{ID: a.ID})
		if err != nil || tm.Queue != "q" || tm.Partition != "p" || tm.MessageID != a.Item.MessageID ||
			!tm.CreatedAt.Equal(T0) {
			t.Fatalf("TimerGet: %+v, %v", tm, err)
		}
		if _, err := s.TimerGet(ctx, &store.TimerGetParams{ID: a.ID, Tenant: "11111111-1111-1111-1111-111111111111"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TimerGet of another tenant: %v, want ErrNotFound", err)
		}
		if _, err := s.TimerGet(ctx, &store.TimerGetParams{ID: NewID()}); !errors.Is(err, store.ErrTimerNotFound) {
			t.Errorf("TimerGet of an unknown id: %v, want ErrTimerNotFound", err)
		}
		list, err := s.TimerList(ctx, &store.TimerListParams{})
		if err != nil || list.Total != 2 || len(list.Timers) != 2 || list.Timers[0].ID != b.ID {
			t.Fatalf("TimerList: %+v, %v, want 2 timers, the earliest first", list, err)
		}
		list, err = s.TimerList(ctx, &store.TimerListParams{Queue: "q", Status: store.TimerScheduled, Limit: 1})
		if err != nil || list.Total != 1 || len(list.Timers) != 1 || list.Timers[0].ID != a.ID {
			t.Fatalf("TimerList of q: %+v, %v", list, err)
		}
		list, err = s.TimerList(ctx, &store.TimerListParams{Offset: 5})
		if err != nil || list.Total != 2 || len(list.Timers) != 0 {
			t.Fatalf("TimerList past the end: %+v, %v, want total 2 and no timer", list, err)
		}
		next, ok, err := s.TimerNext(ctx, &store.TimerNextParams{Now: T0})
		if err != nil || !ok || !next.Equal(At(time.Second)) {
			t.Fatalf("TimerNext: %v %v %v, want T0+1s", next, ok, err)
		}
	})

	t.Run("FireInOrderOnTime", func(t *testing.T) {
		s := setup(t, newStore)
		t3, t1, t2 := TimerAt("q", "p", 3, At(3*time.Second)), TimerAt("q", "p", 1, At(time.Second)),
			TimerAt("q", "p", 2, At(2*time.Second))
		ScheduleTimers(t, s, T0, t3, t1, t2)
		if got := fireDue(t, s, At(999*time.Millisecond)); len(got) != 0 {
			t.Fatalf("fire before any is due: %v", got)
		}
		if got := fireDue(t, s, At(time.Second)); fmt.Sprint(got) != fmt.Sprint([]string{t1.ID}) {
			t.Fatalf("fire at T0+1s: %v, want [%s]", got, t1.ID)
		}
		if got := fireDue(t, s, At(time.Second)); len(got) != 0 {
			t.Fatalf("second fire at T0+1s: %v, want none", got)
		}
		if got := fireDue(t, s, At(10*time.Second)); fmt.Sprint(got) != fmt.Sprint([]string{t2.ID, t3.ID}) {
			t.Fatalf("fire at T0+10s: %v, want [%s %s]", got, t2.ID, t3.ID)
		}
		p := PopParams("q", g, At(11*time.Second))
		p.Batch = 10
		wantIDs(t, "messages of the timers", Pop(t, s, p), t1.Item, t2.Item, t3.Item)
		tm, err := s.TimerGet(ctx, &store.TimerGetParams{ID: t2.ID})
		if err != nil || tm.Status != store.TimerFired || !tm.FinishedAt.Equal(At(10*time.Second)) ||
			tm.MessageID != t2.Item.MessageID {
			t.Fatalf("fired timer: %+v, %v", tm, err)
		}
		if _, ok, _ := s.TimerNext(ctx, &store.TimerNextParams{Now: T0}); ok {
			t.Error("TimerNext reports a timer after all fired")
		}
		// A fired timer cannot be cancelled; finished timers are pruned.
		if _, err := s.TimerCancel(ctx, &store.TimerCancelParams{ID: t1.ID, Now: At(20 * time.Second)}); !errors.Is(err, store.ErrTimerFired) {
			t.Errorf("cancel of a fired timer: %v, want ErrTimerFired", err)
		}
		if n, err := s.TimerPrune(ctx, &store.TimerPruneParams{Before: At(5 * time.Second), Now: At(time.Hour)}); err != nil || n != 1 {
			t.Errorf("prune before T0+5s: %d, %v, want 1 (the timer fired at T0+1s)", n, err)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		s := setup(t, newStore)
		a := TimerAt("q", "p", 1, At(time.Second))
		ScheduleTimers(t, s, T0, a)
		tm, err := s.TimerCancel(ctx, &store.TimerCancelParams{ID: a.ID, Now: At(500 * time.Millisecond)})
		if err != nil || tm.Status != store.TimerCancelled {
			t.Fatalf("cancel: %+v, %v", tm, err)
		}
		if tm, err = s.TimerCancel(ctx, &store.TimerCancelParams{ID: a.ID, Now: At(600 * time.Millisecond)}); err != nil ||
			tm.Status != store.TimerCancelled {
			t.Fatalf("second cancel: %+v, %v, want it unchanged", tm, err)
		}
		if _, err := s.TimerCancel(ctx, &store.TimerCancelParams{ID: NewID(), Now: T0}); !errors.Is(err, store.ErrTimerNotFound) {
			t.Errorf("cancel of an unknown timer: %v", err)
		}
		if got := fireDue(t, s, At(time.Hour)); len(got) != 0 {
			t.Fatalf("a cancelled timer fired: %v", got)
		}
		wantEmpty(t, "queue of a cancelled timer", Pop(t, s, PopParams("q", g, At(time.Hour))))
	})

	t.Run("FireDedupAndRefusal", func(t *testing.T) {
		s := setup(t, newStore)
		pushed := Push(t, s, "q", "p", 1)
		dup := TimerAt("q", "p", 9, At(time.Second))
		dup.Item.TransactionID = pushed[0].TransactionID
		Configure(t, s, "full", Options(func(o *store.QueueOptions) { o.MaxSize = 1 }))
		Push(t, s, "full", "Default", 1)
		refused := TimerAt("full", "Default", 1, At(time.Second))
		ScheduleTimers(t, s, T0, dup, refused)
		res, err := s.TimerFireDue(ctx, &store.TimerFireDueParams{Now: At(time.Second)})
		if err != nil || len(res.Fired) != 2 {
			t.Fatalf("fire: %+v, %v", res, err)
		}
		byID := map[string]store.FiredTimer{}
		for _, f := range res.Fired {
			byID[f.Timer.ID] = f
		}
		if f := byID[dup.ID]; !f.Duplicate || f.Timer.Status != store.TimerFired || f.Timer.MessageID != pushed[0].MessageID {
			t.Errorf("timer whose transactionId was pushed: %+v, want fired as a duplicate of %s", f, pushed[0].MessageID)
		}
		if f := byID[refused.ID]; f.Timer.Status != store.TimerFailed || f.Timer.Error == "" {
			t.Errorf("timer of a full queue: %+v, want failed with an error", f)
		}
		if len(res.Pushed) != 0 {
			t.Errorf("pushed counts: %+v, want none", res.Pushed)
		}
		p := PopParams("q", g, At(2*time.Second))
		p.Batch = 10
		wantIDs(t, "queue after a duplicate fire", Pop(t, s, p), pushed...)
	})

	t.Run("FireExactlyOnceUnderRace", func(t *testing.T) {
		s := setup(t, newStore)
		const n, firers = 300, 4
		items := make([]store.TimerItem, n)
		want := make([]store.PushItem, n)
		for i := range items {
			items[i] = TimerAt("race", "p", i, At(time.Duration(i)*time.Millisecond))
			want[i] = items[i].Item
		}
		ScheduleTimers(t, s, T0, items...)
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for f := 0; f < firers; f++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					res, err := s.TimerFireDue(ctx, &store.TimerFireDueParams{Now: At(time.Second), Limit: 25})
					if err != nil {
						t.Errorf("TimerFireDue: %v", err)
						return
					}
					if len(res.Fired) == 0 {
						return
					}
					mu.Lock()
					for _, f := range res.Fired {
						seen[f.Timer.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, it := range items {
			if seen[it.ID] != 1 {
				t.Fatalf("timer %s fired %d times, want once", it.ID, seen[it.ID])
			}
		}
		p := PopParams("race", g, At(2*time.Second))
		p.Batch = n + 10
		if got := Pop(t, s, p); len(got) != n {
			t.Fatalf("queue after the race: %d messages, want %d", len(got), n)
		}
		list, err := s.TimerList(ctx, &store.TimerListParams{Status: store.TimerScheduled})
		if err != nil || list.Total != 0 {
			t.Fatalf("scheduled after the race: %+v, %v", list, err)
		}
	})
}
