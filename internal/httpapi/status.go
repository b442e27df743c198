package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// Status and analytics, with Queen's keys: the dashboard's summary, the
// status views of queues, and the analytics series. Series come from the
// metrics sampler's per-minute rows, never from reading messages; queue
// figures are live. Every tenant-scoped route sees its tenant's queues
// only; system-metrics, worker-metrics and postgres-stats are the
// process's (processWide), as status/buffers.

// statusRoutes serve /api/v1/status* and /api/v1/analytics/*.
func (a *api) statusRoutes() []route {
	return []route{
		r(AccessRead, "GET", "/api/v1/status", "status", a.status),
		r(AccessRead, "GET", "/api/v1/status/queues", "status_queues", a.statusQueues),
		r(AccessRead, "GET", "/api/v1/status/queues/{queue}", "status_queue", a.statusQueue),
		r(AccessRead, "GET", "/api/v1/status/queues/{queue}/messages", "status_queue_messages", a.statusQueueMessages),
		r(AccessRead, "GET", "/api/v1/status/analytics", "status_analytics", a.statusAnalytics),
		r(AccessRead, "GET", "/api/v1/analytics/system-metrics", "analytics_system_metrics", a.systemMetrics).processWide(),
		r(AccessRead, "GET", "/api/v1/analytics/worker-metrics", "analytics_worker_metrics", a.workerMetrics).processWide(),
		r(AccessRead, "GET", "/api/v1/analytics/queue-lag", "analytics_queue_lag", a.queueLag),
		r(AccessRead, "GET", "/api/v1/analytics/queue-ops", "analytics_queue_ops", a.queueOps),
		r(AccessRead, "GET", "/api/v1/analytics/queue-parked-replicas", "analytics_queue_parked_replicas", a.parkedReplicas),
		r(AccessRead, "GET", "/api/v1/analytics/retention", "analytics_retention", a.retention),
		r(AccessRead, "GET", "/api/v1/analytics/postgres-stats", "analytics_postgres_stats", a.engineStats).processWide(),
	}
}

// Limits of the status and analytics routes.
const (
	// MaxSeriesSpan is the widest window a series answers.
	MaxSeriesSpan = 400 * 24 * time.Hour
	// MaxSeriesPoints bounds the points of /status/analytics (a minute
	// interval over a long window).
	MaxSeriesPoints = 10000
	// DefaultMessagesLimit is the page of /status/queues/{queue}/messages.
	DefaultMessagesLimit = 50
	// DefaultLagRows and MaxLagRows bound /analytics/queue-lag, a bare
	// array without pagination.
	DefaultLagRows = 1000
	MaxLagRows     = 10000
)

// timeArg reads an RFC 3339 time (or a date) parameter; zero when absent.
func (q *query) timeArg(name string) time.Time {
	s := q.str(name)
	if s == "" || q.err != nil {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	q.err = badQuery("%s: expected an RFC 3339 time (2026-07-30T09:12:44.031Z), got %q", name, s)
	return time.Time{}
}

// timeRange reads from and to: to defaults to now, from to `back` before
// to. from must be before to, and the window at most MaxSeriesSpan.
func (q *query) timeRange(now time.Time, back time.Duration) control.TimeRange {
	r := control.TimeRange{From: q.timeArg("from"), To: q.timeArg("to")}
	if q.err != nil {
		return r
	}
	if r.To.IsZero() {
		r.To = now
	}
	if r.From.IsZero() {
		r.From = r.To.Add(-back)
	}
	switch {
	case !r.From.Before(r.To):
		q.err = badQuery("from: %s is not before to (%s)", timestamp(r.From), timestamp(r.To))
	case r.To.Sub(r.From) > MaxSeriesSpan:
		q.err = badQuery("from: the window is at most %d days", int(MaxSeriesSpan.Hours()/24))
	}
	return r
}

// seriesArgs reads a queue series' window and filters (queue, namespace,
// task).
func (a *api) seriesArgs(q *query, back time.Duration) control.SeriesParams {
	return control.SeriesParams{Range: q.timeRange(a.control.Now(), back), Queue: q.name("queue"),
		Namespace: q.name("namespace"), Task: q.name("task")}
}

type timeRangeJSON struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func rangeJSON(r control.TimeRange) timeRangeJSON {
	return timeRangeJSON{From: timestamp(r.From), To: timestamp(r.To)}
}

// minutes renders a bucket width in minutes.
func minutes(d time.Duration) int { return int(d / time.Minute) }

// perSecond is n per second over a bucket.
func perSecond(n int64, d time.Duration) float64 { return round3(float64(n) / d.Seconds()) }

// round3 rounds to three decimals, so that figures read as figures.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ratio is n/d, or 0.
func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return round3(float64(n) / float64(d))
}

