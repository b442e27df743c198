package control

import (
	"context"
	"sort"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// The analytics routes: series of what the queues and the brokers did,
// from the sampler's per-minute rows. The queue series are the tenant's;
// the broker series (system, worker) and the engine's figures are the
// process's (or the cluster's).

// SeriesParams select a queue series: a window, and optionally one queue
// (Queue) or the queues of a namespace or task.
type SeriesParams struct {
	Namespace string
	Queue     string
	Range     TimeRange
	Task      string
}

// queues returns the queue filter of p.
func (p SeriesParams) queues() []string {
	if p.Queue == "" {
		return nil
	}
	return []string{p.Queue}
}

// Intervals of /api/v1/status/analytics.
var Intervals = map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}

// CountPoint is the messages pushed in one bucket.
type CountPoint struct {
	At       time.Time
	Messages int64
}

// PushedSeries returns the messages pushed to the tenant's queues per
// bucket of width d over p.Range, every bucket, oldest first.
func (c *Control) PushedSeries(ctx context.Context, tenant string, p SeriesParams, d time.Duration) ([]CountPoint, error) {
	sp := seriesParams(tenant, p.Range, d)
	sp.Namespace, sp.Task, sp.Queues = p.Namespace, p.Task, p.queues()
	rows, err := c.store.StatsQueueSeries(ctx, &sp)
	if err != nil {
		return nil, err
	}
	got := map[int64]int64{}
	for _, b := range rows {
		got[b.Bucket.UnixMilli()] += b.Ops.PushMessages
	}
	var out []CountPoint
	for _, b := range Buckets(p.Range, d) {
		out = append(out, CountPoint{At: b, Messages: got[b.UnixMilli()]})
	}
	return out, nil
}

// LagRow is one queue's pops in one minute.
type LagRow struct {
	AvgLagMs, MaxLagMs float64
	Minute             time.Time
	PopCount           int64
	Queue              string
}

// QueueLag lists, newest minute first, the minutes in which the tenant's
// queues (or one) delivered messages, at most limit rows.
func (c *Control) QueueLag(ctx context.Context, tenant string, p SeriesParams, limit int) ([]LagRow, error) {
	sp := seriesParams(tenant, p.Range, time.Minute)
	sp.Group, sp.Queues, sp.Namespace, sp.Task = store.SeriesByQueue, p.queues(), p.Namespace, p.Task
	rows, err := c.store.StatsQueueSeries(ctx, &sp)
	if err != nil {
		return nil, err
	}
	var out []LagRow
	for i := len(rows) - 1; i >= 0 && len(out) < limit; i-- {
		o := rows[i].Ops
		if o.PopMessages == 0 {
			continue
		}
		out = append(out, LagRow{Minute: rows[i].Bucket, Queue: rows[i].Queue, PopCount: o.PopMessages,
			AvgLagMs: o.AvgLagMs(), MaxLagMs: float64(o.LagMaxMs)})
	}
	return out, nil
}

// OpsPoint is one queue's operations in one bucket, with its figures at
// the bucket's end (when recorded).
type OpsPoint struct {
	At     time.Time
	Ops    store.QueueOps
	Parked int64
	Queue  string
	State  *store.QueueState // nil when none was recorded in the bucket
}

// QueueOps is the operations series of the tenant's busiest queues.
type QueueOps struct {
	Bucket  time.Duration
	Omitted int        // busy queues left out
	Points  []OpsPoint // oldest first, then by queue
	Queues  []string   // the queues of the series, busiest first
}

// wholeWindow is a bucket wider than any window (buckets align on the Unix
// epoch, so every minute before 2070 is in its first): a series read in
// it has one row per group.
const wholeWindow = 100 * 365 * 24 * time.Hour

