package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/store"
)

type txItemJSON struct {
	Index         int             `json:"index"`
	Type          string          `json:"type"`
	Success       bool            `json:"success"`
	TransactionID string          `json:"transactionId,omitempty"`
	MessageID     string          `json:"messageId,omitempty"`
	PartitionID   string          `json:"partitionId,omitempty"`
	QueueName     string          `json:"queueName,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"` // null on acks, absent on pushes
	DLQ           *bool           `json:"dlq,omitempty"`
	// Key/value operations (type "kv").
	Op        string          `json:"op,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Key       string          `json:"key,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   *int64          `json:"version,omitempty"`
	Deleted   *bool           `json:"deleted,omitempty"`
}

// txJSON is the transaction envelope, of successes, logical failures and
// pre-flight failures alike.
type txJSON struct {
	TransactionID string       `json:"transactionId"`
	Success       bool         `json:"success"`
	Error         *string      `json:"error,omitempty"`
	Results       []txItemJSON `json:"results"`
}

// transaction answers logical failures with 200 and success:false. Its
// errors are pre-flight failures: those that map to 400 are answered in the
// transaction envelope (see writeError).
func (a *api) transaction(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return &preflightError{err}
	}
	tx, err := DecodeTransaction(body)
	if err != nil {
		return &preflightError{err}
	}
	if err := a.checkTxKV(tx); err != nil {
		return &preflightError{err}
	}
	res, err := a.broker.Transaction(r.Context(), caller(r), tx.Ops, tx.RequiredLeases)
	if err != nil {
		return &preflightError{err}
	}
	out := txJSON{TransactionID: res.TransactionID, Success: res.Success, Error: nullable(res.Error),
		Results: make([]txItemJSON, len(res.Results))}
	for i, it := range res.Results {
		j := txItemJSON{Index: i, Type: it.Type, Success: true, TransactionID: it.TransactionID}
		switch it.Type {
		case "push":
			j.MessageID, j.PartitionID, j.QueueName = it.MessageID, it.PartitionID, it.Queue
		case "kv":
			j.Op, j.Namespace, j.Key = string(it.KVOp.Kind), it.KVOp.Namespace, it.KVOp.Key
			if it.KVOp.Kind == store.KVOpDelete {
				deleted := it.KV.Found
				j.Deleted = &deleted
			} else if e := it.KV.Entry; e != nil {
				v := e.Version
				j.Value, j.Version = e.Value, &v
			}
		default:
			dlq := it.DLQ
			j.DLQ, j.Error = &dlq, json.RawMessage("null")
		}
		out.Results[i] = j
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// checkTxKV applies the key/value rules to a transaction's key/value
// operations: 403 when the feature is off, then its limits (413) and
// checks (400). A transaction is a message-plane route: it is never
// rate-limited.
func (a *api) checkTxKV(tx *Transaction) error {
	var ops []store.KVOp
	for _, op := range tx.Ops {
		if op.KV != nil {
			ops = append(ops, *op.KV)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if !a.enabled(featureKV) {
		return disabledError(featureKV)
	}
	return a.kv.Check(ops, true)
}