type throughputJSON struct {
	Timestamp          string  `json:"timestamp"`
	Ingested           int64   `json:"ingested"`
	Processed          int64   `json:"processed"`
	PopMessages        int64   `json:"popMessages"`
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
	PopPerSecond       float64 `json:"popPerSecond"`
	AvgLagMs           float64 `json:"avgLagMs"`
	MaxLagMs           float64 `json:"maxLagMs"`
	AvgEventLoopLagMs  float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs  float64 `json:"maxEventLoopLagMs"`
	MinFreeSlots       float64 `json:"minFreeSlots"`
	DBErrors           int64   `json:"dbErrors"`
	AckFailed          int64   `json:"ackFailed"`
	DLQCount           int64   `json:"dlqCount"`
	QueenCPUUserPct    float64 `json:"queenCpuUserPct"`
	QueenCPUSysPct     float64 `json:"queenCpuSysPct"`
	QueenRssMb         float64 `json:"queenRssMb"`
	DBPoolActive       float64 `json:"dbPoolActive"`
	DBPoolIdle         float64 `json:"dbPoolIdle"`
	DBPoolSize         float64 `json:"dbPoolSize"`
}

type statusQueueJSON struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	Namespace     *string `json:"namespace"`
	Task          *string `json:"task"`
	Partitions    int     `json:"partitions"`
	TotalConsumed int64   `json:"totalConsumed"`
}

type opTripleJSON struct {
	Push float64 `json:"push"`
	Pop  float64 `json:"pop"`
	Ack  float64 `json:"ack"`
}

type statusMessagesJSON struct {
	Total           int64        `json:"total"`
	Pending         int64        `json:"pending"`
	Processing      int64        `json:"processing"`
	Completed       int64        `json:"completed"`
	Failed          int64        `json:"failed"`
	DeadLetter      int64        `json:"deadLetter"`
	Requests        opTripleJSON `json:"requests"`
	BatchEfficiency opTripleJSON `json:"batchEfficiency"`
}

type leasesJSON struct {
	Active               int   `json:"active"`
	PartitionsWithLeases int   `json:"partitionsWithLeases"`
	TotalBatchSize       int64 `json:"totalBatchSize"`
	TotalAcked           int64 `json:"totalAcked"`
}

type dlqSummaryJSON struct {
	TotalMessages      int64 `json:"totalMessages"`
	AffectedPartitions int   `json:"affectedPartitions"`
	TopErrors          []any `json:"topErrors"`
}

