package control

import (
	"context"
	"sort"
	"time"

	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/store"
)

// Status and the dashboard's figures. Time series come from the rows the
// metrics sampler records each minute (never from reading messages); live
// figures (queues, messages, leases) from counters and cursors, as the rest
// of the control plane.

// TimeRange is the window [From, To) of a series.
type TimeRange struct {
	From, To time.Time
}

// BucketFor returns Queen's bucket width for a range: a minute up to an
// hour, 5 minutes up to 6 hours, 15 up to a day, an hour up to a week, 6
// hours beyond.
func BucketFor(r TimeRange) time.Duration {
	switch span := r.To.Sub(r.From); {
	case span <= time.Hour:
		return time.Minute
	case span <= 6*time.Hour:
		return 5 * time.Minute
	case span <= 24*time.Hour:
		return 15 * time.Minute
	case span <= 7*24*time.Hour:
		return time.Hour
	}
	return 6 * time.Hour
}

// Buckets lists the starts of the buckets of width d that cover r, oldest
// first.
func Buckets(r TimeRange, d time.Duration) []time.Time {
	var out []time.Time
	for b := store.BucketOf(r.From, d); b.Before(r.To); b = b.Add(d) {
		out = append(out, b)
	}
	return out
}

// seriesParams are the params of a series read over r in buckets of d:
// From is moved back to its bucket's start, so that the first bucket is
// whole.
func seriesParams(tenant string, r TimeRange, d time.Duration) store.StatsSeriesParams {
	return store.StatsSeriesParams{Tenant: tenant, From: store.BucketOf(r.From, d), To: r.To, Bucket: d}
}

// Status is the dashboard's summary of a tenant (or of the queues a
// filter selects).
type Status struct {
	Bucket     time.Duration
	DBErrors   int64
	Leases     store.LeaseSummary
	Messages   store.MessageCounts // live
	Ops        store.QueueOps      // over the range
	Queues     []store.QueueInfo   // with messages, newest first, at most StatusQueues
	Range      TimeRange
	Throughput []ThroughputPoint // newest first, one per bucket
	Workers    []WorkerStatus    // brokers seen in the last two minutes
}

// StatusQueues bounds Status.Queues.
const StatusQueues = 100

// ThroughputPoint is one bucket of the status series.
type ThroughputPoint struct {
	At       time.Time
	DBErrors int64
	Ops      store.QueueOps
	Process  ProcessPoint
}

// ProcessPoint sums the brokers' process gauges over a bucket: CPU, memory
// and pool are summed over brokers (each averaged over the bucket); the
// scheduling delay is the brokers' mean (and largest); free slots the
// fewest idle connections seen.
type ProcessPoint struct {
	CPUSystemPct, CPUUserPct float64
	FreeSlotsMin             float64
	PoolActive, PoolIdle     float64
	PoolSize                 float64
	RSSBytes                 float64
	SchedAvgMs, SchedMaxMs   float64
}

// WorkerStatus is one broker's recent figures.
type WorkerStatus struct {
	DBConnections     float64 // connections open
	FreeSlots         float64 // idle connections
	Hostname          string
	JobQueue          float64 // operations waiting for a connection
	LastSeen          time.Time
	MessagesProcessed int64 // acked successfully (of the tenant's queues, for the status route)
	Parked            float64
	SchedAvgMs        float64
	SchedMaxMs        float64
	WorkerID          string
}

// recentWorkers is how far back Status looks for brokers.
const recentWorkers = 2 * time.Minute

// Status sums up the tenant's queues (or those p selects) over p.Range.
func (c *Control) Status(ctx context.Context, tenant string, p SeriesParams) (*Status, error) {
	now := c.now()
	d := BucketFor(p.Range)
	out := &Status{Range: p.Range, Bucket: d}
	sp := seriesParams(tenant, p.Range, d)
	sp.Namespace, sp.Task = p.Namespace, p.Task
	if p.Queue != "" {
		sp.Queues = []string{p.Queue}
	}
	series, err := c.store.StatsQueueSeries(ctx, &sp)
	if err != nil {
		return nil, err
	}
	workers, err := c.store.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: sp.From, To: sp.To})
	if err != nil {
		return nil, err
	}
	points := map[int64]*ThroughputPoint{}
	for _, b := range Buckets(p.Range, d) {
		points[b.UnixMilli()] = &ThroughputPoint{At: b}
	}
	for _, b := range series {
		if pt := points[b.Bucket.UnixMilli()]; pt != nil {
			pt.Ops.Add(b.Ops)
		}
		out.Ops.Add(b.Ops)
	}
	for at, proc := range processPoints(workers, d) {
		if pt := points[at]; pt != nil {
			pt.Process = proc.point
			pt.DBErrors = proc.dbErrors
		}
		out.DBErrors += proc.dbErrors
	}
	for _, pt := range points {
		out.Throughput = append(out.Throughput, *pt)
	}
	sort.Slice(out.Throughput, func(i, j int) bool { return out.Throughput[i].At.After(out.Throughput[j].At) })

	if err := c.statusFigures(ctx, tenant, p, now, out); err != nil {
		return nil, err
	}
	if out.Workers, err = c.recentWorkers(ctx, tenant, now); err != nil {
		return nil, err
	}
	return out, nil
}

