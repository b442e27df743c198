package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
)

type pushVerdictJSON struct {
	Index         int     `json:"index"`
	MessageID     *string `json:"message_id"`
	TransactionID string  `json:"transaction_id"`
	QueueName     string  `json:"queueName"`
	Status        string  `json:"status"`
	Error         *string `json:"error,omitempty"`
}

func (a *api) push(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	items, err := DecodePush(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	verdicts, err := a.broker.Push(r.Context(), caller(r), items)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]pushVerdictJSON, len(verdicts))
	for i, v := range verdicts {
		out[i] = pushVerdictJSON{Index: i, MessageID: nullable(v.MessageID), TransactionID: v.TransactionID,
			QueueName: v.Queue, Status: string(v.Status), Error: nullable(v.Error)}
	}
	writeJSON(w, http.StatusCreated, out)
}

func (a *api) pop(w http.ResponseWriter, r *http.Request) {
	req, err := decodePop(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	req.Queue, req.Partition = r.PathValue("queue"), r.PathValue("partition")
	if req.Queue != "" {
		req.Namespace, req.Task = "", ""
	}
	res, err := a.broker.Pop(r.Context(), caller(r), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if res == nil {
		noContent(w)
		return
	}
	body := appendPopBody(make([]byte, 0, 512+len(res.Messages)*384), res)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

type ackVerdictJSON struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

func (a *api) ack(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ack, err := DecodeAck(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.commitAcks(w, r, []store.Ack{ack})
}

func (a *api) ackBatch(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	acks, err := DecodeAckBatch(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.commitAcks(w, r, acks)
}

func (a *api) commitAcks(w http.ResponseWriter, r *http.Request, acks []store.Ack) {
	results, err := a.broker.Ack(r.Context(), caller(r), acks)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]ackVerdictJSON, len(results))
	for i, res := range results {
		out[i] = ackVerdictJSON{Index: i, TransactionID: acks[i].TransactionID, Success: res.Success,
			Error: nullable(res.Error), LeaseReleased: res.LeaseReleased, DLQ: res.DLQ, Noop: res.Noop}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) extend(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	seconds, err := DecodeExtend(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.broker.ExtendLease(r.Context(), caller(r), r.PathValue("leaseId"), seconds)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var expires *string
	if res.ExpiresAt != nil {
		s := timestamp(*res.ExpiresAt)
		expires = &s
	}
	writeJSON(w, http.StatusOK, map[string]any{"renewed": res.Renewed, "expiresAt": expires})
}

type txItemJSON struct {
	Index         int             `json:"index"`
	Type          string          `json:"type"`
	Success       bool            `json:"success"`
	TransactionID string          `json:"transactionId"`
	MessageID     string          `json:"messageId,omitempty"`
	PartitionID   string          `json:"partitionId,omitempty"`
	QueueName     string          `json:"queueName,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"` // null on acks, absent on pushes
	DLQ           *bool           `json:"dlq,omitempty"`
}

type txJSON struct {
	TransactionID string       `json:"transactionId"`
	Success       bool         `json:"success"`
	Error         *string      `json:"error,omitempty"`
	Results       []txItemJSON `json:"results"`
}

// transaction answers pre-flight failures with 400 and the transaction
// envelope, logical failures with 200 and success:false.
func (a *api) transaction(w http.ResponseWriter, r *http.Request) {
	preflight := func(err error) {
		var bad *badRequest
		var invalid *broker.InvalidError
		msg := ""
		switch {
		case errors.As(err, &bad):
			msg = bad.msg
		case errors.As(err, &invalid):
			msg = invalid.Msg
		default:
			a.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusBadRequest, txJSON{TransactionID: broker.NewTransactionID(), Error: &msg,
			Results: []txItemJSON{}})
	}
	body, err := readBody(r)
	if err != nil {
		preflight(err)
		return
	}
	tx, err := DecodeTransaction(body)
	if err != nil {
		preflight(err)
		return
	}
	res, err := a.broker.Transaction(r.Context(), caller(r), tx.Ops, tx.RequiredLeases)
	if err != nil {
		preflight(err)
		return
	}
	out := txJSON{TransactionID: res.TransactionID, Success: res.Success, Error: nullable(res.Error),
		Results: make([]txItemJSON, len(res.Results))}
	for i, it := range res.Results {
		j := txItemJSON{Index: i, Type: it.Type, Success: true, TransactionID: it.TransactionID}
		if it.Type == "push" {
			j.MessageID, j.PartitionID, j.QueueName = it.MessageID, it.PartitionID, it.Queue
		} else {
			dlq := it.DLQ
			j.DLQ, j.Error = &dlq, json.RawMessage("null")
		}
		out.Results[i] = j
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) configure(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	c, err := DecodeConfigure(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	q, err := a.broker.Configure(r.Context(), caller(r), c.Queue, c.Namespace, c.Task, c.Options)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"configured": true, "queueId": q.ID, "partitionId": q.DefaultPartitionID, "queue": q.Name,
		"namespace": q.Namespace, "task": q.Task, "options": q.Options,
	})
}

func (a *api) deleteQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	existed, err := a.broker.DeleteQueue(r.Context(), caller(r), name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if !existed {
		writeJSON(w, http.StatusOK, map[string]any{"deleted": false, "queue": name,
			"message": "Queue '" + name + "' not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "queue": name})
}

// caller is who the request acts for: without authentication and tenancy,
// the default tenant and no subject.
func caller(r *http.Request) broker.Caller { return broker.Caller{} }
