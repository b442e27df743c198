package httpapi

import (
	"errors"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// Queues and partitions as the control plane shows them: Queen's keys, with
// pagination added to every list (a list without limit answers its first
// page). Every figure is computed live from counters and cursors.

// resourceRoutes list, describe, sum up and clear queues and partitions.
type resourceRoutes struct {
	control *control.Control
}

func (g *resourceRoutes) Routes() []Route {
	return []Route{
		row(AccessRead, "GET", "/api/v1/resources/queues", "queue_list", g.queueList),
		row(AccessRead, "GET", "/api/v1/resources/queues/{queue}", "queue_get", g.queueGet),
		row(AccessRead, "GET", "/api/v1/resources/partitions", "partition_list", g.partitionList),
		row(AccessRead, "GET", "/api/v1/resources/namespaces", "namespace_list", g.namespaceList),
		row(AccessRead, "GET", "/api/v1/resources/tasks", "task_list", g.taskList),
		row(AccessRead, "GET", "/api/v1/resources/overview", "overview", g.overview),
		row(AccessAdmin, "DELETE", "/api/v1/queues/{queue}/clear", "queue_clear", g.queueClear),
	}
}

// Page sizes of the control plane's lists.
const (
	// DefaultListLimit is a list's page size when the request gives none.
	DefaultListLimit = 100
	// MaxListLimit is the largest page a list answers; a larger limit is
	// served as this many (Queen's CLI asks for 10,000).
	MaxListLimit = 10000
	// DefaultPartitionLimit is the page of partitions a queue's
	// description holds when the request gives none.
	DefaultPartitionLimit = 1000
	// MaxPartitionLimit is the largest page of partitions a queue's
	// description holds.
	MaxPartitionLimit = 10000
)

// page reads limit (1 or more, served as at most maxLimit, default def) and
// offset (0 or more).
func (q *query) page(def, maxLimit int) (limit, offset int) {
	return q.limit(def, maxLimit), q.int("offset", 0, intRange{0, 1<<31 - 1})
}

// limit reads a listing's page size: below 1 is a 400, above maxLimit is
// served as maxLimit. Queen clamps rather than refuses, and its own CLI asks
// for pages of 10,000 and more; a listing that answers a smaller page than
// asked for is still correct paging (the envelope's pagination says so).
func (q *query) limit(def, maxLimit int) int {
	return min(q.int("limit", def, intRange{1, 1<<31 - 1}), maxLimit)
}

// flag reads a management boolean: true, false, 1, 0, yes or no (Queen's
// management routes accept all six); absent is false.
func (q *query) flag(name string) bool {
	s, ok := q.values[name]
	if !ok || q.err != nil {
		return false
	}
	switch s[0] {
	case "true", "1", "yes":
		return true
	case "false", "0", "no":
		return false
	}
	q.err = badQuery("%s: expected true, false, 1, 0, yes or no, got %q", name, s[0])
	return false
}

// entity answers a store.NotFoundError with its own text ("Queue not
// found", "Partition not found"), which Queen's clients read; other errors
// go to the usual mapping.
func entity(err error) error {
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return api.ErrNotFound.With(nf.Error()).WithCause(err)
	}
	return err
}

// pathNames validates the named path values.
func pathNames(r *http.Request, names ...string) error {
	for _, n := range names {
		if err := checkPathText(n, r.PathValue(n), kindName); err != nil {
			return err
		}
	}
	return nil
}

func counts(m store.MessageCounts) api.MessageCounts {
	return api.MessageCounts{Total: m.Total, Pending: m.Pending, Processing: m.Processing, Completed: m.Completed,
		DeadLetter: m.DeadLetter}
}

func pagination(limit, offset, total int) api.Pagination {
	return api.Pagination{Limit: limit, Offset: offset, Total: total}
}

func (g *resourceRoutes) queueList(w http.ResponseWriter, r *http.Request) error {
	return queueList(g.control, w, r)
}

