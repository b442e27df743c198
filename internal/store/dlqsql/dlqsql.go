// Package dlqsql is the algorithm of a dead-letter requeue, written once:
// which messages a requeue takes (the named ones, each once, or the oldest
// dead letters of a filter), which named ones fail and why, the order they
// are pushed in (by offset within each partition), the push items under
// fresh retry transactionIds, and the answer. An engine answers for how it
// finds and locks the messages and their dead letters (pick then delete on
// SQLite's writer, delete first on PostgreSQL so that two requeues cannot
// both push a message), how it finds free retry ids, and its push.
package dlqsql

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// DefaultLimit is how many dead letters a requeue by filter takes when its
// params say 0.
const DefaultLimit = 1000

// Pick is what a requeue needs of a message it takes.
type Pick struct {
	Key         int64  // the partition's row id
	PartitionID string // the partition's uuid
	Partition   string
	Queue       string
	Seq         int64
	// The message's own.
	TransactionID, TraceID, ProducerSub string
	Payload                             []byte
	Sealed                              store.Seal // how Payload is sealed, kept by the requeue
}

// Requeue is what a requeue needs of an engine inside its transaction; P
// is the engine's pick.
type Requeue[P any] struct {
	// Pick is what requeue needs of p.
	Pick func(p P) *Pick
	// Refs takes the named messages (each named once) that have a dead
	// letter matching the filter; the others are failures (Sift).
	Refs func(tenant string, refs []store.MessageRef, f *store.DLQFilter) ([]P, []store.RequeueFailure, error)
	// Oldest takes the messages of the oldest limit dead letters matching
	// the filter.
	Oldest func(tenant string, f *store.DLQFilter, limit int) ([]P, error)
	// FreeIDs returns, per pick in order, the first free
	// store.RetryTransactionID of its transactionId in its partition that
	// no earlier pick was given.
	FreeIDs func(picks []P) ([]string, error)
	// Push pushes items as MessagePushMany does, one result per item.
	Push func(items []store.PushItem, now time.Time) ([]store.PushResult, error)
	// Taken is the error for a retry transactionId found taken at the push.
	Taken func(txn string) error
	// Done, when set, runs once the picks are pushed (deletes their dead
	// letters, where Refs and Oldest did not).
	Done func(picks []P) error
}

// RequeueIn requeues p's selection in an engine's transaction.
func RequeueIn[P any](e Requeue[P], p *store.DLQRequeueParams) (*store.DLQRequeueResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.DLQRequeueResult{Requeued: []store.Requeued{}}
	var picks []P
	var err error
	if len(p.Refs) > 0 {
		picks, out.Failed, err = e.Refs(tenant, uniqueRefs(p.Refs), &p.DLQFilter)
	} else {
		limit := p.Limit
		if limit <= 0 {
			limit = DefaultLimit
		}
		picks, err = e.Oldest(tenant, &p.DLQFilter, limit)
	}
	if err != nil || len(picks) == 0 {
		return out, err
	}
	// In offset order within each partition, as they were pushed first.
	slices.SortStableFunc(picks, func(a, b P) int {
		pa, pb := e.Pick(a), e.Pick(b)
		return cmp.Or(cmp.Compare(pa.Key, pb.Key), cmp.Compare(pa.Seq, pb.Seq))
	})
	txns, err := e.FreeIDs(picks)
	if err != nil {
		return nil, err
	}
	items := make([]store.PushItem, len(picks))
	for i, pk := range picks {
		m := e.Pick(pk)
		items[i] = store.PushItem{MessageID: uuid.Must(uuid.NewV7()).String(), Partition: m.Partition,
			Payload: m.Payload, ProducerSub: m.ProducerSub, Queue: m.Queue, Tenant: tenant, TraceID: m.TraceID,
			TransactionID: txns[i], Sealed: m.Sealed} // the same queue: its seal still opens
	}
	res, err := e.Push(items, p.Now)
	if err != nil {
		return nil, err
	}
	out.Requeued = make([]store.Requeued, len(picks))
	for i, pk := range picks {
		if res[i].Status != store.PushQueued {
			return nil, fmt.Errorf("requeue %s: push answered %s: %w", txns[i], res[i].Status, e.Taken(txns[i]))
		}
		m := e.Pick(pk)
		out.Requeued[i] = store.Requeued{MessageID: items[i].MessageID, OriginalTransactionID: m.TransactionID,
			PartitionID: m.PartitionID, Queue: m.Queue, TransactionID: txns[i]}
	}
	if e.Done != nil {
		if err := e.Done(picks); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// uniqueRefs returns refs without repeats, in order.
func uniqueRefs(refs []store.MessageRef) []store.MessageRef {
	seen := make(map[store.MessageRef]bool, len(refs))
	out := make([]store.MessageRef, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// Sift returns the picks of refs and the failures of the others: found[i]
// is refs[i]'s message (ok false: no such message), and dead reports
// whether it has a dead letter matching the filter.
func Sift[P any](refs []store.MessageRef, found func(i int) (P, bool), dead func(P) bool) ([]P, []store.RequeueFailure) {
	var picks []P
	var failed []store.RequeueFailure
	for i, r := range refs {
		pk, ok := found(i)
		switch {
		case !ok:
			failed = append(failed, store.RequeueFailure{MessageRef: r, Error: api.TextMessageNotFound})
		case !dead(pk):
			failed = append(failed, store.RequeueFailure{MessageRef: r, Error: store.ErrNotDeadLettered.Error()})
		default:
			picks = append(picks, pk)
		}
	}
	return picks, failed
}
