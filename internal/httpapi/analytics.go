package httpapi

import (
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// The /api/v1/analytics/* routes (see status.go for the route table).

// gaugeJSON is one gauge over a bucket, Queen's {avg,min,max,last}.
type gaugeJSON struct {
	Avg  float64 `json:"avg"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Last float64 `json:"last"`
}

func gauge(g store.GaugeStat) gaugeJSON {
	return gaugeJSON{Avg: round3(g.Avg), Min: round3(g.Min), Max: round3(g.Max), Last: round3(g.Last)}
}

// brokerArgs reads a broker series' window and filters (hostname,
// workerId).
func (a *api) brokerArgs(q *query) control.BrokerParams {
	return control.BrokerParams{Range: q.timeRange(a.control.Now(), time.Hour), Hostname: q.name("hostname"),
		WorkerID: q.name("workerId")}
}

type systemPointJSON struct {
	Timestamp   string         `json:"timestamp"`
	SampleCount int64          `json:"sampleCount"`
	Metrics     map[string]any `json:"metrics"`
}

type replicaJSON struct {
	Hostname   string            `json:"hostname"`
	Port       int               `json:"port"`
	WorkerID   string            `json:"workerId"`
	PID        int               `json:"pid"`
	TimeSeries []systemPointJSON `json:"timeSeries"`
}

type systemMetricsJSON struct {
	TimeRange     timeRangeJSON `json:"timeRange"`
	Replicas      []replicaJSON `json:"replicas"`
	ReplicaCount  int           `json:"replicaCount"`
	BucketMinutes int           `json:"bucketMinutes"`
	PointCount    int           `json:"pointCount"`
}

// systemMetrics answers each broker's process gauges per bucket, in
// Queen's groups (cpu in percent × 100, memory, database pool, the
// database "thread pool": connections and operations waiting for one) and
// ours (the Go runtime, parked long polls, the spool).
func (a *api) systemMetrics(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	bp := a.brokerArgs(q)
	if q.err != nil {
		return q.err
	}
	replicas, d, err := a.control.SystemMetrics(r.Context(), bp)
	if err != nil {
		return err
	}
	out := systemMetricsJSON{TimeRange: rangeJSON(bp.Range), Replicas: make([]replicaJSON, len(replicas)),
		ReplicaCount: len(replicas), BucketMinutes: minutes(d)}
	for i, rep := range replicas {
		rj := replicaJSON{Hostname: rep.Hostname, Port: rep.Port, WorkerID: rep.WorkerID, PID: rep.PID,
			TimeSeries: make([]systemPointJSON, len(rep.Points))}
		for j, pt := range rep.Points {
			g := func(name string) gaugeJSON { return gauge(pt.Gauges[name]) }
			rj.TimeSeries[j] = systemPointJSON{Timestamp: timestamp(pt.At), SampleCount: pt.Gauges[control.GaugeRSS].N,
				Metrics: map[string]any{
					"cpu":    map[string]any{"user_us": g(control.GaugeCPUUser), "system_us": g(control.GaugeCPUSystem)},
					"memory": map[string]any{"rss_bytes": g(control.GaugeRSS), "virtual_bytes": g(control.GaugeVirtual)},
					"database": map[string]any{"pool_size": g(control.GaugePoolSize), "pool_idle": g(control.GaugePoolIdle),
						"pool_active": g(control.GaugePoolActive), "pool_open": g(control.GaugePoolOpen)},
					"threadpool": map[string]any{"db": map[string]any{"pool_size": g(control.GaugePoolSize),
						"queue_size": g(control.GaugePoolWaiting)}},
					"runtime": map[string]any{"goroutines": g(control.GaugeGoroutines), "heap_bytes": g(control.GaugeHeap),
						"sched_lag_avg_ms": g(control.GaugeSchedAvg), "sched_lag_max_ms": g(control.GaugeSchedMax)},
					"long_polls": map[string]any{"parked": g(control.GaugeParked)},
					"spool":      map[string]any{"pending": g(control.GaugeSpool)},
				}}
		}
		out.PointCount += len(rep.Points)
		out.Replicas[i] = rj
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type workerPointJSON struct {
	Timestamp         string  `json:"timestamp"`
	PushMessages      int64   `json:"pushMessages"`
	PopMessages       int64   `json:"popMessages"`
	AckMessages       int64   `json:"ackMessages"`
	PushRequests      int64   `json:"pushRequests"`
	PopRequests       int64   `json:"popRequests"`
	AckRequests       int64   `json:"ackRequests"`
	JobsDone          int64   `json:"jobsDone"`
	PushPerSecond     float64 `json:"pushPerSecond"`
	PopPerSecond      float64 `json:"popPerSecond"`
	AckPerSecond      float64 `json:"ackPerSecond"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	AvgFreeSlots      float64 `json:"avgFreeSlots"`
	MinFreeSlots      float64 `json:"minFreeSlots"`
	DBConnections     float64 `json:"dbConnections"`
	AvgJobQueueSize   float64 `json:"avgJobQueueSize"`
	MaxJobQueueSize   float64 `json:"maxJobQueueSize"`
	BackoffSize       float64 `json:"backoffSize"`
	AvgLagMs          float64 `json:"avgLagMs"`
	MaxLagMs          float64 `json:"maxLagMs"`
	LagCount          int64   `json:"lagCount"`
	DBErrors          int64   `json:"dbErrors"`
	AckSuccess        int64   `json:"ackSuccess"`
	AckFailed         int64   `json:"ackFailed"`
	DLQCount          int64   `json:"dlqCount"`
}

type workerJSON struct {
	Hostname          string  `json:"hostname"`
	WorkerID          string  `json:"workerId"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	FreeSlots         float64 `json:"freeSlots"`
	DBConnections     float64 `json:"dbConnections"`
	JobQueueSize      float64 `json:"jobQueueSize"`
	BackoffSize       float64 `json:"backoffSize"`
	MessagesProcessed int64   `json:"messagesProcessed"`
	LastSeen          string  `json:"lastSeen"`
}

type queueLagSummaryJSON struct {
	QueueName string  `json:"queueName"`
	Tenant    string  `json:"tenant"`
	PopCount  int64   `json:"popCount"`
	AvgLagMs  float64 `json:"avgLagMs"`
	MaxLagMs  float64 `json:"maxLagMs"`
}

type workerSummaryJSON struct {
	TotalPushMessages int64 `json:"totalPushMessages"`
	TotalPopMessages  int64 `json:"totalPopMessages"`
	TotalAckMessages  int64 `json:"totalAckMessages"`
	TotalPushRequests int64 `json:"totalPushRequests"`
	TotalPopRequests  int64 `json:"totalPopRequests"`
	TotalAckRequests  int64 `json:"totalAckRequests"`
	TotalDBErrors     int64 `json:"totalDbErrors"`
	TotalAckFailed    int64 `json:"totalAckFailed"`
	TotalDLQ          int64 `json:"totalDlq"`
	PendingMessages   int64 `json:"pendingMessages"`
}

type workerMetricsJSON struct {
	TimeRange     timeRangeJSON         `json:"timeRange"`
	BucketMinutes int                   `json:"bucketMinutes"`
	PointCount    int                   `json:"pointCount"`
	TimeSeries    []workerPointJSON     `json:"timeSeries"`
	Workers       []workerJSON          `json:"workers"`
	Queues        []queueLagSummaryJSON `json:"queues"`
	Summary       workerSummaryJSON     `json:"summary"`
}

// workerMetrics answers what the brokers did per bucket (every tenant's
// queues: the route is the process's).
func (a *api) workerMetrics(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	bp := a.brokerArgs(q)
	if q.err != nil {
		return q.err
	}
	wm, err := a.control.WorkerMetrics(r.Context(), bp)
	if err != nil {
		return err
	}
	d := wm.Bucket
	out := workerMetricsJSON{TimeRange: rangeJSON(bp.Range), BucketMinutes: minutes(d), PointCount: len(wm.Points),
		TimeSeries: make([]workerPointJSON, len(wm.Points)), Workers: make([]workerJSON, len(wm.Workers)),
		Queues: make([]queueLagSummaryJSON, len(wm.Queues))}
	for i, pt := range wm.Points {
		o, g := pt.Ops, pt.Gauges
		acks := o.AckSuccess + o.AckFailed
		out.TimeSeries[i] = workerPointJSON{Timestamp: timestamp(pt.At), PushMessages: o.PushMessages,
			PopMessages: o.PopMessages, AckMessages: acks, PushRequests: o.PushRequests, PopRequests: o.PopRequests,
			AckRequests: o.AckRequests, JobsDone: o.PushRequests + o.PopRequests + o.AckRequests + o.Transactions,
			PushPerSecond: perSecond(o.PushMessages, d), PopPerSecond: perSecond(o.PopMessages, d),
			AckPerSecond: perSecond(acks, d), AvgEventLoopLagMs: round3(g[control.GaugeSchedAvg].Avg),
			MaxEventLoopLagMs: round3(g[control.GaugeSchedMax].Max), AvgFreeSlots: round3(g[control.GaugePoolIdle].Avg),
			MinFreeSlots: g[control.GaugePoolIdle].Min, DBConnections: round3(g[control.GaugePoolOpen].Avg),
			AvgJobQueueSize: round3(g[control.GaugePoolWaiting].Avg), MaxJobQueueSize: g[control.GaugePoolWaiting].Max,
			BackoffSize: round3(g[control.GaugeParked].Avg), AvgLagMs: round3(o.AvgLagMs()),
			MaxLagMs: float64(o.LagMaxMs), LagCount: o.LagCount, DBErrors: pt.DBErrors, AckSuccess: o.AckSuccess,
			AckFailed: o.AckFailed, DLQCount: o.DLQ}
	}
	for i, ws := range wm.Workers {
		out.Workers[i] = workerJSON{Hostname: ws.Hostname, WorkerID: ws.WorkerID, AvgEventLoopLagMs: round3(ws.SchedAvgMs),
			MaxEventLoopLagMs: round3(ws.SchedMaxMs), FreeSlots: ws.FreeSlots, DBConnections: ws.DBConnections,
			JobQueueSize: ws.JobQueue, BackoffSize: ws.Parked, MessagesProcessed: ws.MessagesProcessed,
			LastSeen: timestamp(ws.LastSeen)}
	}
	for i, ql := range wm.Queues {
		out.Queues[i] = queueLagSummaryJSON{QueueName: ql.Queue, Tenant: ql.Tenant, PopCount: ql.PopCount,
			AvgLagMs: round3(ql.AvgLagMs), MaxLagMs: ql.MaxLagMs}
	}
	o := wm.Ops
	out.Summary = workerSummaryJSON{TotalPushMessages: o.PushMessages, TotalPopMessages: o.PopMessages,
		TotalAckMessages: o.AckSuccess + o.AckFailed, TotalPushRequests: o.PushRequests,
		TotalPopRequests: o.PopRequests, TotalAckRequests: o.AckRequests, TotalDBErrors: wm.DBErrors,
		TotalAckFailed: o.AckFailed, TotalDLQ: o.DLQ, PendingMessages: wm.Pending}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type lagRowJSON struct {
	QueueName  string  `json:"queueName"`
	PopCount   int64   `json:"popCount"`
	AvgLagMs   float64 `json:"avgLagMs"`
	MaxLagMs   float64 `json:"maxLagMs"`
	BucketTime string  `json:"bucketTime"`
}

// queueLag answers a bare array of per-minute pop lags, newest first.
func (a *api) queueLag(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := a.seriesArgs(q, time.Hour)
	limit := q.int("limit", DefaultLagRows, intRange{1, MaxLagRows})
	if q.err != nil {
		return q.err
	}
	rows, err := a.control.QueueLag(r.Context(), caller(r).Tenant, sp, limit)
	if err != nil {
		return err
	}
	out := make([]lagRowJSON, len(rows))
	for i, row := range rows {
		out[i] = lagRowJSON{QueueName: row.Queue, PopCount: row.PopCount, AvgLagMs: round3(row.AvgLagMs),
			MaxLagMs: row.MaxLagMs, BucketTime: timestamp(row.Minute)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type opsPointJSON struct {
	Bucket            string  `json:"bucket"`
	QueueName         string  `json:"queueName"`
	PushRequests      int64   `json:"pushRequests"`
	PushMessages      int64   `json:"pushMessages"`
	PopMessages       int64   `json:"popMessages"`
	PopEmpty          int64   `json:"popEmpty"`
	AckRequests       int64   `json:"ackRequests"`
	AckSuccess        int64   `json:"ackSuccess"`
	AckFailed         int64   `json:"ackFailed"`
	Transactions      int64   `json:"transactions"`
	PartitionsCreated int64   `json:"partitionsCreated"`
	PartitionsDeleted int64   `json:"partitionsDeleted"`
	PartitionCount    *int    `json:"partitionCount"`
	AvgLagMs          float64 `json:"avgLagMs"`
	MaxLagMs          float64 `json:"maxLagMs"`
	PushPerSecond     float64 `json:"pushPerSecond"`
	PopPerSecond      float64 `json:"popPerSecond"`
	AckPerSecond      float64 `json:"ackPerSecond"`
	EmptyPerSecond    float64 `json:"emptyPerSecond"`
	ParkedCount       int64   `json:"parkedCount"`
	Pending           *int64  `json:"pending"`
	Processing        *int64  `json:"processing"`
	DeadLetter        *int64  `json:"deadLetter"`
}

type queueOpsJSON struct {
	TimeRange     timeRangeJSON  `json:"timeRange"`
	BucketMinutes int            `json:"bucketMinutes"`
	Series        []opsPointJSON `json:"series"`
	Queues        []string       `json:"queues"`
	OmittedQueues int            `json:"omittedQueues"`
}

// queueOps answers per-queue operations per bucket, oldest first, for the
// busiest queues (control.MaxSeriesQueues).
func (a *api) queueOps(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := a.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	ops, err := a.control.QueueOps(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return err
	}
	d := ops.Bucket
	out := queueOpsJSON{TimeRange: rangeJSON(sp.Range), BucketMinutes: minutes(d),
		Series: make([]opsPointJSON, len(ops.Points)), Queues: ops.Queues, OmittedQueues: ops.Omitted}
	if out.Queues == nil {
		out.Queues = []string{}
	}
	for i, pt := range ops.Points {
		o := pt.Ops
		pj := opsPointJSON{Bucket: timestamp(pt.At), QueueName: pt.Queue, PushRequests: o.PushRequests,
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

type parkedPointJSON struct {
	Bucket      string `json:"bucket"`
	QueueName   string `json:"queueName"`
	Hostname    string `json:"hostname"`
	WorkerID    string `json:"workerId"`
	ParkedCount int64  `json:"parkedCount"`
}

type replicaNameJSON struct {
	Hostname string `json:"hostname"`
	WorkerID string `json:"workerId"`
}

type parkedJSON struct {
	TimeRange     timeRangeJSON     `json:"timeRange"`
	BucketMinutes int               `json:"bucketMinutes"`
	Series        []parkedPointJSON `json:"series"`
	Replicas      []replicaNameJSON `json:"replicas"`
}

// parkedReplicas answers the long polls each broker had parked on the
// tenant's queues, per bucket.
func (a *api) parkedReplicas(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := a.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	points, d, err := a.control.ParkedReplicas(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return err
	}
	out := parkedJSON{TimeRange: rangeJSON(sp.Range), BucketMinutes: minutes(d),
		Series: make([]parkedPointJSON, len(points)), Replicas: []replicaNameJSON{}}
	seen := map[replicaNameJSON]bool{}
	for i, p := range points {
		out.Series[i] = parkedPointJSON{Bucket: timestamp(p.At), QueueName: p.Queue, Hostname: p.Hostname,
			WorkerID: p.WorkerID, ParkedCount: p.Parked}
		if rn := (replicaNameJSON{p.Hostname, p.WorkerID}); !seen[rn] {
			seen[rn] = true
			out.Replicas = append(out.Replicas, rn)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type retentionPointJSON struct {
	Bucket string `json:"bucket,omitempty"`
	retentionCountsJSON
}

type retentionCountsJSON struct {
	RetentionMsgs          int64 `json:"retentionMsgs"`
	CompletedRetentionMsgs int64 `json:"completedRetentionMsgs"`
	EvictionMsgs           int64 `json:"evictionMsgs"`
	TotalMsgs              int64 `json:"totalMsgs"`
	EventCount             int64 `json:"eventCount"`
}

func retentionCounts(p control.RetentionPoint) retentionCountsJSON {
	return retentionCountsJSON{RetentionMsgs: p.Retention, CompletedRetentionMsgs: p.Completed,
		EvictionMsgs: p.Eviction, TotalMsgs: p.Total(), EventCount: p.Events}
}

type retentionJSON struct {
	TimeRange     timeRangeJSON        `json:"timeRange"`
	BucketMinutes int                  `json:"bucketMinutes"`
	Series        []retentionPointJSON `json:"series"`
	Totals        retentionCountsJSON  `json:"totals"`
}

// retention answers what retention and eviction removed from the tenant's
// queues per bucket; empty series while the store keeps no history.
func (a *api) retention(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	sp := a.seriesArgs(q, time.Hour)
	if q.err != nil {
		return q.err
	}
	points, total, d, err := a.control.Retention(r.Context(), caller(r).Tenant, sp)
	if err != nil {
		return err
	}
	out := retentionJSON{TimeRange: rangeJSON(sp.Range), BucketMinutes: minutes(d),
		Series: make([]retentionPointJSON, len(points)), Totals: retentionCounts(total)}
	for i, p := range points {
		out.Series[i] = retentionPointJSON{Bucket: timestamp(p.At), retentionCountsJSON: retentionCounts(p)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type hitsJSON struct {
	Hits     int64   `json:"hits"`
	Reads    int64   `json:"reads"`
	HitRatio float64 `json:"hitRatio"`
}

func hits(hit, read int64) hitsJSON {
	return hitsJSON{Hits: hit, Reads: read, HitRatio: ratio(hit, hit+read)}
}

// engineStats answers the storage engine's own figures under Queen's keys
// (PostgreSQL's statistics views; on the embedded engine SQLite's pragmas,
// and the lists it cannot fill are empty).
func (a *api) engineStats(w http.ResponseWriter, r *http.Request) error {
	e, err := a.control.EngineStats(r.Context())
	if err != nil {
		return err
	}
	db := e.Database
	tableCache := make([]map[string]any, 0, len(e.Tables))
	deadTuples := make([]map[string]any, 0, len(e.Tables))
	hotUpdates := make([]map[string]any, 0, len(e.Tables))
	vacuum := make([]map[string]any, 0, len(e.Tables))
	sizes := make([]map[string]any, 0, len(e.Tables))
	var tHit, tRead, iHit, iRead int64
	for _, t := range e.Tables {
		tHit, tRead = tHit+t.BlocksHit, tRead+t.BlocksRead
		tableCache = append(tableCache, map[string]any{"table": t.Name, "heapHits": t.BlocksHit,
			"heapReads": t.BlocksRead, "hitRatio": hits(t.BlocksHit, t.BlocksRead).HitRatio})
		deadTuples = append(deadTuples, map[string]any{"table": t.Name, "liveTuples": t.Rows,
			"deadTuples": t.DeadRows, "deadRatio": ratio(t.DeadRows, t.Rows+t.DeadRows)})
		hotUpdates = append(hotUpdates, map[string]any{"table": t.Name, "updates": t.Updates,
			"hotUpdates": t.HotUpdates, "hotRatio": ratio(t.HotUpdates, t.Updates)})
		vacuum = append(vacuum, map[string]any{"table": t.Name, "lastVacuum": tsOrNull(t.LastVacuum),
			"lastAutovacuum": tsOrNull(t.LastAutovacuum), "vacuumCount": t.VacuumCount,
			"autovacuumCount": t.AutovacuumCount})
		sizes = append(sizes, map[string]any{"table": t.Name, "totalBytes": t.TotalBytes, "tableBytes": t.TableBytes,
			"indexBytes": t.IndexBytes, "rows": t.Rows})
	}
	indexCache := make([]map[string]any, 0, len(e.Indexes))
	for _, ix := range e.Indexes {
		iHit, iRead = iHit+ix.BlocksHit, iRead+ix.BlocksRead
		indexCache = append(indexCache, map[string]any{"index": ix.Name, "table": ix.Table, "hits": ix.BlocksHit,
			"reads": ix.BlocksRead, "hitRatio": hits(ix.BlocksHit, ix.BlocksRead).HitRatio, "scans": ix.Scans,
			"sizeBytes": ix.SizeBytes})
	}
	settings := make([]map[string]any, 0, len(e.Settings))
	for _, s := range e.Settings {
		settings = append(settings, map[string]any{"name": s.Name, "setting": s.Value, "unit": nullable(s.Unit)})
	}
	activity := make([]map[string]any, 0, len(e.Activity))
	for _, act := range e.Activity {
		activity = append(activity, map[string]any{"pid": act.PID, "state": act.State, "query": act.Query,
			"waitEvent": nullable(act.WaitEvent), "durationMs": act.Duration.Milliseconds()})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"timestamp": timestamp(a.control.Now()),
		"engine":    a.control.Engine(),
		"database": map[string]any{"name": db.Name, "sizeBytes": db.SizeBytes, "connections": db.Connections,
			"commits": db.Commits, "rollbacks": db.Rollbacks, "deadlocks": db.Deadlocks, "tempBytes": db.TempBytes,
			"pageSize": db.PageSize, "pageCount": db.PageCount, "freelistPages": db.FreelistPages,
			"walBytes": db.WALBytes},
		"databaseCache":    hits(db.BlocksHit, db.BlocksRead),
		"tableCache":       tableCache,
		"indexCache":       indexCache,
		"cacheSummary":     map[string]any{"tables": hits(tHit, tRead), "indexes": hits(iHit, iRead)},
		"deadTuples":       deadTuples,
		"hotUpdates":       hotUpdates,
		"activeQueries":    activity,
		"autovacuumStatus": vacuum,
		"bufferConfig":     settings,
		"bufferUsage": map[string]any{"pageSize": db.PageSize, "cachePages": db.CachePages,
			"cacheBytes": db.CachePages * db.PageSize, "freelistPages": db.FreelistPages,
			"freelistBytes": db.FreelistPages * db.PageSize, "walBytes": db.WALBytes},
		"tableSizes": sizes,
	})
	return nil
}
