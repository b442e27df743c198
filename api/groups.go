package api

// Consumer groups as the control plane shows them (/api/v1/consumer-groups*):
// the list and the lagging lanes are bare arrays (the lagging ones in
// snake_case), a group's description an object keyed by queue name.

// GroupListItem is one element of GET /api/v1/consumer-groups: a group on
// one queue.
type GroupListItem struct {
	Name string `json:"name"`
	// Topics holds the queue's name (Queen's shape).
	Topics            []string      `json:"topics"`
	QueueName         string        `json:"queueName"`
	Members           []GroupMember `json:"members"`
	PartitionsWithLag int           `json:"partitionsWithLag"`
	TotalLag          int64         `json:"totalLag"`
	// MaxTimeLag is in seconds.
	MaxTimeLag float64 `json:"maxTimeLag"`
	State      string  `json:"state"`
	// SubscriptionMode is where the group started: all (the beginning),
	// new (when it joined) or timestamp.
	SubscriptionMode      string `json:"subscriptionMode"`
	SubscriptionTimestamp *Time  `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt Time   `json:"subscriptionCreatedAt"`
}

// GroupMember is a lease a group holds on one partition.
type GroupMember struct {
	Partition      string `json:"partition"`
	PartitionID    string `json:"partitionId"`
	LeaseID        string `json:"leaseId"`
	LeaseExpiresAt Time   `json:"leaseExpiresAt"`
}

// LaggingPartition is one element of GET /api/v1/consumer-groups/lagging: a
// lane behind by at least minLagSeconds.
type LaggingPartition struct {
	ConsumerGroup string `json:"consumer_group"`
	QueueName     string `json:"queue_name"`
	PartitionName string `json:"partition_name"`
	PartitionID   string `json:"partition_id"`
	// WorkerID is the lease holding the lane, if any.
	WorkerID           *string `json:"worker_id"`
	OffsetLag          int64   `json:"offset_lag"`
	TimeLagSeconds     float64 `json:"time_lag_seconds"`
	LagHours           float64 `json:"lag_hours"`
	OldestUnconsumedAt *Time   `json:"oldest_unconsumed_at"`
	LastConsumedAt     *Time   `json:"last_consumed_at"`
}

// GroupDetail is GET /api/v1/consumer-groups/{group}: the group's lanes by
// queue name.
type GroupDetail map[string]*GroupQueue

// GroupQueue is a group's lanes on one queue.
type GroupQueue struct {
	Partitions []GroupLane `json:"partitions"`
}

// GroupLane is where a group stands on one partition.
type GroupLane struct {
	Partition      string  `json:"partition"`
	PartitionID    string  `json:"partitionId"`
	WorkerID       *string `json:"workerId"`
	LastConsumedAt *Time   `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds float64 `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
}

// GroupDeleteResponse answers the deletion of a group, on every queue or on
// one.
type GroupDeleteResponse struct {
	Success       bool    `json:"success"`
	ConsumerGroup string  `json:"consumerGroup"`
	QueueName     *string `json:"queueName,omitempty"`
	// DeletedPartitions counts the lanes deleted.
	DeletedPartitions int  `json:"deletedPartitions"`
	MetadataDeleted   bool `json:"metadataDeleted"`
}

// SubscriptionRequest is the body of POST
// /api/v1/consumer-groups/{group}/subscription.
type SubscriptionRequest struct {
	// SubscriptionTimestamp is an RFC 3339 time; required.
	SubscriptionTimestamp string `json:"subscriptionTimestamp"`
}

// SubscriptionResponse answers a subscription change.
type SubscriptionResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	NewTimestamp  Time   `json:"newTimestamp"`
	RowsUpdated   int    `json:"rowsUpdated"`
}

// SeekRequest is the body of a seek: ToEnd, or an RFC 3339 Timestamp to
// move the cursors back or forward to; not both. A partition seek without
// either goes to the end.
type SeekRequest struct {
	Timestamp string `json:"timestamp,omitempty"`
	ToEnd     bool   `json:"toEnd,omitempty"`
}

// SeekResponse answers the seek of a group on a whole queue.
type SeekResponse struct {
	Success           bool   `json:"success"`
	ConsumerGroup     string `json:"consumerGroup"`
	QueueName         string `json:"queueName"`
	SeekToEnd         bool   `json:"seekToEnd"`
	TargetTimestamp   *Time  `json:"targetTimestamp"`
	PartitionsUpdated int    `json:"partitionsUpdated"`
	// Joined says the seek made the group join the queue.
	Joined bool `json:"joined"`
}

// PartitionSeekResponse answers the seek of a group on one partition.
type PartitionSeekResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	QueueName     string `json:"queueName"`
	PartitionName string `json:"partitionName"`
	Updated       bool   `json:"updated"`
	CursorMovedTo *Time  `json:"cursorMovedTo"`
	Joined        bool   `json:"joined"`
}

// StatsRefreshResponse answers POST /api/v1/stats/refresh: there is nothing
// to refresh, every figure is computed when asked.
type StatsRefreshResponse struct {
	Success  bool   `json:"success"`
	StatsAge int    `json:"statsAge"`
	Message  string `json:"message"`
}