type statusWorkerJSON struct {
	Hostname          string  `json:"hostname"`
	WorkerID          string  `json:"workerId"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	FreeSlots         float64 `json:"freeSlots"`
	DBConnections     float64 `json:"dbConnections"`
	JobQueueSize      float64 `json:"jobQueueSize"`
	MessagesProcessed int64   `json:"messagesProcessed"`
}

type statusErrorsJSON struct {
	DBErrors    int64 `json:"dbErrors"`
	AckFailed   int64 `json:"ackFailed"`
	DLQMessages int64 `json:"dlqMessages"`
}

type statusJSON struct {
	TimeRange       timeRangeJSON      `json:"timeRange"`
	BucketMinutes   int                `json:"bucketMinutes"`
	PointCount      int                `json:"pointCount"`
	Throughput      []throughputJSON   `json:"throughput"`
	Queues          []statusQueueJSON  `json:"queues"`
	Messages        statusMessagesJSON `json:"messages"`
	Leases          leasesJSON         `json:"leases"`
	DeadLetterQueue dlqSummaryJSON     `json:"deadLetterQueue"`
	Workers         []statusWorkerJSON `json:"workers"`
	Errors          statusErrorsJSON   `json:"errors"`
	StatsAge        int                `json:"statsAge"`
}

func (a *api) status(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := a.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	st, err := a.control.Status(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return entity(err)
	}
	d := st.Bucket
	out := statusJSON{TimeRange: rangeJSON(st.Range), BucketMinutes: minutes(d), PointCount: len(st.Throughput),
		Throughput: make([]throughputJSON, len(st.Throughput)), Queues: make([]statusQueueJSON, len(st.Queues)),
		Workers: make([]statusWorkerJSON, len(st.Workers))}
	for i, pt := range st.Throughput {
		o, p := pt.Ops, pt.Process
		out.Throughput[i] = throughputJSON{Timestamp: timestamp(pt.At), Ingested: o.PushMessages,
			Processed: o.AckSuccess, PopMessages: o.PopMessages, IngestedPerSecond: perSecond(o.PushMessages, d),
			ProcessedPerSecond: perSecond(o.AckSuccess, d), PopPerSecond: perSecond(o.PopMessages, d),
			AvgLagMs: round3(o.AvgLagMs()), MaxLagMs: float64(o.LagMaxMs), AvgEventLoopLagMs: round3(p.SchedAvgMs),
			MaxEventLoopLagMs: round3(p.SchedMaxMs), MinFreeSlots: p.FreeSlotsMin, DBErrors: pt.DBErrors,
			AckFailed: o.AckFailed, DLQCount: o.DLQ, QueenCPUUserPct: round3(p.CPUUserPct),
			QueenCPUSysPct: round3(p.CPUSystemPct), QueenRssMb: round3(p.RSSBytes / (1 << 20)),
			DBPoolActive: round3(p.PoolActive), DBPoolIdle: round3(p.PoolIdle), DBPoolSize: round3(p.PoolSize)}
	}
	for i, qi := range st.Queues {
		out.Queues[i] = statusQueueJSON{ID: qi.ID, Name: qi.Name, Namespace: nullable(qi.Namespace),
			Task: nullable(qi.Task), Partitions: qi.Partitions, TotalConsumed: qi.Messages.Completed}
	}
	m, o := st.Messages, st.Ops
	out.Messages = statusMessagesJSON{Total: m.Total, Pending: m.Pending, Processing: m.Processing,
		Completed: m.Completed, DeadLetter: m.DeadLetter,
		Requests: opTripleJSON{Push: float64(o.PushRequests), Pop: float64(o.PopRequests), Ack: float64(o.AckRequests)},
		BatchEfficiency: opTripleJSON{Push: ratio(o.PushMessages, o.PushRequests),
			Pop: ratio(o.PopMessages, o.PopRequests), Ack: ratio(o.AckSuccess+o.AckFailed, o.AckRequests)}}
	out.Leases = leasesJSON{Active: st.Leases.Leases, PartitionsWithLeases: st.Leases.Lanes,
		TotalBatchSize: m.Processing}
	out.DeadLetterQueue = dlqSummaryJSON{TotalMessages: m.DeadLetter, TopErrors: []any{}}
	for i, ws := range st.Workers {
		out.Workers[i] = statusWorkerJSON{Hostname: ws.Hostname, WorkerID: ws.WorkerID,
			AvgEventLoopLagMs: round3(ws.SchedAvgMs), MaxEventLoopLagMs: round3(ws.SchedMaxMs), FreeSlots: ws.FreeSlots,
			DBConnections: ws.DBConnections, JobQueueSize: ws.JobQueue, MessagesProcessed: ws.MessagesProcessed}
	}
	out.Errors = statusErrorsJSON{DBErrors: st.DBErrors, AckFailed: o.AckFailed, DLQMessages: o.DLQ}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) statusQueues(w http.ResponseWriter, r *http.Request) error {
	return a.queueList(w, r) // Queen's two routes answer the same list
}

type statusQueueConfigJSON struct {
	LeaseTime       int  `json:"leaseTime"`
	RetryLimit      int  `json:"retryLimit"`
	RetryDelay      int  `json:"retryDelay"`
	TTL             int  `json:"ttl"`
	MaxQueueSize    int  `json:"maxQueueSize"`
	DeadLetterQueue bool `json:"deadLetterQueue"`
}

type statusQueueHeadJSON struct {
	ID        string                `json:"id"`
	Name      string                `json:"name"`
	Namespace *string               `json:"namespace"`
	Task      *string               `json:"task"`
	Priority  int                   `json:"priority"`
	CreatedAt string                `json:"createdAt"`
	Config    statusQueueConfigJSON `json:"config"`
}

type cursorJSON struct {
	TotalConsumed   int64 `json:"totalConsumed"`
	BatchesConsumed int64 `json:"batchesConsumed"`
}

type statusPartitionJSON struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	CreatedAt     string     `json:"createdAt"`
	Messages      countsJSON `json:"messages"`
	Stats         countsJSON `json:"stats"`
	Cursor        cursorJSON `json:"cursor"`
	LastActivity  *string    `json:"lastActivity"`
	OldestMessage *string    `json:"oldestMessage"`
	NewestMessage *string    `json:"newestMessage"`
}

type statusTotalsJSON struct {
	Messages countsJSON `json:"messages"`
	countsJSON
}

type statusQueueDetailJSON struct {
	Queue      statusQueueHeadJSON   `json:"queue"`
	Partitions []statusPartitionJSON `json:"partitions"`
	Totals     statusTotalsJSON      `json:"totals"`
	Pagination paginationJSON        `json:"pagination"`
}

func (a *api) statusQueue(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultPartitionLimit, MaxPartitionLimit)
	q.flag("includePartitions") // Queen's SDK sends it; partitions are always included
	if q.err != nil {
		return q.err
	}
	d, err := a.control.StatusQueue(r.Context(), caller(r).Tenant, store.QueueGetParams{Name: r.PathValue("queue"),
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	o := d.Config.Options
	totals := counts(d.Queue.Messages)
	out := statusQueueDetailJSON{
		Queue: statusQueueHeadJSON{ID: d.Queue.ID, Name: d.Queue.Name, Namespace: nullable(d.Queue.Namespace),
			Task: nullable(d.Queue.Task), Priority: o.Priority, CreatedAt: timestamp(d.Queue.CreatedAt),
			Config: statusQueueConfigJSON{LeaseTime: o.LeaseTime, RetryLimit: o.RetryLimit, RetryDelay: o.RetryDelay,
				TTL: o.TTL, MaxQueueSize: o.MaxSize, DeadLetterQueue: o.DeadLetterQueue}},
		Partitions: make([]statusPartitionJSON, len(d.Partitions)),
		Totals:     statusTotalsJSON{Messages: totals, countsJSON: totals},
		Pagination: paginationJSON{Limit: limit, Offset: offset, Total: d.Queue.Partitions},
	}
	for i, p := range d.Partitions {
		c := counts(p.Messages)
		out.Partitions[i] = statusPartitionJSON{ID: p.ID, Name: p.Name, CreatedAt: timestamp(p.CreatedAt),
			Messages: c, Stats: c, Cursor: cursorJSON{TotalConsumed: p.Messages.Completed},
			LastActivity: tsOrNull(p.LastActivity), OldestMessage: tsOrNull(p.OldestMessage),
			NewestMessage: tsOrNull(p.NewestMessage)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type statusMessageJSON struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	QueuePath     string `json:"queuePath"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Status        string `json:"status"`
	CreatedAt     string `json:"createdAt"`
}

