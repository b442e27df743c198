package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/internal/store"
)

// ackVerdictJSON is one element of an ack answer: exactly these seven keys.
type ackVerdictJSON struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

func (a *api) ack(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ack, err := DecodeAck(body)
	if err != nil {
		return err
	}
	return a.commitAcks(w, r, []store.Ack{ack})
}

func (a *api) ackBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	acks, err := DecodeAckBatch(body)
	if err != nil {
		return err
	}
	return a.commitAcks(w, r, acks)
}

// commitAcks answers 200 with one verdict per acknowledgement, in request
// order, whatever each one's outcome.
func (a *api) commitAcks(w http.ResponseWriter, r *http.Request, acks []store.Ack) error {
	results, err := a.broker.Ack(r.Context(), caller(r), acks)
	if err != nil {
		return err
	}
	out := make([]ackVerdictJSON, len(results))
	for i, res := range results {
		out[i] = ackVerdictJSON{Index: i, TransactionID: acks[i].TransactionID, Success: res.Success,
			Error: nullable(res.Error), LeaseReleased: res.LeaseReleased, DLQ: res.DLQ, Noop: res.Noop}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
