package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
)

// StreamStore keeps Queen's stream queries: their registrations, the state
// each keeps per source partition, and the cycles that commit that state
// together with the messages a cycle pushes and the acknowledgement of its
// input. Every method is scoped to p.Tenant.
//
// A query's state lives in shards, one per (query, source partition); a
// shard's rows and bytes are counted as they are written, so that their size
// is read without reading the state. State a query can no longer reach (its
// query deleted, its state reset, its partition deleted with its queue) is
// freed in bounded steps by StreamPurge.
type StreamStore interface {
	// StreamCycle commits one cycle in one transaction, serialised with
	// every other cycle of the same (query, partition): the state ops, then
	// the pushes, then the ack, each through the same code as MessagePushMany
	// and MessageAckMany. A cycle that cannot commit as a whole returns a
	// *StreamCycleError and writes nothing.
	StreamCycle(ctx context.Context, p *StreamCycleParams) (*StreamCycleResult, error)
	// StreamPurge frees up to p.Limit state rows no query can reach and
	// reports whether any remain.
	StreamPurge(ctx context.Context, p *StreamPurgeParams) (*QueuePurgeResult, error)
	// StreamQueryDelete deletes a query by name and reports whether it
	// existed; its state is unreachable at once and freed by StreamPurge.
	StreamQueryDelete(ctx context.Context, p *StreamQueryDeleteParams) (bool, error)
	// StreamQueryList lists a page of queries by name with the size of
	// their state, or the one named by p.Name (ErrQueryNotFound if none).
	StreamQueryList(ctx context.Context, p *StreamQueryListParams) (*StreamQueryListResult, error)
	// StreamQueryRegister creates a query, or updates the one of that name:
	// the same config hash keeps its state; another hash with p.Reset
	// starts it afresh; another hash without p.Reset changes nothing and
	// reports Mismatch.
	StreamQueryRegister(ctx context.Context, p *StreamQueryRegisterParams) (*StreamQueryRegisterResult, error)
	// StreamStateGet reads the state rows of one (query, partition) that
	// pass every filter given, ordered by key (byte-wise). An unknown query
	// has no rows.
	StreamStateGet(ctx context.Context, p *StreamStateGetParams) ([]StreamStateRow, error)
}

// ErrQueryNotFound is the error of a control-plane request naming a stream
// query that does not exist.
var ErrQueryNotFound = &NotFoundError{Text: api.TextQueryNotFound}

// StreamCycleError reports a cycle that did not commit for a reason the
// client caused (an unknown query, an ack that does not apply). Nothing of
// the cycle was written.
type StreamCycleError struct {
	Reason string
}

func (e *StreamCycleError) Error() string { return e.Reason }

// StreamQueryRegisterParams name a query and what it reads and writes.
type StreamQueryRegisterParams struct {
	ConfigHash  string
	Name        string
	Now         time.Time
	Reset       bool // with another config hash: drop the state and start afresh
	SinkQueue   string
	SourceQueue string
	Tenant      string
}

// StreamQueryRegisterResult is a registration's outcome. With Mismatch
// nothing was written and QueryID is the existing query's.
type StreamQueryRegisterResult struct {
	Fresh    bool // the query was created
	Mismatch bool // another config hash is registered and Reset was not asked
	QueryID  string
	Reset    bool // the state was dropped for the new config hash
}

// StreamStateOp is one change of state: an upsert of Key to Value, or with
// Delete its removal.
type StreamStateOp struct {
	Delete bool
	Key    string
	Value  []byte // raw JSON
	// WindowEnd is Value's numeric "windowEnd" when it has one, which
	// StreamStateGetParams.RipeAtOrBefore compares.
	WindowEnd *float64
}

// StreamAck acknowledges a cycle's input: the message of TransactionID in
// the cycle's partition and, with AckCompleted, every message before it;
// with AckDLQ it is dead-lettered at once.
type StreamAck struct {
	Count         int // messages the ack stands for, echoed in the result
	Error         string
	LeaseID       string // "" skips the lease check
	Status        AckStatus
	TransactionID string
}

// StreamCycleParams are one cycle of a query on one source partition.
type StreamCycleParams struct {
	Ack           *StreamAck // nil: nothing to acknowledge
	ConsumerGroup string
	Now           time.Time
	PartitionID   string // the source partition, as a pop reported it
	Pushes        []PushItem
	QueryID       string
	// ReleaseLease releases the lane's lease after a completed ack even
	// when messages of the leased batch remain after the cursor; without
	// it those messages stay leased (a partial ack).
	ReleaseLease bool
	StateOps     []StreamStateOp
	Tenant       string
}

// StreamCycleResult is a committed cycle. Replay is set, and nothing was
// written, when the ack's message is the one the lane's cursor is already
// on: the cycle is a retry of one that committed.
type StreamCycleResult struct {
	Ack             *StreamAckResult // nil without an ack
	Pushes          []PushResult
	Queue           string // the source partition's queue; "" if unknown
	Replay          bool
	StateOpsApplied int
}

// StreamAckResult is what a cycle's ack did.
type StreamAckResult struct {
	Count         int
	DLQ           bool
	LeaseReleased bool
}

