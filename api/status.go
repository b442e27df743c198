package api

// The dashboard's status views (/api/v1/status*). Series come from the
// metrics sampler's per-minute rows; queue figures are live.

// TimeRange is the window a series covers.
type TimeRange struct {
	From Time `json:"from"`
	To   Time `json:"to"`
}

// Status is GET /api/v1/status: throughput over the window, the queues, and
// the message, lease, DLQ, worker and error figures.
type Status struct {
	TimeRange       TimeRange         `json:"timeRange"`
	BucketMinutes   int               `json:"bucketMinutes"`
	PointCount      int               `json:"pointCount"`
	Throughput      []ThroughputPoint `json:"throughput"`
	Queues          []StatusQueue     `json:"queues"`
	Messages        StatusMessages    `json:"messages"`
	Leases          StatusLeases      `json:"leases"`
	DeadLetterQueue StatusDLQ         `json:"deadLetterQueue"`
	Workers         []StatusWorker    `json:"workers"`
	Errors          StatusErrors      `json:"errors"`
	StatsAge        int               `json:"statsAge"`
}

// ThroughputPoint is one bucket of the status series.
type ThroughputPoint struct {
	Timestamp          Time    `json:"timestamp"`
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

// StatusQueue is one queue of the status view.
type StatusQueue struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	Namespace     *string `json:"namespace"`
	Task          *string `json:"task"`
	Partitions    int     `json:"partitions"`
	TotalConsumed int64   `json:"totalConsumed"`
}

// OpTriple is a figure of push, pop and ack.
type OpTriple struct {
	Push float64 `json:"push"`
	Pop  float64 `json:"pop"`
	Ack  float64 `json:"ack"`
}

// StatusMessages are the status view's message figures: live counts, and
// the window's requests and messages per request.
type StatusMessages struct {
	Total           int64    `json:"total"`
	Pending         int64    `json:"pending"`
	Processing      int64    `json:"processing"`
	Completed       int64    `json:"completed"`
	Failed          int64    `json:"failed"`
	DeadLetter      int64    `json:"deadLetter"`
	Requests        OpTriple `json:"requests"`
	BatchEfficiency OpTriple `json:"batchEfficiency"`
}

// StatusLeases are the leases held now.
type StatusLeases struct {
	Active               int   `json:"active"`
	PartitionsWithLeases int   `json:"partitionsWithLeases"`
	TotalBatchSize       int64 `json:"totalBatchSize"`
	TotalAcked           int64 `json:"totalAcked"`
}

// StatusDLQ sums up the dead-letter queue; TopErrors is always empty.
type StatusDLQ struct {
	TotalMessages      int64 `json:"totalMessages"`
	AffectedPartitions int   `json:"affectedPartitions"`
	TopErrors          []any `json:"topErrors"`
}

// StatusWorker is one broker of the status view.
type StatusWorker struct {
	Hostname          string  `json:"hostname"`
	WorkerID          string  `json:"workerId"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	FreeSlots         float64 `json:"freeSlots"`
	DBConnections     float64 `json:"dbConnections"`
	JobQueueSize      float64 `json:"jobQueueSize"`
	MessagesProcessed int64   `json:"messagesProcessed"`
}

// StatusErrors are the window's error counts.
type StatusErrors struct {
	DBErrors    int64 `json:"dbErrors"`
	AckFailed   int64 `json:"ackFailed"`
	DLQMessages int64 `json:"dlqMessages"`
}

// StatusQueueDetail is GET /api/v1/status/queues/{queue}.
type StatusQueueDetail struct {
	Queue      StatusQueueHead   `json:"queue"`
	Partitions []StatusPartition `json:"partitions"`
	Totals     StatusTotals      `json:"totals"`
	Pagination Pagination        `json:"pagination"`
}

// StatusQueueHead describes the queue of a status detail.
type StatusQueueHead struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Namespace *string           `json:"namespace"`
	Task      *string           `json:"task"`
	Priority  int               `json:"priority"`
	CreatedAt Time              `json:"createdAt"`
	Config    StatusQueueConfig `json:"config"`
}

// StatusQueueConfig is the part of a queue's options the status detail
// shows.
type StatusQueueConfig struct {
	LeaseTime       int  `json:"leaseTime"`
	RetryLimit      int  `json:"retryLimit"`
	RetryDelay      int  `json:"retryDelay"`
	TTL             int  `json:"ttl"`
	MaxQueueSize    int  `json:"maxQueueSize"`
	DeadLetterQueue bool `json:"deadLetterQueue"`
}

// StatusCursor is the queue-mode cursor of a partition.
type StatusCursor struct {
	TotalConsumed   int64 `json:"totalConsumed"`
	BatchesConsumed int64 `json:"batchesConsumed"`
}

// StatusPartition is one partition of a status detail; Messages and Stats
// hold the same figures (Queen has both).
type StatusPartition struct {
	ID            string        `json:"id"`
	Name          string        `json:"name"`
	CreatedAt     Time          `json:"createdAt"`
	Messages      MessageCounts `json:"messages"`
	Stats         MessageCounts `json:"stats"`
	Cursor        StatusCursor  `json:"cursor"`
	LastActivity  *Time         `json:"lastActivity"`
	OldestMessage *Time         `json:"oldestMessage"`
	NewestMessage *Time         `json:"newestMessage"`
}

// StatusTotals are the queue's figures, once under messages and once at
// the top level (Queen has both).
type StatusTotals struct {
	Messages MessageCounts `json:"messages"`
	MessageCounts
}

// StatusMessage is one element of GET
// /api/v1/status/queues/{queue}/messages, newest first.
type StatusMessage struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	QueuePath     string `json:"queuePath"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Status        string `json:"status"`
	CreatedAt     Time   `json:"createdAt"`
}

// StatusAnalytics is GET /api/v1/status/analytics: messages pushed per
// interval.
type StatusAnalytics struct {
	DataPoints []DataPoint `json:"dataPoints"`
	// Interval is minute, hour or day.
	Interval string `json:"interval"`
	From     Time   `json:"from"`
	To       Time   `json:"to"`
}

// DataPoint is one interval of StatusAnalytics.
type DataPoint struct {
	Timestamp Time  `json:"timestamp"`
	Messages  int64 `json:"messages"`
}
