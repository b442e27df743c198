package api

import "encoding/json"

// The control plane's messages, dead-letter queue and traces
// (/api/v1/messages*, /api/v1/dlq*, /api/v1/traces*). Their answers are
// Queen's stored procedures' shapes: camelCase for messages and the DLQ,
// snake_case for traces.

// MessageList is GET /api/v1/messages: a page of messages, newest first.
type MessageList struct {
	Messages []ListedMessage `json:"messages"`
	Mode     MessageMode     `json:"mode"`
}

// ListedMessage is one message of a list.
type ListedMessage struct {
	ID            string  `json:"id"`
	TransactionID string  `json:"transactionId"`
	PartitionID   string  `json:"partitionId"`
	QueuePath     string  `json:"queuePath"`
	Queue         string  `json:"queue"`
	Partition     string  `json:"partition"`
	Namespace     *string `json:"namespace"`
	Task          *string `json:"task"`
	// Status is pending, processing, completed or dead_letter.
	Status         string    `json:"status"`
	QueueStatus    string    `json:"queueStatus"`
	BusStatus      BusStatus `json:"busStatus"`
	TraceID        *string   `json:"traceId"`
	ProducerSub    *string   `json:"producerSub"`
	QueuePriority  int       `json:"queuePriority"`
	CreatedAt      Time      `json:"createdAt"`
	LeaseExpiresAt *Time     `json:"leaseExpiresAt"`
}

// BusStatus says how many of the queue's consumer groups consumed a
// message.
type BusStatus struct {
	ConsumedBy  int `json:"consumedBy"`
	TotalGroups int `json:"totalGroups"`
}

// MessageMode says how a queue is consumed: in queue mode, by groups, or
// both (Type is queue, bus or hybrid).
type MessageMode struct {
	HasQueueMode   bool   `json:"hasQueueMode"`
	BusGroupsCount int    `json:"busGroupsCount"`
	Type           string `json:"type"`
}

// MessageDetail is GET /api/v1/messages/{partitionId}/{transactionId}.
type MessageDetail struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	QueuePath     string          `json:"queuePath"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Namespace     *string         `json:"namespace"`
	Task          *string         `json:"task"`
	Status        string          `json:"status"`
	Payload       json.RawMessage `json:"payload"`
	// IsEncrypted is true when the stored payload is sealed (encryption at
	// rest); Payload is then the sealed form as stored, never its plaintext.
	IsEncrypted    bool                 `json:"isEncrypted"`
	TraceID        *string              `json:"traceId"`
	ProducerSub    *string              `json:"producerSub"`
	CreatedAt      Time                 `json:"createdAt"`
	ErrorMessage   *string              `json:"errorMessage"`
	RetryCount     int                  `json:"retryCount"`
	LeaseExpiresAt *Time                `json:"leaseExpiresAt"`
	QueueConfig    MessageQueueConfig   `json:"queueConfig"`
	Mode           MessageDetailMode    `json:"mode"`
	ConsumerGroups []MessageGroupStatus `json:"consumerGroups"`
}

// MessageQueueConfig is the part of a queue's options a message's detail
// shows.
type MessageQueueConfig struct {
	LeaseTime  int `json:"leaseTime"`
	RetryLimit int `json:"retryLimit"`
	RetryDelay int `json:"retryDelay"`
	TTL        int `json:"ttl"`
	Priority   int `json:"priority"`
}

// MessageDetailMode is MessageMode with the groups that consumed the
// message.
type MessageDetailMode struct {
	HasQueueMode     bool   `json:"hasQueueMode"`
	BusGroupsCount   int    `json:"busGroupsCount"`
	ConsumedByGroups int    `json:"consumedByGroups"`
	Type             string `json:"type"`
}

// MessageGroupStatus is where one consumer group stands with a message.
type MessageGroupStatus struct {
	Name           string `json:"name"`
	Consumed       bool   `json:"consumed"`
	LeaseExpiresAt *Time  `json:"leaseExpiresAt"`
}

// MessageDeleteResponse answers the deletion of a message: always 200, as
// in Queen; Success false and TextMessageNotFound when there was none.
type MessageDeleteResponse struct {
	Success       bool   `json:"success"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Message       string `json:"message"`
}

// RepairRequest is the optional body of a message's retry or move to the
// dead-letter queue: which consumer group ("" is queue mode; the
// consumerGroup query parameter works too), and for a move the error to
// record.
type RepairRequest struct {
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	Error         string `json:"error,omitempty"`
}

// RetryResponse answers a message's retry.
type RetryResponse struct {
	Success       bool   `json:"success"`
	Requeued      int    `json:"requeued"`
	MessageID     string `json:"messageId"`
	TransactionID string `json:"transactionId"`
}

// DLQMoveResponse answers a message's move to the dead-letter queue.
type DLQMoveResponse struct {
	Success bool `json:"success"`
	DLQ     bool `json:"dlq"`
}

