package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// transaction answers logical failures with 200 and success:false. Its
// errors are pre-flight failures, which its envelope answers
// (transactionEnvelope).
func (g *messageRoutes) transaction(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	tx, err := DecodeTransaction(body)
	if err != nil {
		return err
	}
	if err := g.checkTxKV(tx); err != nil {
		return err
	}
	res, err := g.broker.Transaction(r.Context(), caller(r), tx.Ops, tx.RequiredLeases)
	if err != nil {
		return err
	}
	out := api.TransactionResponse{TransactionID: res.TransactionID, Success: res.Success, Error: nullable(res.Error),
		Results: make([]api.TransactionResult, len(res.Results))}
	for i, it := range res.Results {
		j := api.TransactionResult{Index: i, Type: it.Type, Success: true, TransactionID: it.TransactionID}
		switch it.Type {
		case api.OperationPush:
			j.MessageID, j.PartitionID, j.QueueName = it.MessageID, it.PartitionID, it.Queue
		case api.OperationKV:
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
func (g *messageRoutes) checkTxKV(tx *Transaction) error {
	var ops []store.KVOp
	for _, op := range tx.Ops {
		if op.KV != nil {
			ops = append(ops, *op.KV)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if g.kv == nil || !g.kv.Enabled() {
		return api.ErrFeatureDisabled.With(api.TextKVDisabled)
	}
	return g.kv.Check(ops, true)
}
