package httpapi

import (
	"encoding/json"
	"net/http"
)

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
	res, err := a.broker.Transaction(r.Context(), caller(r), tx.Ops, tx.RequiredLeases)
	if err != nil {
		return &preflightError{err}
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
	return nil
}