// StreamStateGetParams select state rows of one (query, partition); the
// filters given are ANDed.
type StreamStateGetParams struct {
	KeyPrefix      string   // "" for none
	Keys           []string // empty for none
	Now            time.Time
	PartitionID    string
	QueryID        string
	RipeAtOrBefore *float64 // rows whose WindowEnd is at or before it
	Tenant         string
}

// StreamStateRow is one state row.
type StreamStateRow struct {
	Key       string
	UpdatedAt time.Time
	Value     []byte // raw JSON
}

// StreamQueryDeleteParams name the query to delete.
type StreamQueryDeleteParams struct {
	Name   string
	Now    time.Time
	Tenant string
}

// StreamQueryListParams select a page of queries by name, or the one named.
type StreamQueryListParams struct {
	Limit  int
	Name   string // "" lists a page
	Now    time.Time
	Offset int
	Tenant string
}

// StreamQueryListResult is a page of queries and how many there are.
type StreamQueryListResult struct {
	Queries []StreamQuery
	Total   int
}

// StreamQuery is a registered query and the size of its state.
type StreamQuery struct {
	ConfigHash  string
	CreatedAt   time.Time
	ID          string
	Name        string
	SinkQueue   string
	SourceQueue string
	State       StreamStateSize
	UpdatedAt   time.Time
}

// StreamStateSize is the size of a query's state: the partitions it keeps
// state for, its rows, and their bytes (keys and JSON values as stored).
type StreamStateSize struct {
	Bytes      int64
	Partitions int
	Rows       int64
}

// StreamPurgeParams bound one purge step.
type StreamPurgeParams struct {
	Limit int // rows at most; <= 0 means 1000
	Now   time.Time
}

// A cycle without an ack is an idle flush: it deletes the windows that it
// read a moment before as ripe and emits them, outside the lease of the
// partition's lane. Beside it the lease holder reads the same windows,
// folds a batch into them and commits; whichever commits second would count
// from what it read before the other's commit (a window emitted twice, or
// grown and then deleted by the flush). So a driver fails a cycle without
// an ack, and writes nothing of it, while the lane of (partition, consumer
// group) holds a live lease (the holder's cycle decides those windows); and
// one that also pushes fails when a key it deletes is already gone (another
// cycle closed and emitted that window since the flush read it). The driver
// holds the lane's row locked from that check to the commit, so a pop
// cannot lease the lane in between. The SDKs flush again at their next
// tick, from state read afresh.

// FlushDeletes returns the keys a cycle without an ack that pushes deletes
// before anything else of the cycle writes them: each must exist when it
// runs. It is empty for any other cycle: a missing key is otherwise fine.
func FlushDeletes(p *StreamCycleParams) map[string]bool {
	out := map[string]bool{}
	if p.Ack != nil || len(p.Pushes) == 0 {
		return out
	}
	seen := make(map[string]bool, len(p.StateOps))
	for _, op := range p.StateOps {
		if !seen[op.Key] && op.Delete {
			out[op.Key] = true
		}
		seen[op.Key] = true
	}
	return out
}

// FlushStateGone is the failure of a cycle without an ack that deletes
// key, which is gone.
func FlushStateGone(key string) *StreamCycleError {
	return &StreamCycleError{Reason: fmt.Sprintf("%s: key %q is gone", api.ReasonCycleStateGone, key)}
}

// ErrFlushLeased is the failure of a cycle without an ack while the lane is
// leased.
var ErrFlushLeased = &StreamCycleError{Reason: api.ReasonCycleLeased}

// LastStateOps returns the last op of every key of ops, ordered by key:
// applying them is applying ops in order (each op replaces or removes its
// key whole), and a driver that writes them in key order locks rows in one
// order.
func LastStateOps(ops []StreamStateOp) []StreamStateOp {
	last := make(map[string]int, len(ops))
	for i := range ops {
		last[ops[i].Key] = i
	}
	out := make([]StreamStateOp, 0, len(last))
	for i := range ops {
		if last[ops[i].Key] == i {
			out = append(out, ops[i])
		}
	}
	slices.SortFunc(out, func(a, b StreamStateOp) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// CycleAckReason is the error of a cycle whose ack did not apply, given the
// ack verdict's text: Queen's texts where the stored procedure had its own
// ("Invalid or expired lease", "Message not found"), the message plane's
// otherwise ("already committed").
func CycleAckReason(verdict string) string {
	switch verdict {
	case api.ReasonInvalidLease:
		return api.ReasonCycleLease
	case api.ReasonUnresolvable:
		return api.TextMessageNotFound
	case "":
		return "the ack did not apply"
	}
	return verdict
}

// CyclePushRefused returns the failure of a cycle one of whose pushes was
// not stored (a queue full), or nil when every push was queued or is a
// duplicate (which a cycle accepts: deterministic output ids are meant to
// be idempotent).
func CyclePushRefused(items []PushItem, res []PushResult) *StreamCycleError {
	for i, r := range res {
		if r.Status != PushQueued && r.Status != PushDuplicate {
			it := items[i]
			return &StreamCycleError{Reason: fmt.Sprintf("push of transactionId %s to queue %s partition %s failed: %s",
				it.TransactionID, it.Queue, it.Partition, r.Error)}
		}
	}
	return nil
}