func (a *api) statusQueueMessages(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultMessagesLimit, MaxListLimit)
	if q.err == nil && offset+limit > store.MaxStatsWindow {
		q.err = badQuery("offset: a page ends at most %d messages down (offset + limit)", store.MaxStatsWindow)
	}
	if q.err != nil {
		return q.err
	}
	queue := r.PathValue("queue")
	msgs, err := a.control.StatusQueueMessages(r.Context(), caller(r).Tenant, store.StatsQueueMessagesParams{
		Queue: queue, Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := make([]statusMessageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = statusMessageJSON{ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			QueuePath: queue + "/" + m.Partition, Queue: queue, Partition: m.Partition, Status: string(m.Status),
			CreatedAt: timestamp(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type dataPointJSON struct {
	Timestamp string `json:"timestamp"`
	Messages  int64  `json:"messages"`
}

type statusAnalyticsJSON struct {
	DataPoints []dataPointJSON `json:"dataPoints"`
	Interval   string          `json:"interval"`
	From       string          `json:"from"`
	To         string          `json:"to"`
}

// statusAnalytics counts the messages pushed per interval (minute, hour or
// day), over the last day by default, every interval included.
func (a *api) statusAnalytics(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := a.seriesArgs(q, 24*time.Hour)
	interval := q.str("interval")
	if interval == "" {
		interval = "hour"
	}
	d, ok := control.Intervals[interval]
	switch {
	case q.err != nil:
	case !ok:
		q.err = badQuery("interval: expected minute, hour or day, got %q", truncate(interval, 40))
	case sp.Range.To.Sub(sp.Range.From)/d > MaxSeriesPoints:
		q.err = badQuery("interval: %s buckets over this window make more than %d points", interval, MaxSeriesPoints)
	}
	if q.err != nil {
		return q.err
	}
	points, err := a.control.PushedSeries(r.Context(), caller(r).Tenant, sp, d)
	if err != nil {
		return err
	}
	out := statusAnalyticsJSON{DataPoints: make([]dataPointJSON, len(points)), Interval: interval,
		From: timestamp(sp.Range.From), To: timestamp(sp.Range.To)}
	for i, p := range points {
		out.DataPoints[i] = dataPointJSON{Timestamp: timestamp(p.At), Messages: p.Messages}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