// wholeOf returns sp as one bucket spanning its window, read from the same
// rows as sp's own buckets: the rollup slots only when those would be
// (store.SeriesFromSlots). wholeWindow is a whole number of slots, so alone
// it read the slots whenever the window began on a quarter hour, however
// short the window, and slots lag the minute rows until the next rollup:
// a one-hour window's totals then missed its newest minutes.
func wholeOf(sp store.StatsSeriesParams) store.StatsSeriesParams {
	slots := store.SeriesFromSlots(&sp)
	sp.Bucket = wholeWindow
	if !slots {
		sp.Bucket += time.Minute // not a whole number of slots: the minute rows
	}
	return sp
}

// MaxSeriesQueues bounds the queues of QueueOps: the busiest in the
// window.
const MaxSeriesQueues = 100

// QueueOps returns per-queue operations in buckets over p.Range, for the
// MaxSeriesQueues queues with the most requests (or the one p.Queue names).
func (c *Control) QueueOps(ctx context.Context, tenant string, p SeriesParams) (*QueueOps, error) {
	d := BucketFor(p.Range)
	out := &QueueOps{Bucket: d}
	sp := seriesParams(tenant, p.Range, d)
	sp.Group, sp.Queues, sp.Namespace, sp.Task = store.SeriesByQueue, p.queues(), p.Namespace, p.Task
	// First the busiest queues over the whole window (one bucket each).
	whole := wholeOf(sp)
	totals, err := c.store.StatsQueueSeries(ctx, &whole)
	if err != nil {
		return nil, err
	}
	busy := map[string]int64{}
	for _, b := range totals {
		o := b.Ops
		busy[b.Queue] += o.PushRequests + o.PopRequests + o.AckRequests + o.Transactions + b.Parked
	}
	for q := range busy {
		out.Queues = append(out.Queues, q)
	}
	sort.Slice(out.Queues, func(i, j int) bool {
		a, b := out.Queues[i], out.Queues[j]
		if busy[a] != busy[b] {
			return busy[a] > busy[b]
		}
		return a < b
	})
	if len(out.Queues) > MaxSeriesQueues {
		out.Omitted = len(out.Queues) - MaxSeriesQueues
		out.Queues = out.Queues[:MaxSeriesQueues]
	}
	if len(out.Queues) == 0 {
		return out, nil
	}
	sp.Queues = out.Queues
	rows, err := c.store.StatsQueueSeries(ctx, &sp)
	if err != nil {
		return nil, err
	}
	states, err := c.store.StatsQueueStateSeries(ctx, &sp)
	if err != nil {
		return nil, err
	}
	type key struct {
		at    int64
		queue string
	}
	byKey := map[key]*store.QueueState{}
	for i := range states {
		byKey[key{states[i].Minute.UnixMilli(), states[i].Queue}] = &states[i]
	}
	for _, b := range rows {
		out.Points = append(out.Points, OpsPoint{At: b.Bucket, Queue: b.Queue, Ops: b.Ops, Parked: b.Parked,
			State: byKey[key{b.Bucket.UnixMilli(), b.Queue}]})
	}
	return out, nil
}

// ParkedPoint is the long polls one broker had parked on one queue in one
// bucket (the most in a minute).
type ParkedPoint struct {
	At       time.Time
	Hostname string
	Parked   int64
	Queue    string
	WorkerID string
}

// ParkedReplicas returns, per bucket, queue and broker, the long polls
// parked on the tenant's queues over p.Range (buckets without any are left
// out), oldest first.
func (c *Control) ParkedReplicas(ctx context.Context, tenant string, p SeriesParams) ([]ParkedPoint, time.Duration, error) {
	d := BucketFor(p.Range)
	sp := seriesParams(tenant, p.Range, d)
	sp.Group, sp.Queues, sp.Namespace, sp.Task = store.SeriesByReplica, p.queues(), p.Namespace, p.Task
	rows, err := c.store.StatsQueueSeries(ctx, &sp)
	if err != nil {
		return nil, 0, err
	}
	var out []ParkedPoint
	for _, b := range rows {
		if b.Parked > 0 {
			out = append(out, ParkedPoint{At: b.Bucket, Queue: b.Queue, Hostname: b.Hostname, WorkerID: b.WorkerID,
				Parked: b.Parked})
		}
	}
	return out, d, nil
}

