package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/internal/store"
)

// configureJSON is configure's answer: the queue's full configuration.
type configureJSON struct {
	Configured  bool               `json:"configured"`
	QueueID     string             `json:"queueId"`
	PartitionID string             `json:"partitionId"`
	Queue       string             `json:"queue"`
	Namespace   string             `json:"namespace"`
	Task        string             `json:"task"`
	Options     store.QueueOptions `json:"options"`
}

func (a *api) configure(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	c, err := DecodeConfigure(body)
	if err != nil {
		return err
	}
	q, err := a.broker.Configure(r.Context(), caller(r), c.Queue, c.Namespace, c.Task, c.Options)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, configureJSON{Configured: true, QueueID: q.ID, PartitionID: q.DefaultPartitionID,
		Queue: q.Name, Namespace: q.Namespace, Task: q.Task, Options: q.Options})
	return nil
}

// queueDeleteJSON answers a queue deletion: 200 whether or not the queue
// existed, since clients delete before they create.
type queueDeleteJSON struct {
	Deleted bool   `json:"deleted"`
	Queue   string `json:"queue"`
	Message string `json:"message,omitempty"`
}

func (a *api) deleteQueue(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("queue")
	if err := checkPathText("queue", name, kindName); err != nil {
		return err
	}
	existed, err := a.broker.DeleteQueue(r.Context(), caller(r), name)
	if err != nil {
		return err
	}
	out := queueDeleteJSON{Deleted: existed, Queue: name}
	if !existed {
		out.Message = "Queue '" + name + "' not found"
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
