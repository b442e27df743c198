package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Queues and partitions as the control plane shows them: Queen's keys, with
// pagination added to every list (a list without limit answers its first
// page). Every figure is computed live from counters and cursors.

// resourceRoutes list, describe, sum up and clear queues and partitions.
func (a *api) resourceRoutes() []route {
	return []route{
		r(AccessRead, "GET", "/api/v1/resources/queues", "queue_list", a.queueList),
		r(AccessRead, "GET", "/api/v1/resources/queues/{queue}", "queue_get", a.queueGet),
		r(AccessRead, "GET", "/api/v1/resources/partitions", "partition_list", a.partitionList),
		r(AccessRead, "GET", "/api/v1/resources/namespaces", "namespace_list", a.namespaceList),
		r(AccessRead, "GET", "/api/v1/resources/tasks", "task_list", a.taskList),
		r(AccessRead, "GET", "/api/v1/resources/overview", "overview", a.overview),
		r(AccessAdmin, "DELETE", "/api/v1/queues/{queue}/clear", "queue_clear", a.queueClear),
	}
}

// Page sizes of the control plane's lists.
const (
	// DefaultListLimit is a list's page size when the request gives none.
	DefaultListLimit = 100
	// MaxListLimit is the largest page a list answers.
	MaxListLimit = 1000
	// DefaultPartitionLimit is the page of partitions a queue's
	// description holds when the request gives none.
	DefaultPartitionLimit = 1000
	// MaxPartitionLimit is the largest page of partitions a queue's
	// description holds.
	MaxPartitionLimit = 10000
)

// page reads limit (1 to maxLimit, default def) and offset (0 or more).
func (q *query) page(def, maxLimit int) (limit, offset int) {
	return q.int("limit", def, intRange{1, maxLimit}), q.int("offset", 0, intRange{0, 1<<31 - 1})
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
		return &httpError{status: http.StatusNotFound, msg: nf.Error()}
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

// tsOrNull formats t, or renders the zero time as null.
func tsOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}

type paginationJSON struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	Total  int `json:"total"`
}

type queueMessagesJSON struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
}

type countsJSON struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

func counts(m store.MessageCounts) countsJSON {
	return countsJSON{Total: m.Total, Pending: m.Pending, Processing: m.Processing, Completed: m.Completed,
		DeadLetter: m.DeadLetter}
}

type queueListItemJSON struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Namespace  *string           `json:"namespace"`
	Task       *string           `json:"task"`
	CreatedAt  string            `json:"createdAt"`
	Partitions int               `json:"partitions"`
	Messages   queueMessagesJSON `json:"messages"`
}

type queueListJSON struct {
	Queues     []queueListItemJSON `json:"queues"`
	Pagination paginationJSON      `json:"pagination"`
}

func (a *api) queueList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	p := store.QueueListParams{Limit: limit, Offset: offset, Namespace: q.name("namespace"), Task: q.name("task")}
	if q.err != nil {
		return q.err
	}
	res, err := a.control.QueueList(r.Context(), caller(r).Tenant, p)
	if err != nil {
		return err
	}
	out := queueListJSON{Queues: make([]queueListItemJSON, len(res.Queues)),
		Pagination: paginationJSON{Limit: limit, Offset: offset, Total: res.Total}}
	for i, qi := range res.Queues {
		out.Queues[i] = queueListItemJSON{ID: qi.ID, Name: qi.Name, Namespace: nullable(qi.Namespace),
			Task: nullable(qi.Task), CreatedAt: timestamp(qi.CreatedAt), Partitions: qi.Partitions,
			Messages: queueMessagesJSON{Total: qi.Messages.Total, Pending: qi.Messages.Pending,
				Processing: qi.Messages.Processing}}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type queuePartitionJSON struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	CreatedAt     string     `json:"createdAt"`
	Stats         countsJSON `json:"stats"`
	OldestMessage *string    `json:"oldestMessage"`
	NewestMessage *string    `json:"newestMessage"`
	LastActivity  *string    `json:"lastActivity"`
}

type queueGetJSON struct {
	ID         string               `json:"id"`
	Name       string               `json:"name"`
	Namespace  *string              `json:"namespace"`
	Task       *string              `json:"task"`
	CreatedAt  string               `json:"createdAt"`
	Partitions []queuePartitionJSON `json:"partitions"`
	Totals     countsJSON           `json:"totals"`
	Pagination paginationJSON       `json:"pagination"`
}

