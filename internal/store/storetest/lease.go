package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// extend renews lease by seconds at now.
func extend(t testing.TB, s store.Store, lease string, seconds int, now time.Time) *store.LeaseExtendResult {
	t.Helper()
	res, err := s.LeaseExtend(context.Background(), &store.LeaseExtendParams{LeaseID: lease, Seconds: seconds, Now: now})
	if err != nil {
		t.Fatalf("LeaseExtend(%s, %ds): %v", lease, seconds, err)
	}
	if res == nil {
		t.Fatal("LeaseExtend returned a nil result and no error")
	}
	return res
}

// wantExtended fails unless res renewed n lanes with the earliest deadline at.
func wantExtended(t testing.TB, what string, res *store.LeaseExtendResult, n int, at time.Time) {
	t.Helper()
	if res.Renewed != n {
		t.Errorf("%s: renewed %d lanes, want %d", what, res.Renewed, n)
	}
	switch {
	case n == 0 && res.ExpiresAt != nil:
		t.Errorf("%s: ExpiresAt %v, want nil", what, *res.ExpiresAt)
	case n > 0 && res.ExpiresAt == nil:
		t.Errorf("%s: ExpiresAt nil, want %v", what, at)
	case n > 0 && !res.ExpiresAt.Equal(at):
		t.Errorf("%s: ExpiresAt %v, want %v", what, *res.ExpiresAt, at)
	}
}

func runLease(t *testing.T, newStore func(t *testing.T) store.Store) {
	const g = "workers"

	t.Run("ExtendNeverShortens", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 100 }))
		Push(t, s, "q", "p", 1)
		_, lease := popAll(t, s, "q", "p", g, T0)
		wantExtended(t, "extend by less than is left", extend(t, s, lease, 10, At(time.Second)), 1, At(100*time.Second))
		wantExtended(t, "extend past the deadline", extend(t, s, lease, 200, At(2*time.Second)), 1, At(202*time.Second))
		wantExtended(t, "extend by less again", extend(t, s, lease, 1, At(3*time.Second)), 1, At(202*time.Second))
	})

	t.Run("ExtendKeepsTheLeaseAlive", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 10 }))
		Push(t, s, "q", "p", 2)
		m, lease := popAll(t, s, "q", "p", g, T0)
		wantExtended(t, "extend", extend(t, s, lease, 30, At(5*time.Second)), 1, At(35*time.Second))
		wantEmpty(t, "pop after the original deadline", Pop(t, s, PopParams("q", g, At(20*time.Second))))
		res := Ack(t, s, At(20*time.Second), AckOf(m[1], g, lease, store.AckCompleted))
		wantVerdict(t, "ack under the extended lease", res[0], vReleased)
	})

	t.Run("ExtendCountsLanes", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 10 }))
		for i := range 3 {
			Push(t, s, "q", fmt.Sprintf("p%d", i), 1)
		}
		p := PopParams("q", g, T0)
		p.Batch, p.Partitions = 10, 3
		m := Pop(t, s, p)
		if len(m) != 3 {
			t.Fatalf("pop of 3 lanes: got %s", payloads(m))
		}
		wantExtended(t, "extend a lease over 3 lanes", extend(t, s, p.LeaseID, 60, At(time.Second)), 3, At(61*time.Second))
		// Releasing one lane leaves the others held.
		Ack(t, s, At(2*time.Second), AckOf(m[0], g, p.LeaseID, store.AckCompleted))
		wantExtended(t, "extend after one lane was released", extend(t, s, p.LeaseID, 60, At(3*time.Second)), 2, At(63*time.Second))
	})

	t.Run("ExtendNothing", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 10 }))
		Push(t, s, "q", "p", 1)
		Push(t, s, "q", "r", 1)
		wantExtended(t, "unknown lease", extend(t, s, "no-such-lease", 60, T0), 0, time.Time{})
		_, expired := popAll(t, s, "q", "p", g, T0)
		wantExtended(t, "lease past its deadline", extend(t, s, expired, 60, At(10*time.Second)), 0, time.Time{})
		m, released := popAll(t, s, "q", "r", g, T0)
		Ack(t, s, At(time.Second), AckOf(m[0], g, released, store.AckCompleted))
		wantExtended(t, "released lease", extend(t, s, released, 60, At(2*time.Second)), 0, time.Time{})
	})

	t.Run("DefaultLeaseTime", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 1) // an implicit queue: leaseTime 300
		popAll(t, s, "q", "p", g, T0)
		wantEmpty(t, "pop just before the default lease ends", Pop(t, s, PopParams("q", g, At(299*time.Second))))
		m, _ := popAll(t, s, "q", "p", g, At(300*time.Second))
		wantIDs(t, "pop when the default lease ends", m, items...)
	})

	t.Run("LeaseTimeZeroMeansSixtySeconds", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 0 }))
		items := Push(t, s, "q", "p", 1)
		popAll(t, s, "q", "p", g, T0)
		wantEmpty(t, "pop before 60s", Pop(t, s, PopParams("q", g, At(59*time.Second))))
		m, _ := popAll(t, s, "q", "p", g, At(60*time.Second))
		wantIDs(t, "pop at 60s", m, items...)
	})

	t.Run("ExpiryRedeliversAndCountsAnAttempt", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) {
			o.LeaseTime, o.RetryLimit = 10, 1
		}))
		items := Push(t, s, "q", "p", 2)
		m, _ := popAll(t, s, "q", "p", g, T0)
		wantIDs(t, "first delivery", m, items...)
		wantEmpty(t, "pop before the lease ends", Pop(t, s, PopParams("q", g, At(9*time.Second))))
		m, _ = popAll(t, s, "q", "p", g, At(10*time.Second))
		wantIDs(t, "redelivery after the first expiry", m, items...)
		// A second expiry exhausts retryLimit 1: the head is dead-lettered.
		m, _ = popAll(t, s, "q", "p", g, At(time.Hour))
		wantIDs(t, "pop after the second expiry", m, items[1:]...)
	})

	t.Run("ExpiryAndFailedAckShareTheBudget", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) {
			o.LeaseTime, o.RetryLimit = 10, 1
		}))
		// Interleave two partitions so that offsets may have gaps.
		items := []store.PushItem{Item("q", "a", 0), Item("q", "b", 0), Item("q", "a", 1), Item("q", "b", 1)}
		PushItems(t, s, T0, items...)
		for _, part := range []string{"a", "b"} {
			m, _ := popAll(t, s, "q", part, g, At(time.Second))
			if len(m) != 2 {
				t.Fatalf("lane %s: first delivery %s, want 2 messages", part, payloads(m))
			}
			m, lease := popAll(t, s, "q", part, g, At(time.Hour)) // the lease expired: attempt 1
			if len(m) != 2 {
				t.Fatalf("lane %s: redelivery %s, want 2 messages", part, payloads(m))
			}
			res := Ack(t, s, At(time.Hour), AckOf(m[0], g, lease, store.AckFailed))
			wantVerdict(t, "lane "+part+": failed ack after an expiry with retryLimit 1", res[0], vDLQ)
		}
	})

	t.Run("ExpiryDoesNotCountForAnotherGroup", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) {
			o.LeaseTime, o.RetryLimit = 10, 0
		}))
		items := Push(t, s, "q", "p", 1)
		popAll(t, s, "q", "p", "a", T0)
		m, _ := popAll(t, s, "q", "p", "b", At(time.Hour))
		wantIDs(t, "group b after group a's lease expired", m, items...)
	})
}
