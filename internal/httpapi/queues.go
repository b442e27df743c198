package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
)

// queueRoutes configure and delete queues.
type queueRoutes struct {
	broker *broker.Broker
}

func (g *queueRoutes) Routes() []Route {
	return []Route{
		row(AccessReadWrite, "POST", "/api/v1/configure", "configure", g.configure),
		row(AccessAdmin, "DELETE", "/api/v1/resources/queues/{queue}", "queue_delete", g.deleteQueue),
	}
}

// configure answers the queue's full configuration.
func (g *queueRoutes) configure(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	c, err := DecodeConfigure(body)
	if err != nil {
		return err
	}
	q, err := g.broker.Configure(r.Context(), caller(r), c.Queue, c.Namespace, c.Task, c.Options)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ConfigureResponse{Configured: true, QueueID: q.ID,
		PartitionID: q.DefaultPartitionID, Queue: q.Name, Namespace: q.Namespace, Task: q.Task,
		Options: wireOptions(q.Options)})
	return nil
}

// deleteQueue answers 200 whether or not the queue existed, since clients
// delete before they create.
func (g *queueRoutes) deleteQueue(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("queue")
	if err := checkPathText("queue", name, kindName); err != nil {
		return err
	}
	existed, err := g.broker.DeleteQueue(r.Context(), caller(r), name)
	if err != nil {
		return err
	}
	out := api.QueueDeleteResponse{Deleted: existed, Queue: name}
	if !existed {
		out.Message = "Queue '" + name + "' not found"
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