func (a *api) queueGet(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultPartitionLimit, MaxPartitionLimit)
	if q.err != nil {
		return q.err
	}
	d, err := a.control.QueueGet(r.Context(), caller(r).Tenant, store.QueueGetParams{Name: r.PathValue("queue"),
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := queueGetJSON{ID: d.Queue.ID, Name: d.Queue.Name, Namespace: nullable(d.Queue.Namespace),
		Task: nullable(d.Queue.Task), CreatedAt: timestamp(d.Queue.CreatedAt),
		Partitions: make([]queuePartitionJSON, len(d.Partitions)), Totals: counts(d.Queue.Messages),
		Pagination: paginationJSON{Limit: limit, Offset: offset, Total: d.Queue.Partitions}}
	for i, p := range d.Partitions {
		out.Partitions[i] = queuePartitionJSON{ID: p.ID, Name: p.Name, CreatedAt: timestamp(p.CreatedAt),
			Stats: counts(p.Messages), OldestMessage: tsOrNull(p.OldestMessage),
			NewestMessage: tsOrNull(p.NewestMessage), LastActivity: tsOrNull(p.LastActivity)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type partitionItemJSON struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Queue        string     `json:"queue"`
	CreatedAt    string     `json:"createdAt"`
	LastActivity *string    `json:"lastActivity"`
	Messages     countsJSON `json:"messages"`
}

type partitionListJSON struct {
	Partitions []partitionItemJSON `json:"partitions"`
	Pagination paginationJSON      `json:"pagination"`
}

func (a *api) partitionList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	queue := q.name("queue")
	if q.err != nil {
		return q.err
	}
	res, err := a.control.PartitionList(r.Context(), caller(r).Tenant, store.PartitionListParams{Queue: queue,
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := partitionListJSON{Partitions: make([]partitionItemJSON, len(res.Partitions)),
		Pagination: paginationJSON{Limit: limit, Offset: offset, Total: res.Total}}
	for i, p := range res.Partitions {
		out.Partitions[i] = partitionItemJSON{ID: p.ID, Name: p.Name, Queue: p.Queue, CreatedAt: timestamp(p.CreatedAt),
			LastActivity: tsOrNull(p.LastActivity), Messages: counts(p.Messages)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type rollupMessagesJSON struct {
	Total   int64 `json:"total"`
	Pending int64 `json:"pending"`
}

func (a *api) namespaceList(w http.ResponseWriter, r *http.Request) error {
	return a.rollup(w, r, store.RollupNamespace, "namespaces", "namespace")
}

func (a *api) taskList(w http.ResponseWriter, r *http.Request) error {
	return a.rollup(w, r, store.RollupTask, "tasks", "task")
}

// rollup answers {"<list>":[{"<key>":…,"queues","partitions","messages"}],
// "pagination"}.
func (a *api) rollup(w http.ResponseWriter, r *http.Request, by store.RollupKey, list, key string) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	if q.err != nil {
		return q.err
	}
	res, err := a.control.QueueRollup(r.Context(), caller(r).Tenant, store.QueueRollupParams{By: by, Limit: limit,
		Offset: offset})
	if err != nil {
		return err
	}
	items := make([]map[string]any, len(res.Rollups))
	for i, ru := range res.Rollups {
		items[i] = map[string]any{key: ru.Key, "queues": ru.Queues, "partitions": ru.Partitions,
			"messages": rollupMessagesJSON{Total: ru.Messages.Total, Pending: ru.Messages.Pending}}
	}
	writeJSON(w, http.StatusOK, map[string]any{list: items,
		"pagination": paginationJSON{Limit: limit, Offset: offset, Total: res.Total}})
	return nil
}

type spreadJSON struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

type overviewJSON struct {
	Queues     int        `json:"queues"`
	Partitions int        `json:"partitions"`
	Namespaces int        `json:"namespaces"`
	Tasks      int        `json:"tasks"`
	Messages   countsJSON `json:"messages"`
	Lag        struct {
		Time   spreadJSON `json:"time"`
		Offset spreadJSON `json:"offset"`
	} `json:"lag"`
	Throughput struct {
		IngestedPerSecond  float64 `json:"ingestedPerSecond"`
		ProcessedPerSecond float64 `json:"processedPerSecond"`
	} `json:"throughput"`
	Timestamp string `json:"timestamp"`
	StatsAge  int    `json:"statsAge"`
}

func (a *api) overview(w http.ResponseWriter, r *http.Request) error {
	o, err := a.control.Overview(r.Context(), caller(r).Tenant)
	if err != nil {
		return err
	}
	out := overviewJSON{Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces, Tasks: o.Tasks,
		Messages: counts(o.Messages), Timestamp: timestamp(o.At)}
	out.Lag.Time = spreadJSON{Avg: o.TimeLag.Avg, Median: o.TimeLag.Median, Min: o.TimeLag.Min, Max: o.TimeLag.Max}
	out.Lag.Offset = spreadJSON{Avg: o.OffsetLag.Avg, Median: o.OffsetLag.Median, Min: o.OffsetLag.Min,
		Max: o.OffsetLag.Max}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type clearJSON struct {
	Cleared         bool    `json:"cleared"`
	Queue           string  `json:"queue"`
	Partition       *string `json:"partition"`
	MessagesDeleted int64   `json:"messagesDeleted"`
}

func (a *api) queueClear(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	partition := q.name("partition")
	if q.err != nil {
		return q.err
	}
	queue := r.PathValue("queue")
	res, err := a.control.QueueClear(r.Context(), caller(r).Tenant, queue, partition)
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, clearJSON{Cleared: true, Queue: queue, Partition: nullable(partition),
		MessagesDeleted: res.Messages})
	return nil
}
