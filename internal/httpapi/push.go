package httpapi

import "net/http"

// pushVerdictJSON is one element of a push answer. The mixed casing of its
// keys is Queen's.
type pushVerdictJSON struct {
	Index         int     `json:"index"`
	MessageID     *string `json:"message_id"`
	TransactionID string  `json:"transaction_id"`
	QueueName     string  `json:"queueName"`
	Status        string  `json:"status"`
	Error         *string `json:"error,omitempty"`
}

// push answers 201 with one verdict per item, in request order, whatever
// each item's outcome.
func (a *api) push(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	items, err := DecodePush(body)
	if err != nil {
		return err
	}
	verdicts, err := a.broker.Push(r.Context(), caller(r), items)
	if err != nil {
		return err
	}
	out := make([]pushVerdictJSON, len(verdicts))
	for i, v := range verdicts {
		out[i] = pushVerdictJSON{Index: i, MessageID: nullable(v.MessageID), TransactionID: v.TransactionID,
			QueueName: v.Queue, Status: string(v.Status), Error: nullable(v.Error)}
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
