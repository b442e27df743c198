package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/kv"
)

// messageRoutes are the message plane: push, pop, ack, lease extension and
// transactions (push.go, pop.go, ack.go, lease.go, transaction.go).
type messageRoutes struct {
	a      *adapter // parking and the write timeout of long polls
	broker *broker.Broker
	kv     *kv.KV // the rules of a transaction's key/value operations; nil: off
}

func (g *messageRoutes) Routes() []Route {
	tx := row(AccessReadWrite, "POST", "/api/v1/transaction", "transaction", g.transaction)
	tx.Envelope = transactionEnvelope
	return []Route{
		row(AccessWriteOnly, "POST", "/api/v1/push", "push", g.push),
		row(AccessReadWrite, "GET", "/api/v1/pop", "pop", g.pop),
		row(AccessReadWrite, "GET", "/api/v1/pop/queue/{queue}", "pop_queue", g.pop),
		row(AccessReadWrite, "GET", "/api/v1/pop/queue/{queue}/partition/{partition}", "pop_partition", g.pop),
		row(AccessReadWrite, "POST", "/api/v1/ack", "ack", g.ack),
		row(AccessReadWrite, "POST", "/api/v1/ack/batch", "ack_batch", g.ackBatch),
		row(AccessReadWrite, "POST", "/api/v1/lease/{leaseId}/extend", "lease_extend", g.extend),
		tx,
	}
}

// transactionEnvelope answers a transaction's 400s (its pre-flight
// failures: a body that does not decode, a rule an operation breaks) in the
// transaction's own envelope, with a fresh transactionId and no results;
// its other errors in Queen's.
var transactionEnvelope = &Envelope{Name: "transaction", Write: func(w http.ResponseWriter, e *api.Error) {
	if e.Status != http.StatusBadRequest {
		QueenEnvelope.Write(w, e)
		return
	}
	msg := e.Message
	writeJSON(w, e.Status, api.TransactionResponse{TransactionID: broker.NewTransactionID(), Error: &msg,
		Results: []api.TransactionResult{}})
}}
