package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// popAll pops up to 100 messages of queue's lane part for group at now.
func popAll(t testing.TB, s store.Store, queue, part, group string, now time.Time) ([]store.Message, string) {
	t.Helper()
	p := PopParams(queue, group, now)
	p.Partition, p.Batch = part, 100
	return Pop(t, s, p), p.LeaseID
}

func runAck(t *testing.T, newStore func(t *testing.T) store.Store) {
	const g = "workers"

	t.Run("CommitsTheGap", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 5)
		msgs, lease := popAll(t, s, "q", "p", g, At(time.Second))
		wantIDs(t, "pop", msgs, items...)
		res := Ack(t, s, At(2*time.Second), AckOf(msgs[2], g, lease, store.AckCompleted))
		wantVerdict(t, "ack of the third message", res[0], vOK)
		if res[0].Queue != "q" {
			t.Errorf("AckResult.Queue: got %q, want q", res[0].Queue)
		}
		wantEmpty(t, "pop while the lease still holds the lane", Pop(t, s, PopParams("q", g, At(3*time.Second))))
		res = Ack(t, s, At(4*time.Second), AckOf(msgs[4], g, lease, store.AckCompleted))
		wantVerdict(t, "ack of the batch end", res[0], vReleased)
		wantEmpty(t, "pop after the batch was committed", Pop(t, s, PopParams("q", g, At(5*time.Second))))
	})

	t.Run("ExpiredLeaseRedeliversAfterTheCommit", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 10 }))
		items := Push(t, s, "q", "p", 5)
		msgs, lease := popAll(t, s, "q", "p", g, At(time.Second))
		Ack(t, s, At(2*time.Second), AckOf(msgs[1], g, lease, store.AckCompleted))
		again, _ := popAll(t, s, "q", "p", g, At(12*time.Second))
		wantIDs(t, "pop after the lease expired", again, items[2:]...)
	})

	t.Run("NoopVerdicts", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "q", "p", 5)
		msgs, lease := popAll(t, s, "q", "p", g, At(time.Second))
		wantVerdict(t, "ack of m2", Ack(t, s, At(2*time.Second), AckOf(msgs[2], g, lease, store.AckCompleted))[0], vOK)
		res := Ack(t, s, At(3*time.Second),
			AckOf(msgs[2], g, lease, store.AckCompleted), // at the cursor
			AckOf(msgs[0], g, lease, store.AckCompleted), // below it
			AckOf(msgs[2], g, lease, store.AckFailed),    // negative at the cursor
			AckOf(msgs[1], g, "", store.AckDLQ),          // negative below it
		)
		wantVerdict(t, "re-ack at the cursor", res[0], vDup)
		wantVerdict(t, "ack below the cursor", res[1], vCommitted)
		wantVerdict(t, "failed at the cursor", res[2], vCommitted)
		wantVerdict(t, "dlq below the cursor", res[3], vCommitted)
		// None of them moved anything: the lease is still held.
		wantVerdict(t, "ack of the batch end", Ack(t, s, At(4*time.Second), AckOf(msgs[4], g, lease, store.AckCompleted))[0], vReleased)
	})

	t.Run("Unresolvable", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "q", "p", 2)
		msgs, lease := popAll(t, s, "q", "p", g, At(time.Second))
		unknownTxn := AckOf(msgs[0], g, lease, store.AckCompleted)
		unknownTxn.TransactionID = "no-such-transaction"
		unknownPart := AckOf(msgs[0], g, lease, store.AckCompleted)
		unknownPart.PartitionID = "0197f2b0-0000-7000-8000-000000000000"
		otherPart := AckOf(msgs[0], g, "", store.AckCompleted)
		other := Push(t, s, "q", "other", 1)
		otherPart.TransactionID = other[0].TransactionID // exists, but not in this partition
		res := Ack(t, s, At(2*time.Second), unknownTxn, unknownPart, otherPart)
		wantVerdict(t, "unknown transactionId", res[0], vUnresolv)
		wantVerdict(t, "unknown partitionId", res[1], vUnresolv)
		wantVerdict(t, "transactionId of another partition", res[2], vUnresolv)
		if res[1].Queue != "" {
			t.Errorf("AckResult.Queue of an unknown partition: got %q, want empty", res[1].Queue)
		}
		wantVerdict(t, "ack of the batch end", Ack(t, s, At(3*time.Second), AckOf(msgs[1], g, lease, store.AckCompleted))[0], vReleased)
	})

	t.Run("LeaseChecks", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.LeaseTime = 10 }))
		items := Push(t, s, "q", "p", 4)
		msgs, lease := popAll(t, s, "q", "p", g, At(time.Second))
		res := Ack(t, s, At(2*time.Second), AckOf(msgs[3], g, "not-the-lease", store.AckCompleted))
		wantVerdict(t, "ack under a foreign lease", res[0], vBadLease)
		res = Ack(t, s, At(2*time.Second), AckOf(msgs[3], "another-group", lease, store.AckCompleted))
		wantVerdict(t, "ack of another group's lane under this lease", res[0], vBadLease)
		res = Ack(t, s, At(2*time.Second), AckOf(msgs[0], g, "", store.AckCompleted))
		wantVerdict(t, "ack without lease id", res[0], vOK)
		res = Ack(t, s, At(11*time.Second), AckOf(msgs[1], g, lease, store.AckCompleted))
		wantVerdict(t, "ack under the right lease after its deadline", res[0], vBadLease)
		res = Ack(t, s, At(12*time.Second), AckOf(msgs[1], g, "", store.AckCompleted))
		wantVerdict(t, "ack without lease id after the deadline", res[0], vOK)
		again, _ := popAll(t, s, "q", "p", g, At(13*time.Second))
		wantIDs(t, "pop after the expired lease", again, items[2:]...)
	})

	t.Run("Clamping", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 5)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		res := Ack(t, s, At(2*time.Second),
			AckOf(m[0], g, lease, store.AckCompleted),
			AckOf(m[2], g, lease, store.AckFailed),
			AckOf(m[3], g, lease, store.AckCompleted),
			AckOf(m[1], g, lease, store.AckCompleted),
			AckOf(m[4], g, lease, store.AckRetry),
		)
		want := []store.AckResult{vOK, vReleased, vCancelled, vOK, vCancelled}
		for i := range want {
			wantVerdict(t, fmt.Sprintf("ack %d", i), res[i], want[i])
		}
		again, _ := popAll(t, s, "q", "p", g, At(3*time.Second))
		wantIDs(t, "pop after the clamp", again, items[2:]...)
	})

	t.Run("ClampLowestNegativeWins", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 5)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		res := Ack(t, s, At(2*time.Second),
			AckOf(m[3], g, lease, store.AckDLQ),
			AckOf(m[1], g, lease, store.AckRetry),
			AckOf(m[4], g, lease, store.AckFailed),
		)
		want := []store.AckResult{vCancelled, vReleased, vCancelled}
		for i := range want {
			wantVerdict(t, fmt.Sprintf("ack %d", i), res[i], want[i])
		}
		again, _ := popAll(t, s, "q", "p", g, At(3*time.Second))
		wantIDs(t, "pop after the clamp", again, items[1:]...)
	})

	t.Run("ClampPrecedence", func(t *testing.T) {
		s := setup(t, newStore)
		items := Push(t, s, "q", "p", 3)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		res := Ack(t, s, At(2*time.Second),
			AckOf(m[1], g, lease, store.AckRetry),
			AckOf(m[1], g, lease, store.AckDLQ),
			AckOf(m[1], g, lease, store.AckFailed),
			AckOf(m[1], g, lease, store.AckCompleted),
		)
		want := []store.AckResult{vCancelled, vDLQ, vCancelled, vCancelled}
		for i := range want {
			wantVerdict(t, fmt.Sprintf("ack %d", i), res[i], want[i])
		}
		again, _ := popAll(t, s, "q", "p", g, At(3*time.Second))
		wantIDs(t, "pop after dlq of the second message", again, items[2:]...)
	})

	t.Run("ClampPerLane", func(t *testing.T) {
		s := setup(t, newStore)
		a := Push(t, s, "q", "a", 3)
		Push(t, s, "q", "b", 3)
		ma, la := popAll(t, s, "q", "a", g, At(time.Second))
		mb, lb := popAll(t, s, "q", "b", g, At(time.Second))
		mo, lo := popAll(t, s, "q", "a", "other", At(time.Second))
		res := Ack(t, s, At(2*time.Second),
			AckOf(ma[0], g, la, store.AckFailed),
			AckOf(mb[2], g, lb, store.AckCompleted),
			AckOf(mo[2], "other", lo, store.AckCompleted),
			AckOf(ma[2], g, la, store.AckCompleted),
		)
		want := []store.AckResult{vReleased, vReleased, vReleased, vCancelled}
		for i := range want {
			wantVerdict(t, fmt.Sprintf("ack %d", i), res[i], want[i])
		}
		again, _ := popAll(t, s, "q", "a", g, At(3*time.Second))
		wantIDs(t, "lane a of the clamped group", again, a...)
		lb2, _ := popAll(t, s, "q", "b", g, At(3*time.Second))
		wantEmpty(t, "lane b, committed in the same call", lb2)
		other, _ := popAll(t, s, "q", "a", "other", At(3*time.Second))
		wantEmpty(t, "lane a of the other group, committed in the same call", other)
	})

	t.Run("FailedThenDLQ", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 2 }))
		items := Push(t, s, "q", "p", 2)
		for attempt := 1; attempt <= 3; attempt++ {
			now := At(time.Duration(attempt) * time.Second)
			m, lease := popAll(t, s, "q", "p", g, now)
			wantIDs(t, fmt.Sprintf("delivery %d", attempt), m, items...)
			res := Ack(t, s, now, AckOf(m[0], g, lease, store.AckFailed))
			want := vReleased
			if attempt == 3 {
				want = vDLQ // the failure after the 2nd retry
			}
			wantVerdict(t, fmt.Sprintf("failed ack of delivery %d", attempt), res[0], want)
		}
		m, _ := popAll(t, s, "q", "p", g, At(10*time.Second))
		wantIDs(t, "pop after the dead letter", m, items[1:]...)
	})

	t.Run("FailedInsideBatchStartsFreshBudget", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 1 }))
		items := Push(t, s, "q", "p", 3)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		wantVerdict(t, "failed of the head", Ack(t, s, At(time.Second), AckOf(m[0], g, lease, store.AckFailed))[0], vReleased)
		m, lease = popAll(t, s, "q", "p", g, At(2*time.Second))
		// Failing the second message commits the first: its attempts are its own.
		wantVerdict(t, "failed of the second", Ack(t, s, At(2*time.Second), AckOf(m[1], g, lease, store.AckFailed))[0], vReleased)
		m, lease = popAll(t, s, "q", "p", g, At(3*time.Second))
		wantIDs(t, "redelivery from the second", m, items[1:]...)
		wantVerdict(t, "second failure of the second", Ack(t, s, At(3*time.Second), AckOf(m[0], g, lease, store.AckFailed))[0], vDLQ)
	})

	t.Run("RetryLimitZero", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 0 }))
		items := Push(t, s, "q", "p", 2)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		failed := AckOf(m[0], g, lease, store.AckFailed)
		failed.Error = "boom"
		wantVerdict(t, "first failure", Ack(t, s, At(time.Second), failed)[0], vDLQ)
		m, _ = popAll(t, s, "q", "p", g, At(2*time.Second))
		wantIDs(t, "pop after the dead letter", m, items[1:]...)
	})

	t.Run("DLQImmediate", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 10 }))
		items := Push(t, s, "q", "p", 3)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		res := Ack(t, s, At(time.Second), AckOf(m[0], g, lease, store.AckCompleted), AckOf(m[1], g, lease, store.AckDLQ))
		wantVerdict(t, "completed before the dlq", res[0], vOK)
		wantVerdict(t, "dlq", res[1], vDLQ)
		m, _ = popAll(t, s, "q", "p", g, At(2*time.Second))
		wantIDs(t, "pop after the dead letter", m, items[2:]...)
	})

	t.Run("RetryKeepsBudget", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 1 }))
		items := Push(t, s, "q", "p", 2)
		for i := range 4 {
			now := At(time.Duration(i+1) * time.Second)
			m, lease := popAll(t, s, "q", "p", g, now)
			wantIDs(t, fmt.Sprintf("delivery %d", i+1), m, items...)
			wantVerdict(t, fmt.Sprintf("retry %d", i+1), Ack(t, s, now, AckOf(m[0], g, lease, store.AckRetry))[0], vReleased)
		}
		m, lease := popAll(t, s, "q", "p", g, At(10*time.Second))
		wantVerdict(t, "first failure after retries", Ack(t, s, At(10*time.Second), AckOf(m[0], g, lease, store.AckFailed))[0], vReleased)
		m, lease = popAll(t, s, "q", "p", g, At(11*time.Second))
		wantVerdict(t, "second failure", Ack(t, s, At(11*time.Second), AckOf(m[0], g, lease, store.AckFailed))[0], vDLQ)
	})

	t.Run("CommitResetsBudget", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 1 }))
		Push(t, s, "q", "p", 3)
		m, lease := popAll(t, s, "q", "p", g, At(time.Second))
		Ack(t, s, At(time.Second), AckOf(m[0], g, lease, store.AckFailed))
		m, lease = popAll(t, s, "q", "p", g, At(2*time.Second))
		Ack(t, s, At(2*time.Second), AckOf(m[0], g, lease, store.AckCompleted), AckOf(m[1], g, lease, store.AckFailed))
		m, lease = popAll(t, s, "q", "p", g, At(3*time.Second))
		// The second message has one failure; the first one's does not carry over.
		wantVerdict(t, "second failure of the new head", Ack(t, s, At(3*time.Second), AckOf(m[0], g, lease, store.AckFailed))[0], vDLQ)
	})

	t.Run("NegativeAckWithoutLease", func(t *testing.T) {
		s := setup(t, newStore)
		items := []store.PushItem{Item("q", "p", 0), Item("q", "p", 1), Item("q", "p", 2)}
		pushed := PushItems(t, s, T0, items...)
		res := Ack(t, s, T0, store.Ack{
			TransactionID: items[1].TransactionID, PartitionID: pushed[1].PartitionID,
			ConsumerGroup: g, Status: store.AckRetry,
		})
		wantVerdict(t, "retry of an unleased lane", res[0], vOK)
		m, _ := popAll(t, s, "q", "p", g, At(time.Second))
		wantIDs(t, "pop after the retry", m, items[1:]...)
	})
}