// RetentionPoint is what retention and eviction removed in one bucket.
type RetentionPoint struct {
	At                                     time.Time
	Completed, Eviction, Events, Retention int64
}

// Total is every message removed.
func (r RetentionPoint) Total() int64 { return r.Completed + r.Eviction + r.Retention }

// Retention returns what retention and eviction removed from the tenant's
// queues per bucket over p.Range (buckets without any are left out),
// oldest first, and the totals. Empty when the store keeps no retention
// history.
func (c *Control) Retention(ctx context.Context, tenant string, p SeriesParams) ([]RetentionPoint, RetentionPoint, time.Duration, error) {
	d := BucketFor(p.Range)
	sp := seriesParams(tenant, p.Range, d)
	sp.Queues = p.queues()
	rows, err := c.store.StatsRetentionSeries(ctx, &sp)
	if err != nil {
		return nil, RetentionPoint{}, 0, err
	}
	var out []RetentionPoint
	var total RetentionPoint
	for _, r := range rows {
		if len(out) == 0 || !out[len(out)-1].At.Equal(r.Bucket) {
			out = append(out, RetentionPoint{At: r.Bucket})
		}
		pt := &out[len(out)-1]
		for _, x := range []*RetentionPoint{pt, &total} {
			x.Events += r.Events
			switch store.RetentionKind(r.Kind) {
			case store.RetentionExpired:
				x.Retention += r.Messages
			case store.RetentionCompleted:
				x.Completed += r.Messages
			case store.RetentionEviction:
				x.Eviction += r.Messages
			}
		}
	}
	return out, total, d, nil
}

// BrokerParams select brokers' series: a window, and optionally one broker.
type BrokerParams struct {
	Hostname string
	Range    TimeRange
	WorkerID string
}

// Replica is one broker's process series.
type Replica struct {
	Hostname string
	PID      int
	Points   []ReplicaPoint // oldest first, buckets with samples only
	Port     int
	WorkerID string
}

// ReplicaPoint is one broker's process gauges over one bucket.
type ReplicaPoint struct {
	At     time.Time
	Gauges map[string]store.GaugeStat
}

// SystemMetrics returns each broker's process gauges per bucket over
// p.Range.
func (c *Control) SystemMetrics(ctx context.Context, p BrokerParams) ([]Replica, time.Duration, error) {
	d := BucketFor(p.Range)
	rows, err := c.store.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: store.BucketOf(p.Range.From, d),
		To: p.Range.To, Hostname: p.Hostname, WorkerID: p.WorkerID})
	if err != nil {
		return nil, 0, err
	}
	var out []Replica
	for i, w := range rows {
		if i == 0 || w.Hostname != rows[i-1].Hostname || w.WorkerID != rows[i-1].WorkerID {
			out = append(out, Replica{Hostname: w.Hostname, WorkerID: w.WorkerID})
		}
		r := &out[len(out)-1]
		r.PID, r.Port = w.PID, w.Port
		at := store.BucketOf(w.Minute, d)
		if len(r.Points) == 0 || !r.Points[len(r.Points)-1].At.Equal(at) {
			r.Points = append(r.Points, ReplicaPoint{At: at, Gauges: map[string]store.GaugeStat{}})
		}
		mergeGauges(r.Points[len(r.Points)-1].Gauges, w.Gauges)
	}
	return out, d, nil
}

// WorkerPoint is the brokers' work in one bucket: operations summed, and
// their gauges merged.
type WorkerPoint struct {
	At       time.Time
	DBErrors int64
	Gauges   map[string]store.GaugeStat
	Ops      store.QueueOps
}

