// Package lane holds the consumption rules of one lane, a (partition,
// consumer group) pair: one cursor, at most one lease, and a retry counter for
// the message after the cursor. Every storage driver loads lane state, applies
// these pure functions inside its own transaction, and saves the result, so
// that all engines commit acks, clamp, retry and dead-letter identically.
//
// Offsets are driver-defined integers that grow in commit order within a
// partition; gaps are allowed. Offset 0 means "before the first message".
package lane

import (
	"github.com/queen-go/queen/internal/store"

	"github.com/queen-go/queen/api"
)

// State is the consumption state of one lane.
type State struct {
	// BatchEnd is the offset of the last message of the leased batch.
	BatchEnd int64
	// Cursor is the offset of the last committed message.
	Cursor int64
	// HeadAttempts counts failed attempts of the message after Cursor.
	HeadAttempts int
	// LeaseExpiresAt is the lease deadline in Unix milliseconds.
	LeaseExpiresAt int64
	// LeaseID is the lease holding the lane, "" when none. A lease whose
	// deadline has passed stays recorded until the lane is claimed again,
	// so that its expiry can be counted as a failed attempt.
	LeaseID string
	// RetryAt is when the lane may deliver its head again after a negative
	// ack, in Unix milliseconds: a queue's retryDelay (see ApplyPolicy). 0,
	// or any time already past, means at once. A moved cursor or a new claim
	// clears it.
	RetryAt int64
}

// Leased reports whether a live lease holds the lane at nowMs.
func (s *State) Leased(nowMs int64) bool {
	return s.LeaseID != "" && s.LeaseExpiresAt > nowMs
}

// Stale reports whether the lane holds a lease that expired before nowMs
// without being released.
func (s *State) Stale(nowMs int64) bool {
	return s.LeaseID != "" && s.LeaseExpiresAt <= nowMs
}

// Claim records a new lease over the batch ending at batchEnd.
func (s *State) Claim(leaseID string, expiresAtMs, batchEnd int64) {
	s.RetryAt = 0 // a claim happens only once any retry delay has passed
	s.LeaseID = leaseID
	s.LeaseExpiresAt = expiresAtMs
	s.BatchEnd = batchEnd
}

// Release drops the lease.
func (s *State) Release() {
	s.LeaseID = ""
	s.LeaseExpiresAt = 0
	s.BatchEnd = 0
}

// Commit moves the cursor forward to off; a moved cursor has a new head
// message, whose attempts start from zero and which no retry delay holds.
func (s *State) Commit(off int64) {
	if off > s.Cursor {
		s.Cursor = off
		s.HeadAttempts = 0
		s.RetryAt = 0
	}
}

// DeadLetter asks the driver to write a DLQ row for the message at Offset.
type DeadLetter struct {
	Attempts int
	Error    string
	Offset   int64
}

// DefaultDLQError is the DLQ reason when a failing ack carried none.
const DefaultDLQError = "Retries exhausted"

// ExpiredLeaseError is the DLQ reason when lease expiries exhaust the budget.
const ExpiredLeaseError = "lease expired"

// ExpireStale settles a lease that expired without being released: the
// expiry is one failed attempt of the head message, whose offset is head (the
// first message after the cursor, 0 if none). It returns a DeadLetter when the
// attempt exhausts retryLimit; the cursor then moves past the head.
func (s *State) ExpireStale(nowMs int64, head int64, retryLimit int) *DeadLetter {
	if !s.Stale(nowMs) {
		return nil
	}
	s.Release()
	if head == 0 {
		return nil
	}
	// Nothing lies between the cursor and the head, so the cursor can sit
	// just before the head without committing anything. Doing so keeps the
	// attempts counted here with the head: a later negative ack at the head
	// sets the cursor to head-1, which then is no move, so it does not reset
	// them (offsets may have gaps).
	if head-1 > s.Cursor {
		s.Cursor = head - 1
	}
	return s.fail(head, retryLimit, ExpiredLeaseError)
}

// fail records one failed attempt of the head message at off and dead-letters
// it when the budget is spent.
func (s *State) fail(off int64, retryLimit int, reason string) *DeadLetter {
	if s.HeadAttempts < retryLimit {
		s.HeadAttempts++
		return nil
	}
	dl := &DeadLetter{Offset: off, Error: reason, Attempts: s.HeadAttempts + 1}
	s.Commit(off)
	return dl
}