// statusFigures fills the live figures: the queues with messages, the
// messages of the selection and its leases.
func (c *Control) statusFigures(ctx context.Context, tenant string, p SeriesParams, now time.Time, out *Status) error {
	switch {
	case p.Queue != "":
		d, err := c.store.QueueGet(ctx, &store.QueueGetParams{Tenant: tenant, Name: p.Queue, Limit: 1, Now: now})
		if err != nil {
			return err
		}
		out.Messages = d.Queue.Messages
		if d.Queue.Messages.Total > 0 {
			out.Queues = []store.QueueInfo{d.Queue}
		}
	case p.Namespace != "" || p.Task != "":
		res, err := c.store.QueueList(ctx, &store.QueueListParams{Tenant: tenant, Namespace: p.Namespace,
			Task: p.Task, Limit: 1000, Now: now})
		if err != nil {
			return err
		}
		for _, q := range res.Queues {
			out.Messages.Add(q.Messages)
			if q.Messages.Total > 0 && len(out.Queues) < StatusQueues {
				out.Queues = append(out.Queues, q)
			}
		}
	default:
		o, err := c.store.QueueOverview(ctx, &store.QueueOverviewParams{Tenant: tenant, Now: now})
		if err != nil {
			return err
		}
		out.Messages = o.Messages
		res, err := c.store.QueueList(ctx, &store.QueueListParams{Tenant: tenant, Limit: StatusQueues, Now: now})
		if err != nil {
			return err
		}
		for _, q := range res.Queues {
			if q.Messages.Total > 0 {
				out.Queues = append(out.Queues, q)
			}
		}
	}
	l, err := c.store.StatsLeases(ctx, &store.StatsLeasesParams{Tenant: tenant, Queue: p.Queue, Now: now})
	if err != nil {
		return err
	}
	out.Leases = *l
	return nil
}

// recentWorkers describes the brokers seen in the last two minutes, with
// the messages they acked on the tenant's queues.
func (c *Control) recentWorkers(ctx context.Context, tenant string, now time.Time) ([]WorkerStatus, error) {
	r := TimeRange{From: now.Add(-recentWorkers), To: now.Add(time.Minute)}
	rows, err := c.store.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: r.From.Truncate(time.Minute), To: r.To})
	if err != nil {
		return nil, err
	}
	byQueue, err := c.store.StatsQueueSeries(ctx, &store.StatsSeriesParams{Tenant: tenant,
		From: r.From.Truncate(time.Minute), To: r.To, Bucket: wholeWindow, Group: store.SeriesByReplica})
	if err != nil {
		return nil, err
	}
	processed := map[[2]string]int64{}
	for _, b := range byQueue {
		processed[[2]string{b.Hostname, b.WorkerID}] += b.Ops.AckSuccess
	}
	return workerStatuses(rows, processed), nil
}

// workerStatuses sums each broker's rows (ordered by broker, then minute).
func workerStatuses(rows []store.WorkerMinute, processed map[[2]string]int64) []WorkerStatus {
	var out []WorkerStatus
	var g map[string]store.GaugeStat
	for i, w := range rows {
		if i == 0 || w.Hostname != rows[i-1].Hostname || w.WorkerID != rows[i-1].WorkerID {
			out = append(out, WorkerStatus{Hostname: w.Hostname, WorkerID: w.WorkerID})
			g = map[string]store.GaugeStat{}
		}
		ws := &out[len(out)-1]
		mergeGauges(g, w.Gauges)
		ws.LastSeen = w.Minute
		if processed == nil {
			ws.MessagesProcessed += w.Ops.AckSuccess
		}
		ws.SchedAvgMs, ws.SchedMaxMs = g[GaugeSchedAvg].Avg, g[GaugeSchedMax].Max
		ws.FreeSlots, ws.DBConnections = g[GaugePoolIdle].Last, g[GaugePoolOpen].Last
		ws.JobQueue, ws.Parked = g[GaugePoolWaiting].Last, g[GaugeParked].Last
	}
	if processed != nil {
		for i := range out {
			out[i].MessagesProcessed = processed[[2]string{out[i].Hostname, out[i].WorkerID}]
		}
	}
	return out
}

// mergeGauges merges the gauges of src (later samples) into dst.
func mergeGauges(dst, src map[string]store.GaugeStat) {
	for k, v := range src {
		g := dst[k]
		g.Merge(v)
		dst[k] = g
	}
}