// QueueLagSummary is one queue's pops over a window.
type QueueLagSummary struct {
	AvgLagMs, MaxLagMs float64
	PopCount           int64
	Queue              string
	Tenant             string
}

// WorkerMetrics is the brokers' work over a window.
type WorkerMetrics struct {
	Bucket   time.Duration
	DBErrors int64
	Ops      store.QueueOps
	Pending  int64         // live, every queue of every tenant
	Points   []WorkerPoint // every bucket, oldest first
	Queues   []QueueLagSummary
	Workers  []WorkerStatus
}

// WorkerMetrics sums the brokers' work per bucket over p.Range, lists the
// brokers and the queues they delivered from (every tenant's: the route is
// the process's).
func (c *Control) WorkerMetrics(ctx context.Context, p BrokerParams) (*WorkerMetrics, error) {
	d := BucketFor(p.Range)
	from := store.BucketOf(p.Range.From, d)
	rows, err := c.store.StatsWorkerSeries(ctx, &store.StatsSeriesParams{From: from, To: p.Range.To,
		Hostname: p.Hostname, WorkerID: p.WorkerID})
	if err != nil {
		return nil, err
	}
	out := &WorkerMetrics{Bucket: d, Workers: workerStatuses(rows, nil)}
	points := map[int64]*WorkerPoint{}
	for _, b := range Buckets(p.Range, d) {
		points[b.UnixMilli()] = &WorkerPoint{At: b, Gauges: map[string]store.GaugeStat{}}
	}
	for _, w := range rows {
		out.Ops.Add(w.Ops)
		out.DBErrors += w.DBErrors
		pt := points[store.BucketOf(w.Minute, d).UnixMilli()]
		if pt == nil {
			continue
		}
		pt.Ops.Add(w.Ops)
		pt.DBErrors += w.DBErrors
		mergeGauges(pt.Gauges, w.Gauges)
	}
	for _, pt := range points {
		out.Points = append(out.Points, *pt)
	}
	sort.Slice(out.Points, func(i, j int) bool { return out.Points[i].At.Before(out.Points[j].At) })

	qp := wholeOf(store.StatsSeriesParams{AllTenants: true, From: from, To: p.Range.To, Bucket: d,
		Group: store.SeriesByQueue, Hostname: p.Hostname, WorkerID: p.WorkerID})
	byQueue, err := c.store.StatsQueueSeries(ctx, &qp)
	if err != nil {
		return nil, err
	}
	sums := map[[2]string]*store.QueueOps{}
	for _, b := range byQueue {
		k := [2]string{b.Tenant, b.Queue}
		if sums[k] == nil {
			sums[k] = &store.QueueOps{}
		}
		sums[k].Add(b.Ops)
	}
	for k, o := range sums {
		if o.PopMessages > 0 {
			out.Queues = append(out.Queues, QueueLagSummary{Tenant: k[0], Queue: k[1], PopCount: o.PopMessages,
				AvgLagMs: o.AvgLagMs(), MaxLagMs: float64(o.LagMaxMs)})
		}
	}
	sort.Slice(out.Queues, func(i, j int) bool {
		a, b := out.Queues[i], out.Queues[j]
		if a.PopCount != b.PopCount {
			return a.PopCount > b.PopCount
		}
		return a.Tenant+"/"+a.Queue < b.Tenant+"/"+b.Queue
	})
	if len(out.Queues) > MaxSeriesQueues {
		out.Queues = out.Queues[:MaxSeriesQueues]
	}
	g, err := c.store.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: c.now(), Limit: 1})
	if err != nil {
		return nil, err
	}
	out.Pending = g.Pending
	return out, nil
}

// EngineStats reports the storage engine's own figures.
func (c *Control) EngineStats(ctx context.Context) (*store.EngineStats, error) {
	return c.store.StatsEngine(ctx, &store.StatsEngineParams{Now: c.now()})
}
