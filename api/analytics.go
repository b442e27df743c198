package api

// The analytics series (/api/v1/analytics/*), from the metrics sampler's
// per-minute rows, and the storage engine's own figures. Objects Queen
// builds as maps keep their keys in alphabetical order.

// Gauge is one gauge over a bucket: Queen's {avg,min,max,last}.
type Gauge struct {
	Avg  float64 `json:"avg"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Last float64 `json:"last"`
}

// SystemMetrics is GET /api/v1/analytics/system-metrics: each broker's
// process gauges per bucket.
type SystemMetrics struct {
	TimeRange     TimeRange `json:"timeRange"`
	Replicas      []Replica `json:"replicas"`
	ReplicaCount  int       `json:"replicaCount"`
	BucketMinutes int       `json:"bucketMinutes"`
	PointCount    int       `json:"pointCount"`
}

// Replica is one broker's series.
type Replica struct {
	Hostname   string        `json:"hostname"`
	Port       int           `json:"port"`
	WorkerID   string        `json:"workerId"`
	PID        int           `json:"pid"`
	TimeSeries []SystemPoint `json:"timeSeries"`
}

// SystemPoint is one bucket of a broker's gauges.
type SystemPoint struct {
	Timestamp   Time         `json:"timestamp"`
	SampleCount int64        `json:"sampleCount"`
	Metrics     SystemGauges `json:"metrics"`
}

// SystemGauges are a bucket's gauges in Queen's groups (cpu in percent ×
// 100, memory, the database pool, the database "thread pool") and ours
// (long polls, the Go runtime, the spool).
type SystemGauges struct {
	CPU        CPUGauges        `json:"cpu"`
	Database   DatabaseGauges   `json:"database"`
	LongPolls  LongPollGauges   `json:"long_polls"`
	Memory     MemoryGauges     `json:"memory"`
	Runtime    RuntimeGauges    `json:"runtime"`
	Spool      SpoolGauges      `json:"spool"`
	Threadpool ThreadpoolGauges `json:"threadpool"`
}

// CPUGauges are CPU time in microseconds per second.
type CPUGauges struct {
	SystemUs Gauge `json:"system_us"`
	UserUs   Gauge `json:"user_us"`
}

// DatabaseGauges are the database pool's connections.
type DatabaseGauges struct {
	PoolActive Gauge `json:"pool_active"`
	PoolIdle   Gauge `json:"pool_idle"`
	PoolOpen   Gauge `json:"pool_open"`
	PoolSize   Gauge `json:"pool_size"`
}

// LongPollGauges are the long polls parked.
type LongPollGauges struct {
	Parked Gauge `json:"parked"`
}

// MemoryGauges are the process's memory in bytes.
type MemoryGauges struct {
	RSSBytes     Gauge `json:"rss_bytes"`
	VirtualBytes Gauge `json:"virtual_bytes"`
}

// RuntimeGauges are the Go runtime's.
type RuntimeGauges struct {
	Goroutines    Gauge `json:"goroutines"`
	HeapBytes     Gauge `json:"heap_bytes"`
	SchedLagAvgMs Gauge `json:"sched_lag_avg_ms"`
	SchedLagMaxMs Gauge `json:"sched_lag_max_ms"`
}

// SpoolGauges are the pushes waiting in the disk spool.
type SpoolGauges struct {
	Pending Gauge `json:"pending"`
}

// ThreadpoolGauges are Queen's database "thread pool": connections, and
// operations waiting for one.
type ThreadpoolGauges struct {
	DB ThreadpoolDB `json:"db"`
}

// ThreadpoolDB is the database pool seen as a thread pool.
type ThreadpoolDB struct {
	PoolSize  Gauge `json:"pool_size"`
	QueueSize Gauge `json:"queue_size"`
}

// WorkerMetrics is GET /api/v1/analytics/worker-metrics: what the brokers
// did per bucket.
type WorkerMetrics struct {
	TimeRange     TimeRange         `json:"timeRange"`
	BucketMinutes int               `json:"bucketMinutes"`
	PointCount    int               `json:"pointCount"`
	TimeSeries    []WorkerPoint     `json:"timeSeries"`
	Workers       []Worker          `json:"workers"`
	Queues        []QueueLagSummary `json:"queues"`
	Summary       WorkerSummary     `json:"summary"`
}

// WorkerPoint is one bucket of the brokers' work.
type WorkerPoint struct {
	Timestamp         Time    `json:"timestamp"`
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

// Worker is one broker of the worker metrics.
type Worker struct {
	Hostname          string  `json:"hostname"`
	WorkerID          string  `json:"workerId"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	FreeSlots         float64 `json:"freeSlots"`
	DBConnections     float64 `json:"dbConnections"`
	JobQueueSize      float64 `json:"jobQueueSize"`
	BackoffSize       float64 `json:"backoffSize"`
	MessagesProcessed int64   `json:"messagesProcessed"`
	LastSeen          Time    `json:"lastSeen"`
}

