package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

func (g *messageRoutes) ack(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ack, err := DecodeAck(body)
	if err != nil {
		return err
	}
	return g.commitAcks(w, r, []store.Ack{ack})
}

func (g *messageRoutes) ackBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	acks, err := DecodeAckBatch(body)
	if err != nil {
		return err
	}
	return g.commitAcks(w, r, acks)
}

// commitAcks answers 200 with one verdict per acknowledgement, in request
// order, whatever each one's outcome.
func (g *messageRoutes) commitAcks(w http.ResponseWriter, r *http.Request, acks []store.Ack) error {
	results, err := g.broker.Ack(r.Context(), caller(r), acks)
	if err != nil {
		return err
	}
	out := make([]api.AckVerdict, len(results))
	for i, res := range results {
		out[i] = api.AckVerdict{Index: i, TransactionID: acks[i].TransactionID, Success: res.Success,
			Error: nullable(res.Error), LeaseReleased: res.LeaseReleased, DLQ: res.DLQ, Noop: res.Noop}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
