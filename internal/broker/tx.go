package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
)

// TxOperation is one operation of a transaction: a push of Items, an Ack,
// or a key/value operation (KV: set, incr or delete, checked by package kv
// before the transaction reaches the broker).
type TxOperation struct {
	Ack   *store.Ack
	Items []store.PushItem
	KV    *store.KVOp
}

// TxItem is the result of one pushed item or one ack of a transaction.
type TxItem struct {
	DLQ           bool
	Error         string
	MessageID     string
	PartitionID   string
	Queue         string
	TransactionID string
	Type          string // "push", "ack" or "kv"
	// KV is the result of a key/value operation.
	KV *store.KVResult
	// KVOp is the key/value operation KV answers.
	KVOp *store.KVOp
}

// TxResult is a transaction's outcome. When Success is false nothing was
// written and Results is empty.
type TxResult struct {
	Error         string
	Results       []TxItem
	Success       bool
	TransactionID string
}

// Transaction runs pushes and acks atomically, failing as a whole if any
// required lease is not live, any ack does not apply or any push is a
// duplicate.
func (b *Broker) Transaction(ctx context.Context, c Caller, ops []TxOperation, requiredLeases []string) (*TxResult, error) {
	out := &TxResult{TransactionID: newID(), Results: []TxItem{}}
	if len(ops) == 0 {
		return nil, invalidf("operations array cannot be empty")
	}
	params := &store.TxRunParams{RequiredLeases: requiredLeases, Now: b.now(), Tenant: c.tenant()}
	seen := make(map[dedupKey]bool)
	var queues []store.Wake
	for _, op := range ops {
		if op.KV != nil {
			params.Ops = append(params.Ops, store.TxOp{KV: op.KV})
			continue
		}
		if op.Ack != nil {
			if op.Ack.ConsumerGroup == "" {
				op.Ack.ConsumerGroup = store.QueueMode
			}
			params.Ops = append(params.Ops, store.TxOp{Ack: op.Ack})
			continue
		}
		prepareItems(op.Items, c)
		for _, it := range op.Items {
			k := dedupKey{it.Queue, it.Partition, it.TransactionID}
			if seen[k] {
				out.Error = fmt.Sprintf("duplicate transactionId %s in queue %s partition %s", it.TransactionID, it.Queue, it.Partition)
				b.metrics.Transactions.WithLabelValues("aborted").Inc()
				return out, nil
			}
			seen[k] = true
			queues = addWake(queues, store.QueueKey(params.Tenant, it.Queue))
		}
		params.Ops = append(params.Ops, store.TxOp{Items: op.Items})
	}
	// Encryption at rest (encrypt.go): an item that cannot be sealed aborts.
	if reason, err := b.sealTx(ctx, params.Ops); err != nil || reason != "" {
		if err != nil {
			return nil, err
		}
		out.Error = reason
		b.metrics.Transactions.WithLabelValues("aborted").Inc()
		return out, nil
	}
	res, err := b.store.TxRun(ctx, params)
	var abort *store.TxAbortError
	switch {
	case errors.As(err, &abort):
		out.Error = abort.Reason
		b.metrics.Transactions.WithLabelValues("aborted").Inc()
		return out, nil
	case errors.Is(err, store.ErrInvalid):
		// A value the database refused is the client's mistake: inside a
		// transaction that is a failed transaction, not an HTTP error.
		out.Error = "a value of the transaction was refused by the database (invalid text or too long)"
		b.metrics.Transactions.WithLabelValues("aborted").Inc()
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Success = true
	tally := b.metrics.Tally(params.Tenant)
	var ackRes []store.AckResult
	i := 0
	for _, op := range params.Ops {
		if op.KV != nil {
			r := res[i]
			i++
			out.Results = append(out.Results, TxItem{Type: "kv", KV: r.KV, KVOp: op.KV})
			continue
		}
		if op.Ack != nil {
			r := res[i]
			i++
			out.Results = append(out.Results, TxItem{Type: "ack", TransactionID: op.Ack.TransactionID,
				DLQ: r.Ack.DLQ, Error: r.Ack.Error})
			ackRes = append(ackRes, *r.Ack)
			continue
		}
		for _, it := range op.Items {
			r := res[i]
			i++
			tally.Add(it.Queue, 1)
			out.Results = append(out.Results, TxItem{Type: "push", TransactionID: it.TransactionID,
				MessageID: r.Push.MessageID, PartitionID: r.Push.PartitionID, Queue: it.Queue})
		}
	}
	tally.Committed()
	b.afterAcks(params.Tenant, ackRes)
	if len(queues) > 0 {
		b.hub.kick(queues...)
	}
	return out, nil
}

// NewTransactionID mints the id of a transaction envelope.
func NewTransactionID() string { return newID() }
