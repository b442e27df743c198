package api

import "encoding/json"

// Queen's stream queries: the three routes its stream SDKs call
// (/streams/v1/*, snake_case keys) and the control plane's view of the
// queries (/api/v1/streams/queries*).

// StreamsRegisterRequest is the body of POST /streams/v1/queries.
type StreamsRegisterRequest struct {
	// Name, SourceQueue and ConfigHash are required.
	Name        string `json:"name"`
	SourceQueue string `json:"source_queue"`
	ConfigHash  string `json:"config_hash"`
	SinkQueue   string `json:"sink_queue,omitempty"`
	// Reset drops the query's state and starts it again.
	Reset bool `json:"reset,omitempty"`
}

// StreamsRegistered answers a registration (200).
type StreamsRegistered struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	// Fresh says the query was created.
	Fresh bool `json:"fresh"`
	Reset bool `json:"reset"`
}

// StreamsMismatch is the 409 of a registration whose config hash is not
// the registered query's: Queen's stored procedure result, which its SDKs
// read (the error and the query's id).
type StreamsMismatch struct {
	Success bool   `json:"success"`
	QueryID string `json:"query_id"`
	Name    string `json:"name"`
	Error   string `json:"error"`
}

// StreamsCycleRequest is the body of POST /streams/v1/cycle: state
// operations, pushes and an ack of one partition, committed together.
type StreamsCycleRequest struct {
	// QueryID and PartitionID are required UUIDs.
	QueryID       string `json:"query_id"`
	PartitionID   string `json:"partition_id"`
	ConsumerGroup string `json:"consumer_group,omitempty"`
	// StateOps are applied in order.
	StateOps []StreamsStateOp `json:"state_ops,omitempty"`
	// PushItems are pushed with the cycle.
	PushItems []StreamsPushItem `json:"push_items,omitempty"`
	// Ack acknowledges the source messages the cycle consumed.
	Ack *StreamsAck `json:"ack,omitempty"`
	// ReleaseLease ends the ack's lease; nil means true.
	ReleaseLease *bool `json:"release_lease,omitempty"`
}

// The types of a state operation.
const (
	StateUpsert = "upsert"
	StateDelete = "delete"
)

// StreamsStateOp is one state operation of a cycle.
type StreamsStateOp struct {
	// Type is StateUpsert or StateDelete; required.
	Type string `json:"type"`
	// Key is required; "" is a key like any other.
	Key string `json:"key"`
	// Value is an upsert's; absent means {}.
	Value json.RawMessage `json:"value,omitempty"`
}

// StreamsPushItem is a push of a cycle: a push item that may carry the
// message id to store it under.
type StreamsPushItem struct {
	PushItem
	// MessageID, a UUID, makes the push idempotent across retried cycles.
	MessageID string `json:"messageId,omitempty"`
}

// StreamsAck is a cycle's ack.
type StreamsAck struct {
	// TransactionID is required: the newest message consumed.
	TransactionID string `json:"transactionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	// Count is how many messages of the partition, up to TransactionID,
	// the ack covers; nil means 1.
	Count *int `json:"count,omitempty"`
	// Status is completed (or success, or absent) or failed (or dlq).
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// StreamsCycle is a cycle's answer (200), of a commit and of a failure
// alike: Success false, nothing written, and Error says why.
type StreamsCycle struct {
	Success         bool              `json:"success"`
	QueryID         string            `json:"query_id"`
	PartitionID     string            `json:"partition_id"`
	QueueName       *string           `json:"queueName"`
	StateOpsApplied int               `json:"state_ops_applied"`
	PushResults     []PushVerdict     `json:"push_results"`
	AckResult       *StreamsAckResult `json:"ack_result"`
	Error           *string           `json:"error,omitempty"`
}

// StreamsAckResult is what a cycle's ack did.
type StreamsAckResult struct {
	Success       bool `json:"success"`
	Count         int  `json:"count"`
	LeaseReleased bool `json:"lease_released"`
	DLQ           bool `json:"dlq"`
}

// StreamsStateGetRequest is the body of POST /streams/v1/state/get.
type StreamsStateGetRequest struct {
	// QueryID and PartitionID are required UUIDs.
	QueryID     string `json:"query_id"`
	PartitionID string `json:"partition_id"`
	// Keys, when set, are the keys to read; KeyPrefix selects by prefix.
	Keys      []string `json:"keys,omitempty"`
	KeyPrefix string   `json:"key_prefix,omitempty"`
	// RipeAtOrBefore selects the rows whose value's numeric windowEnd is
	// at or before it.
	RipeAtOrBefore *float64 `json:"ripe_at_or_before,omitempty"`
}

// StreamsState answers a state read.
type StreamsState struct {
	Success bool              `json:"success"`
	Rows    []StreamsStateRow `json:"rows"`
}

// StreamsStateRow is one key of a query's state.
type StreamsStateRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt Time            `json:"updated_at"`
}

// StreamsQueryList is GET /api/v1/streams/queries.
type StreamsQueryList struct {
	Queries    []StreamsQuery `json:"queries"`
	Pagination Pagination     `json:"pagination"`
}

// StreamsQuery is a registered stream query and the size of its state.
type StreamsQuery struct {
	QueryID     string           `json:"queryId"`
	Name        string           `json:"name"`
	SourceQueue string           `json:"sourceQueue"`
	SinkQueue   *string          `json:"sinkQueue"`
	ConfigHash  string           `json:"configHash"`
	CreatedAt   Time             `json:"createdAt"`
	UpdatedAt   Time             `json:"updatedAt"`
	State       StreamsStateSize `json:"state"`
}

// StreamsStateSize is the size of a query's state.
type StreamsStateSize struct {
	Partitions int   `json:"partitions"`
	Rows       int64 `json:"rows"`
	Bytes      int64 `json:"bytes"`
}

// StreamsQueryDelete answers DELETE /api/v1/streams/queries/{name}: 200
// whether or not the query existed.
type StreamsQueryDelete struct {
	Deleted bool   `json:"deleted"`
	Name    string `json:"name"`
}
