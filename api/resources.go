package api

// Queues and partitions as the control plane shows them (/api/v1/resources/*
// and /api/v1/queues/{queue}/clear). Every list is a page: limit and offset
// in, Pagination out.

// Pagination is the page a list answered and the total it pages through.
type Pagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	Total  int `json:"total"`
}

// MessageCounts are the figures of a queue or a partition, from counters
// and cursors (the queue-mode lane's, and the slowest group's).
type MessageCounts struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

// QueueMessageCounts are the figures a queue list shows: Queen's three and
// the queue's dead letters.
type QueueMessageCounts struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	DeadLetter int64 `json:"deadLetter"`
}

// QueueList is a page of queues, newest first (GET /api/v1/resources/queues
// and /api/v1/status/queues).
type QueueList struct {
	Queues     []QueueListItem `json:"queues"`
	Pagination Pagination      `json:"pagination"`
}

// QueueListItem is one queue of a list.
type QueueListItem struct {
	ID         string             `json:"id"`
	Name       string             `json:"name"`
	Namespace  *string            `json:"namespace"`
	Task       *string            `json:"task"`
	CreatedAt  Time               `json:"createdAt"`
	Partitions int                `json:"partitions"`
	Messages   QueueMessageCounts `json:"messages"`
	// OldestUnreadAt is the createdAt of the oldest message some group
	// (queue mode included) has still to read, or, while no group reads
	// the queue, of its oldest message; null when there is none.
	OldestUnreadAt *Time `json:"oldestUnreadAt"`
	// OldestUnreadAgeSeconds is its age by the broker's clock, to the
	// millisecond; 0 when there is none.
	OldestUnreadAgeSeconds float64 `json:"oldestUnreadAgeSeconds"`
}

// QueueDetail describes one queue with a page of its partitions (GET
// /api/v1/resources/queues/{queue}).
type QueueDetail struct {
	ID         string           `json:"id"`
	Name       string           `json:"name"`
	Namespace  *string          `json:"namespace"`
	Task       *string          `json:"task"`
	CreatedAt  Time             `json:"createdAt"`
	Partitions []QueuePartition `json:"partitions"`
	Totals     MessageCounts    `json:"totals"`
	Pagination Pagination       `json:"pagination"`
}

// QueuePartition is one partition of a queue's description.
type QueuePartition struct {
	ID            string        `json:"id"`
	Name          string        `json:"name"`
	CreatedAt     Time          `json:"createdAt"`
	Stats         MessageCounts `json:"stats"`
	OldestMessage *Time         `json:"oldestMessage"`
	NewestMessage *Time         `json:"newestMessage"`
	LastActivity  *Time         `json:"lastActivity"`
}

// PartitionList is a page of partitions (GET /api/v1/resources/partitions).
type PartitionList struct {
	Partitions []PartitionListItem `json:"partitions"`
	Pagination Pagination          `json:"pagination"`
}

// PartitionListItem is one partition of a list.
type PartitionListItem struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Queue        string        `json:"queue"`
	CreatedAt    Time          `json:"createdAt"`
	LastActivity *Time         `json:"lastActivity"`
	Messages     MessageCounts `json:"messages"`
}

// RollupMessages are the message figures of a namespace or a task.
type RollupMessages struct {
	Total   int64 `json:"total"`
	Pending int64 `json:"pending"`
}

// NamespaceList is a page of namespaces with their queues' figures (GET
// /api/v1/resources/namespaces); queues without a namespace are left out.
type NamespaceList struct {
	Namespaces []NamespaceSummary `json:"namespaces"`
	Pagination Pagination         `json:"pagination"`
}

// NamespaceSummary sums up the queues of one namespace.
type NamespaceSummary struct {
	Messages   RollupMessages `json:"messages"`
	Namespace  string         `json:"namespace"`
	Partitions int            `json:"partitions"`
	Queues     int            `json:"queues"`
}

// TaskList is a page of tasks with their queues' figures (GET
// /api/v1/resources/tasks); queues without a task are left out.
type TaskList struct {
	Pagination Pagination    `json:"pagination"`
	Tasks      []TaskSummary `json:"tasks"`
}

// TaskSummary sums up the queues of one task.
type TaskSummary struct {
	Messages   RollupMessages `json:"messages"`
	Partitions int            `json:"partitions"`
	Queues     int            `json:"queues"`
	Task       string         `json:"task"`
}

// Spread is the average, median, minimum and maximum of a figure.
type Spread struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Overview sums up every queue of the tenant (GET
// /api/v1/resources/overview).
type Overview struct {
	Queues     int           `json:"queues"`
	Partitions int           `json:"partitions"`
	Namespaces int           `json:"namespaces"`
	Tasks      int           `json:"tasks"`
	Messages   MessageCounts `json:"messages"`
	Lag        OverviewLag   `json:"lag"`
	// Throughput is always zero: figures are live, not sampled.
	Throughput OverviewThroughput `json:"throughput"`
	Timestamp  Time               `json:"timestamp"`
	// StatsAge is always 0: every figure is computed when asked.
	StatsAge int `json:"statsAge"`
}

// OverviewLag is the consumers' lag over the tenant's partitions: in
// seconds (Time) and in messages (Offset).
type OverviewLag struct {
	Time   Spread `json:"time"`
	Offset Spread `json:"offset"`
}

// OverviewThroughput is Queen's throughput block of the overview.
type OverviewThroughput struct {
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
}

// QueueClearResponse answers DELETE /api/v1/queues/{queue}/clear.
type QueueClearResponse struct {
	Cleared bool   `json:"cleared"`
	Queue   string `json:"queue"`
	// Partition is the cleared partition; null when the whole queue was.
	Partition       *string `json:"partition"`
	MessagesDeleted int64   `json:"messagesDeleted"`
}