// queueList answers a page of queues (Queen's /resources/queues and
// /status/queues answer the same list).
func queueList(ctl *control.Control, w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	p := store.QueueListParams{Limit: limit, Offset: offset, Namespace: q.name("namespace"), Task: q.name("task")}
	if q.err != nil {
		return q.err
	}
	res, err := ctl.QueueList(r.Context(), caller(r).Tenant, p)
	if err != nil {
		return err
	}
	out := api.QueueList{Queues: make([]api.QueueListItem, len(res.Queues)),
		Pagination: pagination(limit, offset, res.Total)}
	for i, qi := range res.Queues {
		out.Queues[i] = api.QueueListItem{ID: qi.ID, Name: qi.Name, Namespace: nullable(qi.Namespace),
			Task: nullable(qi.Task), CreatedAt: api.TimeOf(qi.CreatedAt), Partitions: qi.Partitions,
			Messages: api.QueueMessageCounts{Total: qi.Messages.Total, Pending: qi.Messages.Pending,
				Processing: qi.Messages.Processing, DeadLetter: qi.Messages.DeadLetter},
			OldestUnreadAt: api.TimeOrNil(qi.OldestUnread), OldestUnreadAgeSeconds: seconds(qi.OldestUnreadAge)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *resourceRoutes) queueGet(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultPartitionLimit, MaxPartitionLimit)
	if q.err != nil {
		return q.err
	}
	d, err := g.control.QueueGet(r.Context(), caller(r).Tenant, store.QueueGetParams{Name: r.PathValue("queue"),
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := api.QueueDetail{ID: d.Queue.ID, Name: d.Queue.Name, Namespace: nullable(d.Queue.Namespace),
		Task: nullable(d.Queue.Task), CreatedAt: api.TimeOf(d.Queue.CreatedAt),
		Partitions: make([]api.QueuePartition, len(d.Partitions)), Totals: counts(d.Queue.Messages),
		Pagination: pagination(limit, offset, d.Queue.Partitions)}
	for i, p := range d.Partitions {
		out.Partitions[i] = api.QueuePartition{ID: p.ID, Name: p.Name, CreatedAt: api.TimeOf(p.CreatedAt),
			Stats: counts(p.Messages), OldestMessage: timeOrNull(p.OldestMessage),
			NewestMessage: timeOrNull(p.NewestMessage), LastActivity: timeOrNull(p.LastActivity)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *resourceRoutes) partitionList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	queue := q.name("queue")
	if q.err != nil {
		return q.err
	}
	res, err := g.control.PartitionList(r.Context(), caller(r).Tenant, store.PartitionListParams{Queue: queue,
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := api.PartitionList{Partitions: make([]api.PartitionListItem, len(res.Partitions)),
		Pagination: pagination(limit, offset, res.Total)}
	for i, p := range res.Partitions {
		out.Partitions[i] = api.PartitionListItem{ID: p.ID, Name: p.Name, Queue: p.Queue,
			CreatedAt: api.TimeOf(p.CreatedAt), LastActivity: timeOrNull(p.LastActivity), Messages: counts(p.Messages)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rollup reads a page of namespaces or tasks.
func (g *resourceRoutes) rollup(r *http.Request, by store.RollupKey) (*store.QueueRollupResult, api.Pagination, error) {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	if q.err != nil {
		return nil, api.Pagination{}, q.err
	}
	res, err := g.control.QueueRollup(r.Context(), caller(r).Tenant, store.QueueRollupParams{By: by, Limit: limit,
		Offset: offset})
	if err != nil {
		return nil, api.Pagination{}, err
	}
	return res, pagination(limit, offset, res.Total), nil
}

func (g *resourceRoutes) namespaceList(w http.ResponseWriter, r *http.Request) error {
	res, page, err := g.rollup(r, store.RollupNamespace)
	if err != nil {
		return err
	}
	out := api.NamespaceList{Namespaces: make([]api.NamespaceSummary, len(res.Rollups)), Pagination: page}
	for i, ru := range res.Rollups {
		out.Namespaces[i] = api.NamespaceSummary{Namespace: ru.Key, Queues: ru.Queues, Partitions: ru.Partitions,
			Messages: api.RollupMessages{Total: ru.Messages.Total, Pending: ru.Messages.Pending}}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *resourceRoutes) taskList(w http.ResponseWriter, r *http.Request) error {
	res, page, err := g.rollup(r, store.RollupTask)
	if err != nil {
		return err
	}
	out := api.TaskList{Tasks: make([]api.TaskSummary, len(res.Rollups)), Pagination: page}
	for i, ru := range res.Rollups {
		out.Tasks[i] = api.TaskSummary{Task: ru.Key, Queues: ru.Queues, Partitions: ru.Partitions,
			Messages: api.RollupMessages{Total: ru.Messages.Total, Pending: ru.Messages.Pending}}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func spread(s control.Spread) api.Spread {
	return api.Spread{Avg: s.Avg, Median: s.Median, Min: s.Min, Max: s.Max}
}

func (g *resourceRoutes) overview(w http.ResponseWriter, r *http.Request) error {
	o, err := g.control.Overview(r.Context(), caller(r).Tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Overview{Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces,
		Tasks: o.Tasks, Messages: counts(o.Messages), Timestamp: api.TimeOf(o.At),
		Lag: api.OverviewLag{Time: spread(o.TimeLag), Offset: spread(o.OffsetLag)}})
	return nil
}

func (g *resourceRoutes) queueClear(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	partition := q.name("partition")
	if q.err != nil {
		return q.err
	}
	queue := r.PathValue("queue")
	res, err := g.control.QueueClear(r.Context(), caller(r).Tenant, queue, partition)
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, api.QueueClearResponse{Cleared: true, Queue: queue, Partition: nullable(partition),
		MessagesDeleted: res.Messages})
	return nil
}
