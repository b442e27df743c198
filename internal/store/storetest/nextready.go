package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// runNextReady checks LaneNextReady, which lets a parked long poll sleep
// until the exact moment a lane may become poppable without a push, and
// PopResult.LeaseExpiresAt, the deadline of a lease a pop takes.
func runNextReady(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("NothingToWaitFor", func(t *testing.T) {
		s := setup(t, newStore)
		wantNextReady(t, s, "a missing queue", PopParams("nope", store.QueueMode, T0), time.Time{})
		Configure(t, s, "q", store.DefaultQueueOptions())
		wantNextReady(t, s, "an empty queue", PopParams("q", store.QueueMode, T0), time.Time{})
		items := Push(t, s, "q", "p", 1)
		p := PopParams("q", store.QueueMode, At(time.Second))
		msgs := Pop(t, s, p)
		wantIDs(t, "pop", msgs, items...)
		wantVerdict(t, "ack", Ack(t, s, At(2*time.Second), AckOf(msgs[0], store.QueueMode, p.LeaseID,
			store.AckCompleted))[0], vReleased)
		wantNextReady(t, s, "a queue whose messages are all acked", PopParams("q", store.QueueMode, At(3*time.Second)),
			time.Time{})
	})

	t.Run("LeaseExpiry", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 30 }))
		Push(t, s, "q", "p", 2)
		p := PopParams("q", store.QueueMode, At(time.Second))
		res, err := s.LanePop(context.Background(), p)
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("pop: %v, %d messages", err, len(res.Messages))
		}
		if want := At(31 * time.Second); !res.LeaseExpiresAt.Equal(want) {
			t.Errorf("LeaseExpiresAt = %v, want %v", res.LeaseExpiresAt, want)
		}
		wantNextReady(t, s, "a leased lane", PopParams("q", store.QueueMode, At(2*time.Second)), At(31*time.Second))
		wantNextReady(t, s, "another group, not joined yet", PopParams("q", "g", At(2*time.Second)), time.Time{})
		auto := PopParams("q", "g", At(2*time.Second))
		auto.AutoAck, auto.LeaseID = true, ""
		if res, err := s.LanePop(context.Background(), auto); err != nil || len(res.Messages) != 1 ||
			!res.LeaseExpiresAt.IsZero() {
			t.Fatalf("autoAck pop: %v, %+v: want one message and no lease", err, res)
		}
		wantNextReady(t, s, "a group with a message ready now", PopParams("q", "g", At(3*time.Second)),
			At(0))
	})

	t.Run("DelayedProcessing", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.DelayedProcessing = 10 }))
		PushAt(t, s, At(5*time.Second), "q", "late", 1)
		PushAt(t, s, T0, "q", "early", 1)
		wantEmpty(t, "pop inside the delay", Pop(t, s, PopParams("q", store.QueueMode, At(6*time.Second))))
		wantNextReady(t, s, "the earliest delayed head", PopParams("q", store.QueueMode, At(6*time.Second)),
			At(10*time.Second))
		pinned := PopParams("q", store.QueueMode, At(6*time.Second))
		pinned.Partition = "late"
		wantNextReady(t, s, "a pinned partition", pinned, At(15*time.Second))
	})

	t.Run("WindowBuffer", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.WindowBuffer = 4 }))
		PushAt(t, s, At(time.Second), "q", "p", 1)
		wantEmpty(t, "pop inside the window", Pop(t, s, PopParams("q", store.QueueMode, At(2*time.Second))))
		wantNextReady(t, s, "the window's end", PopParams("q", store.QueueMode, At(2*time.Second)), At(5*time.Second))
	})

	t.Run("RetryDelay", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryDelay = 2000 }))
		items := Push(t, s, "q", "p", 1)
		p := PopParams("q", store.QueueMode, At(time.Second))
		msgs := Pop(t, s, p)
		wantIDs(t, "first delivery", msgs, items...)
		wantVerdict(t, "nack", Ack(t, s, At(2*time.Second), AckOf(msgs[0], store.QueueMode, p.LeaseID,
			store.AckFailed))[0], vReleased)
		wantNextReady(t, s, "the retry delay's end", PopParams("q", store.QueueMode, At(3*time.Second)),
			At(4*time.Second))
	})
}

// wantNextReady checks LaneNextReady; a want of At(0) means "any time not
// after p.Now" (a lane is poppable already).
func wantNextReady(t *testing.T, s store.Store, what string, p *store.LanePopParams, want time.Time) {
	t.Helper()
	got, err := s.LaneNextReady(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: LaneNextReady: %v", what, err)
	}
	switch {
	case want.Equal(T0):
		if got.IsZero() || got.After(p.Now) {
			t.Errorf("%s: LaneNextReady = %v, want a time not after %v", what, got, p.Now)
		}
	case !got.Equal(want):
		t.Errorf("%s: LaneNextReady = %v, want %v", what, got, want)
	}
}
