package lane

import "github.com/queen-go/queen/internal/store"

// Policy is what a queue's options say about the retries of its lanes.
type Policy struct {
	// RetryDelayMs holds a lane back for this long after a negative ack
	// that leaves its head to be delivered again (retryDelay); 0 redelivers
	// at once, as Queen does.
	RetryDelayMs int64
	// RetryLimit is the number of failed attempts a message may have
	// before it is dead-lettered (retryLimit).
	RetryLimit int
}

// ApplyPolicy is Apply under a queue's whole retry policy: when the winning
// negative ack of the call (failed or retry) leaves the head message to be
// delivered again, the lane is not available again before RetryDelayMs
// has passed. A negative ack that dead-letters the head moves the cursor to
// a new head, which no delay holds; so does a lease expiry, which is not an
// ack (its lease time has already passed).
func ApplyPolicy(s *State, acks []Ack, p Policy, nowMs int64) ([]Verdict, []DeadLetter) {
	verdicts, dead := Apply(s, acks, p.RetryLimit, nowMs)
	if p.RetryDelayMs <= 0 {
		return verdicts, dead
	}
	for i, a := range acks {
		v := verdicts[i]
		if (a.Status == store.AckFailed || a.Status == store.AckRetry) && v.Success && !v.Noop && !v.DLQ {
			s.RetryAt = nowMs + p.RetryDelayMs
			break // a call has one winning negative ack
		}
	}
	return verdicts, dead
}

// Available reports whether a pop may claim the lane at nowMs: no live
// lease holds it and no retry delay.
func (s *State) Available(nowMs int64) bool {
	return !s.Leased(nowMs) && s.RetryAt <= nowMs
}

// PolicyOf returns the retry policy of a queue's options.
func PolicyOf(o store.QueueOptions) Policy {
	return Policy{RetryLimit: o.RetryLimit, RetryDelayMs: int64(o.RetryDelay)}
}
