package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
)

// DefaultFailureError is a dead-lettered input's error when the cycle's
// ack gave none (Queen's text).
const DefaultFailureError = "Streaming cycle reported failure"

// msgRefused is a cycle's error when the database refused one of its
// values: the client's mistake, answered in the cycle's envelope.
const msgRefused = "a value of the cycle was refused by the database (invalid text or too long)"

// Cycle is one batch of a query on one source partition: what it changes
// in the query's state, what it emits, and what it consumed.
type Cycle struct {
	// Ack acknowledges the batch; nil for a cycle that consumed nothing
	// (an idle flush of windows).
	Ack *Ack
	// ConsumerGroup is the group the batch was popped for; "" is queue
	// mode.
	ConsumerGroup string
	// PartitionID is the source partition, as the pop reported it.
	PartitionID string
	// Pushes are the messages the cycle emits, ids not yet minted except a
	// MessageID the client chose.
	Pushes []store.PushItem
	// QueryID is the registered query's id.
	QueryID string
	// ReleaseLease releases the lease even when the ack leaves messages of
	// the leased batch after it; false keeps them leased to the caller (a
	// partial ack, whose rest is redelivered in order when the lease ends).
	ReleaseLease bool
	// StateOps change the query's state of this partition, in order.
	StateOps []store.StreamStateOp
}

// Ack is a cycle's acknowledgement of the last message it consumed.
type Ack struct {
	// Count is how many messages the ack stands for, echoed in the answer
	// (the broker counts consumed messages from the cursor itself).
	Count int
	// Error is the dead letter's error of a failed input.
	Error string
	// LeaseID is checked against the lane's live lease; "" skips the check.
	LeaseID string
	// Failed dead-letters the message (Queen's failed and dlq); otherwise
	// the ack completes it and every message before it.
	Failed bool
	// TransactionID names the message within the cycle's partition.
	TransactionID string
}

// CycleResult is a cycle's outcome. When Success is false nothing of the
// cycle was written and Error says why.
type CycleResult struct {
	Ack             *store.StreamAckResult // nil without an ack, or on failure
	Error           string
	Pushes          []PushVerdict
	Queue           string // the source partition's queue; "" if unknown
	StateOpsApplied int
	Success         bool
}

// PushVerdict is the outcome of one pushed item, in request order.
type PushVerdict struct {
	MessageID     string
	Queue         string
	Status        store.PushStatus
	TransactionID string
}

// Cycle commits a cycle atomically. A cycle that cannot commit (an unknown
// query, an ack that does not apply, a value the database refuses) is
// answered with Success false, and nothing of it is written. A cycle whose
// ack is a duplicate commit (a retry of a cycle whose answer was lost)
// succeeds without writing anything again. Only an error of the store
// itself (an outage) is returned as an error.
func (s *Streams) Cycle(ctx context.Context, c broker.Caller, cy *Cycle) (*CycleResult, error) {
	tenant := store.TenantOrDefault(c.Tenant)
	for i := range cy.StateOps {
		if op := &cy.StateOps[i]; !op.Delete {
			op.WindowEnd = WindowEnd(op.Value)
		}
	}
	broker.PrepareEmitted(cy.Pushes, tenant, c.Subject)
	if s.seal != nil && len(cy.Pushes) > 0 {
		// Encryption at rest: a sink queue that encrypts its payloads gets
		// them sealed, or the cycle fails (nothing is stored in plaintext).
		reason, err := s.seal(ctx, cy.Pushes)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			return &CycleResult{Error: reason, Pushes: []PushVerdict{}}, nil
		}
	}
	p := &store.StreamCycleParams{
		ConsumerGroup: cy.ConsumerGroup, Now: s.now(), PartitionID: cy.PartitionID, Pushes: cy.Pushes,
		QueryID: cy.QueryID, ReleaseLease: cy.ReleaseLease, StateOps: cy.StateOps, Tenant: tenant,
	}
	if p.ConsumerGroup == "" {
		p.ConsumerGroup = store.QueueMode
	}
	if a := cy.Ack; a != nil {
		p.Ack = &store.StreamAck{Count: a.Count, Error: a.Error, LeaseID: a.LeaseID, Status: store.AckCompleted,
			TransactionID: a.TransactionID}
		if a.Failed {
			p.Ack.Status = store.AckDLQ
			if p.Ack.Error == "" {
				p.Ack.Error = DefaultFailureError
			}
		}
	}
	res, err := s.store.StreamCycle(ctx, p)
	var ce *store.StreamCycleError
	switch {
	case errors.As(err, &ce):
		return &CycleResult{Error: ce.Reason, Pushes: []PushVerdict{}}, nil
	case errors.Is(err, store.ErrInvalid):
		return &CycleResult{Error: msgRefused, Pushes: []PushVerdict{}}, nil
	case err != nil:
		return nil, err
	}
	out := &CycleResult{Ack: res.Ack, Queue: res.Queue, StateOpsApplied: res.StateOpsApplied, Success: true,
		Pushes: make([]PushVerdict, len(res.Pushes))}
	var woken []string
	queued, dupes := 0, 0
	for i, r := range res.Pushes {
		it := &cy.Pushes[i]
		out.Pushes[i] = PushVerdict{MessageID: r.MessageID, Queue: it.Queue, Status: r.Status, TransactionID: it.TransactionID}
		switch r.Status {
		case store.PushQueued:
			queued++
			woken = appendNew(woken, store.QueueKey(tenant, it.Queue))
		case store.PushDuplicate:
			dupes++
		}
	}
	if a := res.Ack; a != nil && !res.Replay {
		if a.LeaseReleased && res.Queue != "" {
			woken = appendNew(woken, store.QueueKey(tenant, res.Queue))
		}
		s.countAck(a)
	}
	if len(woken) > 0 {
		s.wake(woken...)
	}
	if s.metrics != nil {
		s.metrics.Pushed(queued)
		s.metrics.PushDuplicates.Add(float64(dupes))
	}
	return out, nil
}

func (s *Streams) countAck(a *store.StreamAckResult) {
	if s.metrics == nil {
		return
	}
	result := "success"
	if a.DLQ {
		result = "dlq"
	}
	s.metrics.Acks.WithLabelValues(result).Inc()
}

// WindowEnd returns the numeric "windowEnd" of a JSON object, which
// ripe_at_or_before compares, or nil when the value is not an object or
// has no such number (Queen compares only numbers).
func WindowEnd(value []byte) *float64 {
	if !bytes.Contains(value, []byte(`"windowEnd"`)) {
		return nil // the common case costs one scan, no parse
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(value, &obj) != nil {
		return nil
	}
	raw := bytes.TrimSpace(obj["windowEnd"])
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil
	}
	return &f
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// StateQuery selects state rows of one (query, partition); the filters
// given are ANDed.
type StateQuery struct {
	KeyPrefix      string
	Keys           []string
	PartitionID    string
	QueryID        string
	RipeAtOrBefore *float64 // rows whose value's windowEnd is at or before it
}

// State reads the tenant's state rows matching q, ordered by key. An
// unknown query has none.
func (s *Streams) State(ctx context.Context, tenant string, q StateQuery) ([]store.StreamStateRow, error) {
	return s.store.StreamStateGet(ctx, &store.StreamStateGetParams{
		KeyPrefix: q.KeyPrefix, Keys: q.Keys, Now: s.now(), PartitionID: q.PartitionID, QueryID: q.QueryID,
		RipeAtOrBefore: q.RipeAtOrBefore, Tenant: tenant,
	})
}
