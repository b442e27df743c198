package httpapi

import (
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// The /api/v1/analytics/* routes (see status.go for the route table).

func gauge(g store.GaugeStat) api.Gauge {
	return api.Gauge{Avg: round3(g.Avg), Min: round3(g.Min), Max: round3(g.Max), Last: round3(g.Last)}
}

// brokerArgs reads a broker series' window and filters (hostname,
// workerId).
func (g *statusRoutes) brokerArgs(q *query) control.BrokerParams {
	return control.BrokerParams{Range: q.timeRange(g.control.Now(), time.Hour), Hostname: q.name("hostname"),
		WorkerID: q.name("workerId")}
}

// systemMetrics answers each broker's process gauges per bucket, in
// Queen's groups (cpu in percent × 100, memory, database pool, the
// database "thread pool": connections and operations waiting for one) and
// ours (the Go runtime, parked long polls, the spool).
func (g *statusRoutes) systemMetrics(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	bp := g.brokerArgs(q)
	if q.err != nil {
		return q.err
	}
	replicas, d, err := g.control.SystemMetrics(r.Context(), bp)
	if err != nil {
		return err
	}
	out := api.SystemMetrics{TimeRange: timeRange(bp.Range), Replicas: make([]api.Replica, len(replicas)),
		ReplicaCount: len(replicas), BucketMinutes: minutes(d)}
	for i, rep := range replicas {
		rj := api.Replica{Hostname: rep.Hostname, Port: rep.Port, WorkerID: rep.WorkerID, PID: rep.PID,
			TimeSeries: make([]api.SystemPoint, len(rep.Points))}
		for j, pt := range rep.Points {
			gs := func(name string) api.Gauge { return gauge(pt.Gauges[name]) }
			rj.TimeSeries[j] = api.SystemPoint{Timestamp: api.TimeOf(pt.At), SampleCount: pt.Gauges[control.GaugeRSS].N,
				Metrics: api.SystemGauges{
					CPU:    api.CPUGauges{UserUs: gs(control.GaugeCPUUser), SystemUs: gs(control.GaugeCPUSystem)},
					Memory: api.MemoryGauges{RSSBytes: gs(control.GaugeRSS), VirtualBytes: gs(control.GaugeVirtual)},
					Database: api.DatabaseGauges{PoolSize: gs(control.GaugePoolSize), PoolIdle: gs(control.GaugePoolIdle),
						PoolActive: gs(control.GaugePoolActive), PoolOpen: gs(control.GaugePoolOpen)},
					Threadpool: api.ThreadpoolGauges{DB: api.ThreadpoolDB{PoolSize: gs(control.GaugePoolSize),
						QueueSize: gs(control.GaugePoolWaiting)}},
					Runtime: api.RuntimeGauges{Goroutines: gs(control.GaugeGoroutines), HeapBytes: gs(control.GaugeHeap),
						SchedLagAvgMs: gs(control.GaugeSchedAvg), SchedLagMaxMs: gs(control.GaugeSchedMax)},
					LongPolls: api.LongPollGauges{Parked: gs(control.GaugeParked)},
					Spool:     api.SpoolGauges{Pending: gs(control.GaugeSpool)},
				}}
		}
		out.PointCount += len(rep.Points)
		out.Replicas[i] = rj
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// workerMetrics answers what the brokers did per bucket (every tenant's
// queues: the route is the process's).
func (g *statusRoutes) workerMetrics(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	bp := g.brokerArgs(q)
	if q.err != nil {
		return q.err
	}
	wm, err := g.control.WorkerMetrics(r.Context(), bp)
	if err != nil {
		return err
	}
	d := wm.Bucket
	out := api.WorkerMetrics{TimeRange: timeRange(bp.Range), BucketMinutes: minutes(d), PointCount: len(wm.Points),
		TimeSeries: make([]api.WorkerPoint, len(wm.Points)), Workers: make([]api.Worker, len(wm.Workers)),
		Queues: make([]api.QueueLagSummary, len(wm.Queues))}
	for i, pt := range wm.Points {
		o, gs := pt.Ops, pt.Gauges
		acks := o.AckSuccess + o.AckFailed
		out.TimeSeries[i] = api.WorkerPoint{Timestamp: api.TimeOf(pt.At), PushMessages: o.PushMessages,
			PopMessages: o.PopMessages, AckMessages: acks, PushRequests: o.PushRequests, PopRequests: o.PopRequests,
			AckRequests: o.AckRequests, JobsDone: o.PushRequests + o.PopRequests + o.AckRequests + o.Transactions,
			PushPerSecond: perSecond(o.PushMessages, d), PopPerSecond: perSecond(o.PopMessages, d),
			AckPerSecond: perSecond(acks, d), AvgEventLoopLagMs: round3(gs[control.GaugeSchedAvg].Avg),
			MaxEventLoopLagMs: round3(gs[control.GaugeSchedMax].Max), AvgFreeSlots: round3(gs[control.GaugePoolIdle].Avg),
			MinFreeSlots: gs[control.GaugePoolIdle].Min, DBConnections: round3(gs[control.GaugePoolOpen].Avg),
			AvgJobQueueSize: round3(gs[control.GaugePoolWaiting].Avg), MaxJobQueueSize: gs[control.GaugePoolWaiting].Max,
			BackoffSize: round3(gs[control.GaugeParked].Avg), AvgLagMs: round3(o.AvgLagMs()),
			MaxLagMs: float64(o.LagMaxMs), LagCount: o.LagCount, DBErrors: pt.DBErrors, AckSuccess: o.AckSuccess,
			AckFailed: o.AckFailed, DLQCount: o.DLQ}
	}
	for i, ws := range wm.Workers {
		out.Workers[i] = api.Worker{Hostname: ws.Hostname, WorkerID: ws.WorkerID, AvgEventLoopLagMs: round3(ws.SchedAvgMs),
			MaxEventLoopLagMs: round3(ws.SchedMaxMs), FreeSlots: ws.FreeSlots, DBConnections: ws.DBConnections,
			JobQueueSize: ws.JobQueue, BackoffSize: ws.Parked, MessagesProcessed: ws.MessagesProcessed,
			LastSeen: api.TimeOf(ws.LastSeen)}
	}
	for i, ql := range wm.Queues {
		out.Queues[i] = api.QueueLagSummary{QueueName: ql.Queue, Tenant: ql.Tenant, PopCount: ql.PopCount,
			AvgLagMs: round3(ql.AvgLagMs), MaxLagMs: ql.MaxLagMs}
	}
	o := wm.Ops
	out.Summary = api.WorkerSummary{TotalPushMessages: o.PushMessages, TotalPopMessages: o.PopMessages,
		TotalAckMessages: o.AckSuccess + o.AckFailed, TotalPushRequests: o.PushRequests,
		TotalPopRequests: o.PopRequests, TotalAckRequests: o.AckRequests, TotalDBErrors: wm.DBErrors,
		TotalAckFailed: o.AckFailed, TotalDLQ: o.DLQ, PendingMessages: wm.Pending}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queueLag answers a bare array of per-minute pop lags, newest first.
func (g *statusRoutes) queueLag(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := g.seriesArgs(q, time.Hour)
	limit := q.int("limit", DefaultLagRows, intRange{1, MaxLagRows})
	if q.err != nil {
		return q.err
	}
	rows, err := g.control.QueueLag(r.Context(), caller(r).Tenant, sp, limit)
	if err != nil {
		return err
	}
	out := make([]api.QueueLagRow, len(rows))
	for i, lr := range rows {
		out[i] = api.QueueLagRow{QueueName: lr.Queue, PopCount: lr.PopCount, AvgLagMs: round3(lr.AvgLagMs),
			MaxLagMs: lr.MaxLagMs, BucketTime: api.TimeOf(lr.Minute)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queueOps answers per-queue operations per bucket, oldest first, for the
// busiest queues (control.MaxSeriesQueues).
func (g *statusRoutes) queueOps(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := g.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	ops, err := g.control.QueueOps(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return err
	}
	d := ops.Bucket
	out := api.QueueOps{TimeRange: timeRange(sp.Range), BucketMinutes: minutes(d),
		Series: make([]api.QueueOpsPoint, len(ops.Points)), Queues: ops.Queues, OmittedQueues: ops.Omitted}
	if out.Queues == nil {
		out.Queues = []string{}
	}
	for i, pt := range ops.Points {
		o := pt.Ops
		pj := api.QueueOpsPoint{Bucket: api.TimeOf(pt.At), QueueName: pt.Queue, PushRequests: o.PushRequests,
			PushMessages: o.PushMessages, PopMessages: o.PopMessages, PopEmpty: o.PopEmpty, AckRequests: o.AckRequests,
			AckSuccess: o.AckSuccess, AckFailed: o.AckFailed, Transactions: o.Transactions,
			AvgLagMs: round3(o.AvgLagMs()), MaxLagMs: float64(o.LagMaxMs), PushPerSecond: perSecond(o.PushMessages, d),
			PopPerSecond: perSecond(o.PopMessages, d), AckPerSecond: perSecond(o.AckSuccess+o.AckFailed, d),
			EmptyPerSecond: perSecond(o.PopEmpty, d), ParkedCount: pt.Parked}
		if st := pt.State; st != nil {
			pj.PartitionCount, pj.Pending, pj.Processing, pj.DeadLetter = &st.Partitions, &st.Pending,
				&st.Processing, &st.DeadLetter
		}
		out.Series[i] = pj
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// parkedReplicas answers the long polls each broker had parked on the
// tenant's queues, per bucket.
func (g *statusRoutes) parkedReplicas(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := g.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	points, d, err := g.control.ParkedReplicas(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return err
	}
	out := api.ParkedReplicas{TimeRange: timeRange(sp.Range), BucketMinutes: minutes(d),
		Series: make([]api.ParkedPoint, len(points)), Replicas: []api.ReplicaName{}}
	seen := map[api.ReplicaName]bool{}
	for i, p := range points {
		out.Series[i] = api.ParkedPoint{Bucket: api.TimeOf(p.At), QueueName: p.Queue, Hostname: p.Hostname,
			WorkerID: p.WorkerID, ParkedCount: p.Parked}
		if rn := (api.ReplicaName{Hostname: p.Hostname, WorkerID: p.WorkerID}); !seen[rn] {
			seen[rn] = true
			out.Replicas = append(out.Replicas, rn)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func retentionCounts(p control.RetentionPoint) api.RetentionCounts {
	return api.RetentionCounts{RetentionMsgs: p.Retention, CompletedRetentionMsgs: p.Completed,
		EvictionMsgs: p.Eviction, TotalMsgs: p.Total(), EventCount: p.Events}
}

// retention answers what retention and eviction removed from the tenant's
// queues per bucket; empty series while the store keeps no history.
func (g *statusRoutes) retention(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := g.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	points, total, d, err := g.control.Retention(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return err
	}
	out := api.Retention{TimeRange: timeRange(sp.Range), BucketMinutes: minutes(d),
		Series: make([]api.RetentionPoint, len(points)), Totals: retentionCounts(total)}
	for i, p := range points {
		out.Series[i] = api.RetentionPoint{Bucket: api.TimeOf(p.At), RetentionCounts: retentionCounts(p)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func hits(hit, read int64) api.Hits {
	return api.Hits{Hits: hit, Reads: read, HitRatio: ratio(hit, hit+read)}
}

// engineStats answers the storage engine's own figures under Queen's keys
// (PostgreSQL's statistics views; on the embedded engine SQLite's pragmas,
// and the lists it cannot fill are empty).
func (g *statusRoutes) engineStats(w http.ResponseWriter, r *http.Request) error {
	e, err := g.control.EngineStats(r.Context())
	if err != nil {
		return err
	}
	db := e.Database
	out := api.EngineStats{
		Timestamp: api.TimeOf(g.control.Now()),
		Engine:    g.control.Engine(),
		Database: api.EngineDatabase{Name: db.Name, SizeBytes: db.SizeBytes, Connections: int64(db.Connections),
			Commits: db.Commits, Rollbacks: db.Rollbacks, Deadlocks: db.Deadlocks, TempBytes: db.TempBytes,
			PageSize: db.PageSize, PageCount: db.PageCount, FreelistPages: db.FreelistPages, WALBytes: db.WALBytes},
		DatabaseCache:    hits(db.BlocksHit, db.BlocksRead),
		TableCache:       make([]api.EngineTableCache, 0, len(e.Tables)),
		DeadTuples:       make([]api.EngineDeadTuples, 0, len(e.Tables)),
		HotUpdates:       make([]api.EngineHotUpdates, 0, len(e.Tables)),
		AutovacuumStatus: make([]api.EngineVacuum, 0, len(e.Tables)),
		TableSizes:       make([]api.EngineTableSize, 0, len(e.Tables)),
		IndexCache:       make([]api.EngineIndexCache, 0, len(e.Indexes)),
		BufferConfig:     make([]api.EngineSetting, 0, len(e.Settings)),
		ActiveQueries:    make([]api.EngineActivity, 0, len(e.Activity)),
		BufferUsage: api.EngineBufferUsage{PageSize: db.PageSize, CachePages: db.CachePages,
			CacheBytes: db.CachePages * db.PageSize, FreelistPages: db.FreelistPages,
			FreelistBytes: db.FreelistPages * db.PageSize, WALBytes: db.WALBytes},
	}
	var tHit, tRead, iHit, iRead int64
	for _, t := range e.Tables {
		tHit, tRead = tHit+t.BlocksHit, tRead+t.BlocksRead
		out.TableCache = append(out.TableCache, api.EngineTableCache{Table: t.Name, HeapHits: t.BlocksHit,
			HeapReads: t.BlocksRead, HitRatio: hits(t.BlocksHit, t.BlocksRead).HitRatio})
		out.DeadTuples = append(out.DeadTuples, api.EngineDeadTuples{Table: t.Name, LiveTuples: t.Rows,
			DeadTuples: t.DeadRows, DeadRatio: ratio(t.DeadRows, t.Rows+t.DeadRows)})
		out.HotUpdates = append(out.HotUpdates, api.EngineHotUpdates{Table: t.Name, Updates: t.Updates,
			HotUpdates: t.HotUpdates, HotRatio: ratio(t.HotUpdates, t.Updates)})
		out.AutovacuumStatus = append(out.AutovacuumStatus, api.EngineVacuum{Table: t.Name,
			LastVacuum: timeOrNull(t.LastVacuum), LastAutovacuum: timeOrNull(t.LastAutovacuum),
			VacuumCount: t.VacuumCount, AutovacuumCount: t.AutovacuumCount})
		out.TableSizes = append(out.TableSizes, api.EngineTableSize{Table: t.Name, TotalBytes: t.TotalBytes,
			TableBytes: t.TableBytes, IndexBytes: t.IndexBytes, Rows: t.Rows})
	}
	for _, ix := range e.Indexes {
		iHit, iRead = iHit+ix.BlocksHit, iRead+ix.BlocksRead
		out.IndexCache = append(out.IndexCache, api.EngineIndexCache{Index: ix.Name, Table: ix.Table,
			Hits: ix.BlocksHit, Reads: ix.BlocksRead, HitRatio: hits(ix.BlocksHit, ix.BlocksRead).HitRatio,
			Scans: ix.Scans, SizeBytes: ix.SizeBytes})
	}
	out.CacheSummary = api.EngineCacheSummary{Tables: hits(tHit, tRead), Indexes: hits(iHit, iRead)}
	for _, st := range e.Settings {
		out.BufferConfig = append(out.BufferConfig, api.EngineSetting{Name: st.Name, Setting: st.Value,
			Unit: nullable(st.Unit)})
	}
	for _, act := range e.Activity {
		out.ActiveQueries = append(out.ActiveQueries, api.EngineActivity{PID: act.PID, State: act.State,
			Query: act.Query, WaitEvent: nullable(act.WaitEvent), DurationMs: act.Duration.Milliseconds()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
