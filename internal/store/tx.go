package store

import (
	"context"
	"time"
)

// TxStore runs transactions of pushes and acks.
type TxStore interface {
	// TxRun runs pushes and acks atomically. A logical failure is returned
	// as *TxAbortError and nothing is written.
	TxRun(ctx context.Context, p *TxRunParams) ([]TxOpResult, error)
}

// TxOp is one operation of a transaction: either a push of Items or one Ack.
type TxOp struct {
	Ack   *Ack
	Items []PushItem
}

// TxRunParams is an atomic bundle of pushes and acks.
type TxRunParams struct {
	Now            time.Time
	Ops            []TxOp
	RequiredLeases []string
	Tenant         string // every item's Tenant is this one
}

// TxOpResult is the result of one push item or one ack of a transaction.
type TxOpResult struct {
	Ack  *AckResult
	Push *PushResult
}

// TxAbortError reports a transaction that was rolled back for a reason the
// client caused (a lease gone, an ack that did not apply, a duplicate push).
type TxAbortError struct {
	Reason string
}

func (e *TxAbortError) Error() string { return e.Reason }