// Ack is one acknowledgement resolved to an offset (0 when its
// transactionId could not be found in the partition).
type Ack struct {
	Error   string
	LeaseID string
	Offset  int64
	Status  store.AckStatus
}

// Verdict is the outcome of one Ack.
type Verdict struct {
	DLQ           bool
	Error         string
	LeaseReleased bool
	Noop          bool
	Success       bool
}

// Apply commits the acks of one call that target this lane and returns one
// verdict per ack, in order, plus the DLQ rows to write.
//
// Rules (see docs/decisions.md): an ack of offset N commits every message up
// to N; a negative ack at L commits everything before L and stops the cursor
// there, so the lowest negative ack of the call wins (dlq > failed > retry at
// the same offset) and cancels every ack above it; the lease is released when
// the cursor reaches the end of the leased batch, or on any negative ack.
func Apply(s *State, acks []Ack, retryLimit int, nowMs int64) ([]Verdict, []DeadLetter) {
	verdicts := make([]Verdict, len(acks))
	live := make([]bool, len(acks)) // acks that passed the checks below
	leaseValid := s.Leased(nowMs)
	neg := -1 // index of the winning negative ack
	for i, a := range acks {
		v := &verdicts[i]
		// What is committed is committed, whoever holds the lease now: a
		// retried ack whose answer was lost (its commit released the
		// lease) learns that it succeeded, instead of reading as a lease
		// gone bad.
		switch {
		case a.Offset != 0 && (a.Offset < s.Cursor || (a.Offset == s.Cursor && a.Status != store.AckCompleted)):
			v.Noop, v.Error = true, api.ReasonAlreadyCommitted
		case a.Offset != 0 && a.Offset == s.Cursor:
			v.Success, v.Noop = true, true // a duplicate commit
		case a.LeaseID != "" && (!leaseValid || a.LeaseID != s.LeaseID):
			v.Error = api.ReasonInvalidLease
		case a.Offset == 0:
			v.Noop, v.Error = true, api.ReasonUnresolvable
		default:
			live[i] = true
			if a.Status != store.AckCompleted && (neg < 0 || a.Offset < acks[neg].Offset ||
				(a.Offset == acks[neg].Offset && a.Status > acks[neg].Status)) {
				neg = i
			}
		}
	}

	// Positive acks below the clamp commit; everything else at or above it is
	// cancelled. A repeat of an offset within the call changes nothing more.
	best := -1
	seen := make(map[int64]bool, len(acks))
	for i, a := range acks {
		if !live[i] || i == neg {
			continue
		}
		if neg >= 0 && (a.Status != store.AckCompleted || a.Offset >= acks[neg].Offset) {
			verdicts[i] = Verdict{Noop: true, Error: api.ReasonCancelled}
			continue
		}
		verdicts[i].Success = true
		if seen[a.Offset] {
			verdicts[i].Noop = true
			continue
		}
		seen[a.Offset] = true
		if best < 0 || a.Offset > acks[best].Offset {
			best = i
		}
	}
	if best >= 0 {
		s.Commit(acks[best].Offset)
	}

	var dead []DeadLetter
	held := s.LeaseID != ""
	if neg >= 0 {
		a := acks[neg]
		v := &verdicts[neg]
		v.Success = true
		s.Commit(a.Offset - 1)
		var dl *DeadLetter
		switch a.Status {
		case store.AckDLQ:
			dl = &DeadLetter{Offset: a.Offset, Error: reasonOr(a.Error), Attempts: s.HeadAttempts + 1}
			s.Commit(a.Offset)
		case store.AckFailed:
			dl = s.fail(a.Offset, retryLimit, reasonOr(a.Error))
		}
		if dl != nil {
			dead = append(dead, *dl)
			v.DLQ = true
		}
		s.Release()
		v.LeaseReleased = held
		return verdicts, dead
	}
	if held && best >= 0 && s.Cursor >= s.BatchEnd {
		s.Release()
		verdicts[best].LeaseReleased = true
	}
	return verdicts, dead
}

func reasonOr(reason string) string {
	if reason == "" {
		return DefaultDLQError
	}
	return reason
}
