package store

import (
	"context"
	"time"
)

// TxStore runs transactions of pushes, acks and key/value operations.
type TxStore interface {
	// TxRun runs pushes, acks and key/value operations atomically. A
	// logical failure is returned as *TxAbortError and nothing is written.
	TxRun(ctx context.Context, p *TxRunParams) ([]TxOpResult, error)
}

// TxOp is one operation of a transaction: a push of Items, one Ack, or one
// key/value operation (KV; set, incr or delete, applied with the rules of
// KVApply after the pushes and acks, so that its row locks come last).
type TxOp struct {
	Ack   *Ack
	Items []PushItem
	KV    *KVOp
}

// TxRunParams is an atomic bundle of pushes and acks.
type TxRunParams struct {
	Now            time.Time
	Ops            []TxOp
	RequiredLeases []string
	Tenant         string // every item's Tenant is this one
}

// TxOpResult is the result of one push item, ack or key/value operation
// of a transaction.
type TxOpResult struct {
	Ack  *AckResult
	KV   *KVResult
	Push *PushResult
}

// TxAbortError reports a transaction that was rolled back for a reason the
// client caused (a lease gone, an ack that did not apply, a duplicate push).
type TxAbortError struct {
	Reason string
}

func (e *TxAbortError) Error() string { return e.Reason }