// processBucket is the brokers' process figures in one bucket.
type processBucket struct {
	dbErrors int64
	point    ProcessPoint
}

// processPoints sums the brokers' rows per bucket of width d (see
// ProcessPoint), keyed by the bucket's Unix ms.
func processPoints(rows []store.WorkerMinute, d time.Duration) map[int64]*processBucket {
	type key struct {
		bucket       int64
		host, worker string
	}
	per := map[key]map[string]store.GaugeStat{}
	out := map[int64]*processBucket{}
	for _, w := range rows {
		k := key{store.BucketOf(w.Minute, d).UnixMilli(), w.Hostname, w.WorkerID}
		if per[k] == nil {
			per[k] = map[string]store.GaugeStat{}
		}
		mergeGauges(per[k], w.Gauges)
		pb := out[k.bucket]
		if pb == nil {
			pb = &processBucket{}
			out[k.bucket] = pb
		}
		pb.dbErrors += w.DBErrors
	}
	brokers := map[int64]int{}
	for k, g := range per {
		p := &out[k.bucket].point
		n := brokers[k.bucket]
		brokers[k.bucket] = n + 1
		p.CPUUserPct += g[GaugeCPUUser].Avg / 100
		p.CPUSystemPct += g[GaugeCPUSystem].Avg / 100
		p.RSSBytes += g[GaugeRSS].Avg
		p.PoolActive += g[GaugePoolActive].Avg
		p.PoolIdle += g[GaugePoolIdle].Avg
		p.PoolSize += g[GaugePoolSize].Avg
		p.SchedAvgMs = (p.SchedAvgMs*float64(n) + g[GaugeSchedAvg].Avg) / float64(n+1)
		p.SchedMaxMs = max(p.SchedMaxMs, g[GaugeSchedMax].Max)
		if idle := g[GaugePoolIdle]; idle.N > 0 && (n == 0 || idle.Min < p.FreeSlotsMin) {
			p.FreeSlotsMin = idle.Min
		}
	}
	return out
}

// StatusQueue describes one of the tenant's queues with its configuration
// (QueueGet: one read); store.ErrQueueNotFound if it has none of that name.
func (c *Control) StatusQueue(ctx context.Context, tenant string, p store.QueueGetParams) (*store.QueueDetail, error) {
	p.Tenant, p.Now = tenant, c.now()
	return c.store.QueueGet(ctx, &p)
}

// StatusPage is a page of the status view's newest messages.
type StatusPage struct {
	Limit, Offset int
	Queue         string
}

// StatusQueueMessages lists a page of one of the tenant's queues' messages,
// newest first, judged by queue mode's lane alone (Queen's status view; see
// docs/decisions.md); store.ErrQueueNotFound if it has none of that name.
// It is the listing of ListMessages with that one judgement, so the two
// views never drift apart.
func (c *Control) StatusQueueMessages(ctx context.Context, tenant string, p StatusPage) ([]store.ListedMessage, error) {
	// The view has no time window: every creation time is in it, a message
	// stamped by a clock ahead of ours included.
	from, to := time.UnixMilli(0).UTC(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	res, err := c.store.MessageList(ctx, &store.MessageListParams{From: from, Group: store.QueueMode,
		Limit: p.Limit, Now: c.now(), Offset: p.Offset, Queue: p.Queue, Tenant: tenant, To: to})
	if err != nil {
		return nil, err
	}
	if len(res.Messages) == 0 {
		// A listing of no queue is empty, not an error: only an empty page
		// asks whether the queue exists.
		if _, err := c.store.QueueGet(ctx, &store.QueueGetParams{Name: p.Queue, Limit: 1, Now: c.now(),
			Tenant: tenant}); err != nil {
			return nil, err
		}
	}
	return res.Messages, nil
}

// QueueMetrics reads what the per-queue Prometheus families show: the
// deepest limit queues of every tenant, the cluster's counters of the last
// complete minute, and spooled pushes per queue (spool may be nil).
func (c *Control) QueueMetrics(ctx context.Context, limit int, spool func() map[metrics.QueueKey]int64) (*metrics.QueueSnapshot, error) {
	now := c.now()
	g, err := c.store.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: now, Limit: limit})
	if err != nil {
		return nil, err
	}
	last := now.Truncate(time.Minute).Add(-time.Minute)
	minute, err := c.store.StatsQueueSeries(ctx, &store.StatsSeriesParams{AllTenants: true, From: last,
		To: last.Add(time.Minute), Group: store.SeriesByQueue})
	if err != nil {
		return nil, err
	}
	snap := &metrics.QueueSnapshot{Gauges: g, Minute: minute, MinuteAt: last}
	if spool != nil {
		snap.Spool = spool()
	}
	return snap, nil
}

// Now returns the control plane's current time (its clock), from which the
// routes' default windows are counted.
func (c *Control) Now() time.Time { return c.now() }
