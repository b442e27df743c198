package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// Status and analytics, with Queen's keys: the dashboard's summary, the
// status views of queues, and the analytics series. Series come from the
// metrics sampler's per-minute rows, never from reading messages; queue
// figures are live. Every tenant-scoped route sees its tenant's queues
// only; system-metrics, worker-metrics and postgres-stats are the
// process's (ProcessWide), as status/buffers.

// statusRoutes serve /api/v1/status* and /api/v1/analytics/*
// (analytics.go).
type statusRoutes struct {
	control *control.Control
}

func (g *statusRoutes) Routes() []Route {
	return []Route{
		row(AccessRead, "GET", "/api/v1/status", "status", g.status),
		row(AccessRead, "GET", "/api/v1/status/queues", "status_queues", g.statusQueues),
		row(AccessRead, "GET", "/api/v1/status/queues/{queue}", "status_queue", g.statusQueue),
		row(AccessRead, "GET", "/api/v1/status/queues/{queue}/messages", "status_queue_messages", g.statusQueueMessages),
		row(AccessRead, "GET", "/api/v1/status/analytics", "status_analytics", g.statusAnalytics),
		row(AccessRead, "GET", "/api/v1/analytics/system-metrics", "analytics_system_metrics", g.systemMetrics).Operator(),
		row(AccessRead, "GET", "/api/v1/analytics/worker-metrics", "analytics_worker_metrics", g.workerMetrics).Operator(),
		row(AccessRead, "GET", "/api/v1/analytics/queue-lag", "analytics_queue_lag", g.queueLag),
		row(AccessRead, "GET", "/api/v1/analytics/queue-ops", "analytics_queue_ops", g.queueOps),
		row(AccessRead, "GET", "/api/v1/analytics/queue-parked-replicas", "analytics_queue_parked_replicas", g.parkedReplicas),
		row(AccessRead, "GET", "/api/v1/analytics/retention", "analytics_retention", g.retention),
		row(AccessRead, "GET", "/api/v1/analytics/postgres-stats", "analytics_postgres_stats", g.engineStats).Operator(),
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
	// MaxStatusWindow bounds offset plus limit of
	// /status/queues/{queue}/messages: the messages skipped are read too,
	// so a page further down costs more than a page should.
	MaxStatusWindow = 10000
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
func (g *statusRoutes) seriesArgs(q *query, back time.Duration) control.SeriesParams {
	return control.SeriesParams{Range: q.timeRange(g.control.Now(), back), Queue: q.name("queue"),
		Namespace: q.name("namespace"), Task: q.name("task")}
}

func timeRange(r control.TimeRange) api.TimeRange {
	return api.TimeRange{From: api.TimeOf(r.From), To: api.TimeOf(r.To)}
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

func (g *statusRoutes) status(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := g.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	st, err := g.control.Status(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return entity(err)
	}
	d := st.Bucket
	out := api.Status{TimeRange: timeRange(st.Range), BucketMinutes: minutes(d), PointCount: len(st.Throughput),
		Throughput: make([]api.ThroughputPoint, len(st.Throughput)), Queues: make([]api.StatusQueue, len(st.Queues)),
		Workers: make([]api.StatusWorker, len(st.Workers))}
	for i, pt := range st.Throughput {
		o, p := pt.Ops, pt.Process
		out.Throughput[i] = api.ThroughputPoint{Timestamp: api.TimeOf(pt.At), Ingested: o.PushMessages,
			Processed: o.AckSuccess, PopMessages: o.PopMessages, IngestedPerSecond: perSecond(o.PushMessages, d),
			ProcessedPerSecond: perSecond(o.AckSuccess, d), PopPerSecond: perSecond(o.PopMessages, d),
			AvgLagMs: round3(o.AvgLagMs()), MaxLagMs: float64(o.LagMaxMs), AvgEventLoopLagMs: round3(p.SchedAvgMs),
			MaxEventLoopLagMs: round3(p.SchedMaxMs), MinFreeSlots: p.FreeSlotsMin, DBErrors: pt.DBErrors,
			AckFailed: o.AckFailed, DLQCount: o.DLQ, QueenCPUUserPct: round3(p.CPUUserPct),
			QueenCPUSysPct: round3(p.CPUSystemPct), QueenRssMb: round3(p.RSSBytes / (1 << 20)),
			DBPoolActive: round3(p.PoolActive), DBPoolIdle: round3(p.PoolIdle), DBPoolSize: round3(p.PoolSize)}
	}
	for i, qi := range st.Queues {
		out.Queues[i] = api.StatusQueue{ID: qi.ID, Name: qi.Name, Namespace: nullable(qi.Namespace),
			Task: nullable(qi.Task), Partitions: qi.Partitions, TotalConsumed: qi.Messages.Completed}
	}
	m, o := st.Messages, st.Ops
	out.Messages = api.StatusMessages{Total: m.Total, Pending: m.Pending, Processing: m.Processing,
		Completed: m.Completed, DeadLetter: m.DeadLetter,
		Requests: api.OpTriple{Push: float64(o.PushRequests), Pop: float64(o.PopRequests), Ack: float64(o.AckRequests)},
		BatchEfficiency: api.OpTriple{Push: ratio(o.PushMessages, o.PushRequests),
			Pop: ratio(o.PopMessages, o.PopRequests), Ack: ratio(o.AckSuccess+o.AckFailed, o.AckRequests)}}
	out.Leases = api.StatusLeases{Active: st.Leases.Leases, PartitionsWithLeases: st.Leases.Lanes,
		TotalBatchSize: m.Processing}
	out.DeadLetterQueue = api.StatusDLQ{TotalMessages: m.DeadLetter, TopErrors: []any{}}
	for i, ws := range st.Workers {
		out.Workers[i] = api.StatusWorker{Hostname: ws.Hostname, WorkerID: ws.WorkerID,
			AvgEventLoopLagMs: round3(ws.SchedAvgMs), MaxEventLoopLagMs: round3(ws.SchedMaxMs), FreeSlots: ws.FreeSlots,
			DBConnections: ws.DBConnections, JobQueueSize: ws.JobQueue, MessagesProcessed: ws.MessagesProcessed}
	}
	out.Errors = api.StatusErrors{DBErrors: st.DBErrors, AckFailed: o.AckFailed, DLQMessages: o.DLQ}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *statusRoutes) statusQueues(w http.ResponseWriter, r *http.Request) error {
	return queueList(g.control, w, r) // Queen's two routes answer the same list
}

func (g *statusRoutes) statusQueue(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultPartitionLimit, MaxPartitionLimit)
	q.flag("includePartitions") // Queen's SDK sends it; partitions are always included
	if q.err != nil {
		return q.err
	}
	d, err := g.control.StatusQueue(r.Context(), caller(r).Tenant, store.QueueGetParams{Name: r.PathValue("queue"),
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	o := d.Options
	totals := counts(d.Queue.Messages)
	out := api.StatusQueueDetail{
		Queue: api.StatusQueueHead{ID: d.Queue.ID, Name: d.Queue.Name, Namespace: nullable(d.Queue.Namespace),
			Task: nullable(d.Queue.Task), Priority: o.Priority, CreatedAt: api.TimeOf(d.Queue.CreatedAt),
			Config: api.StatusQueueConfig{LeaseTime: o.LeaseTime, RetryLimit: o.RetryLimit, RetryDelay: o.RetryDelay,
				TTL: o.TTL, MaxQueueSize: o.MaxSize, DeadLetterQueue: o.DeadLetterQueue}},
		Partitions: make([]api.StatusPartition, len(d.Partitions)),
		Totals:     api.StatusTotals{Messages: totals, MessageCounts: totals},
		Pagination: pagination(limit, offset, d.Queue.Partitions),
	}
	for i, p := range d.Partitions {
		c := counts(p.Messages)
		out.Partitions[i] = api.StatusPartition{ID: p.ID, Name: p.Name, CreatedAt: api.TimeOf(p.CreatedAt),
			Messages: c, Stats: c, Cursor: api.StatusCursor{TotalConsumed: p.Messages.Completed},
			LastActivity: timeOrNull(p.LastActivity), OldestMessage: timeOrNull(p.OldestMessage),
			NewestMessage: timeOrNull(p.NewestMessage)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *statusRoutes) statusQueueMessages(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "queue"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultMessagesLimit, MaxListLimit)
	if q.err == nil && offset+limit > MaxStatusWindow {
		q.err = badQuery("offset: a page ends at most %d messages down (offset + limit)", MaxStatusWindow)
	}
	if q.err != nil {
		return q.err
	}
	queue := r.PathValue("queue")
	msgs, err := g.control.StatusQueueMessages(r.Context(), caller(r).Tenant, control.StatusPage{
		Queue: queue, Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := make([]api.StatusMessage, len(msgs))
	for i, m := range msgs {
		out[i] = api.StatusMessage{ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			QueuePath: queue + "/" + m.Partition, Queue: queue, Partition: m.Partition, Status: string(m.Status),
			CreatedAt: api.TimeOf(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// statusAnalytics counts the messages pushed per interval (minute, hour or
// day), over the last day by default, every interval included.
func (g *statusRoutes) statusAnalytics(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := g.seriesArgs(q, 24*time.Hour)
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
	points, err := g.control.PushedSeries(r.Context(), caller(r).Tenant, sp, d)
	if err != nil {
		return err
	}
	out := api.StatusAnalytics{DataPoints: make([]api.DataPoint, len(points)), Interval: interval,
		From: api.TimeOf(sp.Range.From), To: api.TimeOf(sp.Range.To)}
	for i, p := range points {
		out.DataPoints[i] = api.DataPoint{Timestamp: api.TimeOf(p.At), Messages: p.Messages}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
