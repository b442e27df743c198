package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
)

// push answers 201 with one verdict per item, in request order, whatever
// each item's outcome.
func (g *messageRoutes) push(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	items, err := DecodePush(body)
	if err != nil {
		return err
	}
	verdicts, err := g.broker.Push(r.Context(), caller(r), items)
	if err != nil {
		return err
	}
	out := make([]api.PushVerdict, len(verdicts))
	for i, v := range verdicts {
		out[i] = api.PushVerdict{Index: i, MessageID: nullable(v.MessageID), TransactionID: v.TransactionID,
			QueueName: v.Queue, Status: v.Status, Error: nullable(v.Error)}
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