// PageEcho is the page a DLQ or trace listing answered.
type PageEcho struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// DLQList is GET /api/v1/dlq.
type DLQList struct {
	Messages   []DeadLetter `json:"messages"`
	Pagination PageEcho     `json:"pagination"`
}

// DeadLetter is one dead-lettered message; ID and CreatedAt are the
// message's.
type DeadLetter struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	// IsEncrypted is true when Data is the sealed form of the payload
	// (encryption at rest), as the messages route says it.
	IsEncrypted bool    `json:"isEncrypted"`
	ProducerSub *string `json:"producerSub"`
	CreatedAt   Time    `json:"createdAt"`
	FailedAt    Time    `json:"failedAt"`
}

// DLQRetryRequest is the body of POST /api/v1/dlq/retry: dead letters to
// requeue, by IDs or by filter (the oldest failures first), up to Limit.
// An empty body selects every dead letter up to the default limit.
type DLQRetryRequest struct {
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// IDs, when not nil, name the messages; it must not be empty.
	IDs []MessageRef `json:"ids,omitempty"`
	// Limit bounds the messages requeued; nil means 1000.
	Limit     *int   `json:"limit,omitempty"`
	Partition string `json:"partition,omitempty"`
	Queue     string `json:"queue,omitempty"`
}

// MessageRef names a message: its partition's id and its transactionId.
type MessageRef struct {
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
}

// DLQRetryResponse answers a requeue.
type DLQRetryResponse struct {
	Requeued int              `json:"requeued"`
	Failed   []RequeueFailure `json:"failed"`
	Messages []Requeued       `json:"messages"`
}

// Requeued is a dead letter pushed again as a new message.
type Requeued struct {
	PartitionID           string `json:"partitionId"`
	TransactionID         string `json:"transactionId"`
	MessageID             string `json:"messageId"`
	OriginalTransactionID string `json:"originalTransactionId"`
}

// RequeueFailure is a message that was not requeued, and why
// (TextMessageNotFound, TextNotDeadLettered).
type RequeueFailure struct {
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Error         string `json:"error"`
}

// DLQDeleteResponse answers DELETE /api/v1/dlq.
type DLQDeleteResponse struct {
	Deleted int `json:"deleted"`
}

// TraceRequest is the body of POST /api/v1/traces.
type TraceRequest struct {
	// TransactionID and PartitionID name the message; both are required.
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// Data is required and not null.
	Data      json.RawMessage `json:"data"`
	EventType string          `json:"eventType,omitempty"`
	// TraceNames is a string or an array of strings.
	TraceNames json.RawMessage `json:"traceNames,omitempty"`
	WorkerID   string          `json:"workerId,omitempty"`
}

// TraceRecorded answers a recorded trace (201).
type TraceRecorded struct {
	Success bool   `json:"success"`
	TraceID string `json:"traceId"`
}

// MessageTraces is GET /api/v1/traces/{partitionId}/{transactionId}.
type MessageTraces struct {
	Traces []Trace `json:"traces"`
}

// Trace is one trace of a message.
type Trace struct {
	ID            string          `json:"id"`
	EventType     string          `json:"event_type"`
	Data          json.RawMessage `json:"data"`
	ConsumerGroup string          `json:"consumer_group"`
	WorkerID      *string         `json:"worker_id"`
	CreatedAt     Time            `json:"created_at"`
	TraceNames    []string        `json:"trace_names"`
}

// TracesByName is GET /api/v1/traces/by-name/{traceName}.
type TracesByName struct {
	Traces     []NamedTrace `json:"traces"`
	Total      int          `json:"total"`
	Pagination PageEcho     `json:"pagination"`
}

// NamedTrace is one trace of a name, with its message.
type NamedTrace struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transaction_id"`
	PartitionID    string          `json:"partition_id"`
	EventType      string          `json:"event_type"`
	Data           json.RawMessage `json:"data"`
	ConsumerGroup  string          `json:"consumer_group"`
	WorkerID       *string         `json:"worker_id"`
	CreatedAt      Time            `json:"created_at"`
	QueueName      string          `json:"queue_name"`
	PartitionName  string          `json:"partition_name"`
	MessagePayload json.RawMessage `json:"message_payload"`
	// IsEncrypted is true when MessagePayload is the sealed form of the
	// payload (encryption at rest); false when the message is gone. Snake
	// case, as every key of the entry.
	IsEncrypted bool     `json:"is_encrypted"`
	TraceNames  []string `json:"trace_names"`
}

// TraceNames is GET /api/v1/traces/names.
type TraceNames struct {
	TraceNames []TraceName `json:"trace_names"`
	Total      int         `json:"total"`
	Pagination PageEcho    `json:"pagination"`
}

// TraceName is one trace name with its use.
type TraceName struct {
	TraceName    string `json:"trace_name"`
	TraceCount   int    `json:"trace_count"`
	MessageCount int    `json:"message_count"`
	LastSeen     Time   `json:"last_seen"`
}