// QueueLagSummary is one queue's pop lag over the window.
type QueueLagSummary struct {
	QueueName string  `json:"queueName"`
	Tenant    string  `json:"tenant"`
	PopCount  int64   `json:"popCount"`
	AvgLagMs  float64 `json:"avgLagMs"`
	MaxLagMs  float64 `json:"maxLagMs"`
}

// WorkerSummary sums up the window.
type WorkerSummary struct {
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

// QueueLagRow is one element of GET /api/v1/analytics/queue-lag, a bare
// array of per-minute pop lags, newest first.
type QueueLagRow struct {
	QueueName  string  `json:"queueName"`
	PopCount   int64   `json:"popCount"`
	AvgLagMs   float64 `json:"avgLagMs"`
	MaxLagMs   float64 `json:"maxLagMs"`
	BucketTime Time    `json:"bucketTime"`
}

// QueueOps is GET /api/v1/analytics/queue-ops: per-queue operations per
// bucket, oldest first, for the busiest queues.
type QueueOps struct {
	TimeRange     TimeRange       `json:"timeRange"`
	BucketMinutes int             `json:"bucketMinutes"`
	Series        []QueueOpsPoint `json:"series"`
	Queues        []string        `json:"queues"`
	// OmittedQueues counts the queues left out.
	OmittedQueues int `json:"omittedQueues"`
}

// QueueOpsPoint is one queue's bucket. The state figures (partitionCount,
// pending, processing, deadLetter) are null for buckets without a sample.
type QueueOpsPoint struct {
	Bucket            Time    `json:"bucket"`
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

// ParkedReplicas is GET /api/v1/analytics/queue-parked-replicas: the long
// polls each broker had parked on the tenant's queues, per bucket.
type ParkedReplicas struct {
	TimeRange     TimeRange     `json:"timeRange"`
	BucketMinutes int           `json:"bucketMinutes"`
	Series        []ParkedPoint `json:"series"`
	Replicas      []ReplicaName `json:"replicas"`
}

// ParkedPoint is one broker's parked polls on one queue in a bucket.
type ParkedPoint struct {
	Bucket      Time   `json:"bucket"`
	QueueName   string `json:"queueName"`
	Hostname    string `json:"hostname"`
	WorkerID    string `json:"workerId"`
	ParkedCount int64  `json:"parkedCount"`
}

// ReplicaName names a broker.
type ReplicaName struct {
	Hostname string `json:"hostname"`
	WorkerID string `json:"workerId"`
}

// Retention is GET /api/v1/analytics/retention: what retention and
// eviction removed from the tenant's queues per bucket.
type Retention struct {
	TimeRange     TimeRange        `json:"timeRange"`
	BucketMinutes int              `json:"bucketMinutes"`
	Series        []RetentionPoint `json:"series"`
	Totals        RetentionCounts  `json:"totals"`
}

// RetentionPoint is one bucket of Retention.
type RetentionPoint struct {
	Bucket Time `json:"bucket"`
	RetentionCounts
}

// RetentionCounts are messages removed by retention (all, and completed
// ones), by eviction, in all, and the sweep events that removed them.
type RetentionCounts struct {
	RetentionMsgs          int64 `json:"retentionMsgs"`
	CompletedRetentionMsgs int64 `json:"completedRetentionMsgs"`
	EvictionMsgs           int64 `json:"evictionMsgs"`
	TotalMsgs              int64 `json:"totalMsgs"`
	EventCount             int64 `json:"eventCount"`
}

// EngineStats is GET /api/v1/analytics/postgres-stats: the storage
// engine's own figures under Queen's keys (PostgreSQL's statistics views;
// on the embedded engine SQLite's pragmas, and the lists it cannot fill
// are empty).
type EngineStats struct {
	ActiveQueries    []EngineActivity   `json:"activeQueries"`
	AutovacuumStatus []EngineVacuum     `json:"autovacuumStatus"`
	BufferConfig     []EngineSetting    `json:"bufferConfig"`
	BufferUsage      EngineBufferUsage  `json:"bufferUsage"`
	CacheSummary     EngineCacheSummary `json:"cacheSummary"`
	Database         EngineDatabase     `json:"database"`
	DatabaseCache    Hits               `json:"databaseCache"`
	DeadTuples       []EngineDeadTuples `json:"deadTuples"`
	Engine           string             `json:"engine"`
	HotUpdates       []EngineHotUpdates `json:"hotUpdates"`
	IndexCache       []EngineIndexCache `json:"indexCache"`
	TableCache       []EngineTableCache `json:"tableCache"`
	TableSizes       []EngineTableSize  `json:"tableSizes"`
	Timestamp        Time               `json:"timestamp"`
}

// Hits are cache hits and reads.
type Hits struct {
	Hits     int64   `json:"hits"`
	Reads    int64   `json:"reads"`
	HitRatio float64 `json:"hitRatio"`
}

// EngineDatabase is the database's own figures.
type EngineDatabase struct {
	Commits       int64  `json:"commits"`
	Connections   int64  `json:"connections"`
	Deadlocks     int64  `json:"deadlocks"`
	FreelistPages int64  `json:"freelistPages"`
	Name          string `json:"name"`
	PageCount     int64  `json:"pageCount"`
	PageSize      int64  `json:"pageSize"`
	Rollbacks     int64  `json:"rollbacks"`
	SizeBytes     int64  `json:"sizeBytes"`
	TempBytes     int64  `json:"tempBytes"`
	WALBytes      int64  `json:"walBytes"`
}

// EngineCacheSummary sums the table and index caches.
type EngineCacheSummary struct {
	Indexes Hits `json:"indexes"`
	Tables  Hits `json:"tables"`
}

// EngineTableCache is one table's heap cache.
type EngineTableCache struct {
	HeapHits  int64   `json:"heapHits"`
	HeapReads int64   `json:"heapReads"`
	HitRatio  float64 `json:"hitRatio"`
	Table     string  `json:"table"`
}

// EngineIndexCache is one index's cache and use.
type EngineIndexCache struct {
	HitRatio  float64 `json:"hitRatio"`
	Hits      int64   `json:"hits"`
	Index     string  `json:"index"`
	Reads     int64   `json:"reads"`
	Scans     int64   `json:"scans"`
	SizeBytes int64   `json:"sizeBytes"`
	Table     string  `json:"table"`
}

// EngineDeadTuples is one table's live and dead rows.
type EngineDeadTuples struct {
	DeadRatio  float64 `json:"deadRatio"`
	DeadTuples int64   `json:"deadTuples"`
	LiveTuples int64   `json:"liveTuples"`
	Table      string  `json:"table"`
}

// EngineHotUpdates is one table's updates, and those that were HOT.
type EngineHotUpdates struct {
	HotRatio   float64 `json:"hotRatio"`
	HotUpdates int64   `json:"hotUpdates"`
	Table      string  `json:"table"`
	Updates    int64   `json:"updates"`
}

// EngineVacuum is one table's vacuums.
type EngineVacuum struct {
	AutovacuumCount int64  `json:"autovacuumCount"`
	LastAutovacuum  *Time  `json:"lastAutovacuum"`
	LastVacuum      *Time  `json:"lastVacuum"`
	Table           string `json:"table"`
	VacuumCount     int64  `json:"vacuumCount"`
}

// EngineTableSize is one table's size.
type EngineTableSize struct {
	IndexBytes int64  `json:"indexBytes"`
	Rows       int64  `json:"rows"`
	Table      string `json:"table"`
	TableBytes int64  `json:"tableBytes"`
	TotalBytes int64  `json:"totalBytes"`
}

// EngineSetting is one setting of the engine that bears on its buffers.
type EngineSetting struct {
	Name    string  `json:"name"`
	Setting string  `json:"setting"`
	Unit    *string `json:"unit"`
}

// EngineActivity is one query running on the database.
type EngineActivity struct {
	DurationMs int64   `json:"durationMs"`
	PID        int     `json:"pid"`
	Query      string  `json:"query"`
	State      string  `json:"state"`
	WaitEvent  *string `json:"waitEvent"`
}

// EngineBufferUsage is the engine's page cache and free list.
type EngineBufferUsage struct {
	CacheBytes    int64 `json:"cacheBytes"`
	CachePages    int64 `json:"cachePages"`
	FreelistBytes int64 `json:"freelistBytes"`
	FreelistPages int64 `json:"freelistPages"`
	PageSize      int64 `json:"pageSize"`
	WALBytes      int64 `json:"walBytes"`
}
