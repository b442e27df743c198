package api

import "encoding/json"

// The message plane: push, pop, ack, lease extension, transactions.

// PushRequest is the body of POST /api/v1/push.
type PushRequest struct {
	// Items are pushed in order; each gets its own verdict.
	Items []PushItem `json:"items"`
}

// PushItem is one message to push.
type PushItem struct {
	// Queue is required; a queue is created by its first push.
	Queue string `json:"queue"`
	// Partition is the ordered lane of the queue the message joins; "" is
	// the queue's default partition.
	Partition string `json:"partition,omitempty"`
	// Payload is any JSON value, null included; it is required.
	Payload json.RawMessage `json:"payload"`
	// TransactionID deduplicates within the partition; "" mints one.
	TransactionID string `json:"transactionId,omitempty"`
	// TraceID is carried to consumers.
	TraceID string `json:"traceId,omitempty"`
	// Namespace and Task label the queue when the push creates it, and let
	// pops select queues by label.
	Namespace string `json:"namespace,omitempty"`
	Task      string `json:"task,omitempty"`
}

// PushVerdict is one element of a push answer (201), in request order. The
// mixed casing of its keys is Queen's.
type PushVerdict struct {
	// Index is the item's position in the request.
	Index int `json:"index"`
	// MessageID is the stored message's id (of the original one for a
	// duplicate); null when the item was not stored.
	MessageID *string `json:"message_id"`
	// TransactionID is the item's, minted when it had none.
	TransactionID string `json:"transaction_id"`
	// QueueName is the item's queue.
	QueueName string `json:"queueName"`
	// Status is the verdict.
	Status PushStatus `json:"status"`
	// Error says why a failed item failed.
	Error *string `json:"error,omitempty"`
}

// PopResponse is the answer of a pop that delivered messages (200); a pop
// that delivered none answers 204 without a body. Every message comes from
// one partition of one queue, under one lease.
type PopResponse struct {
	// Success is always true.
	Success bool `json:"success"`
	// Queue, Partition and PartitionID are those of the first message.
	Queue       string `json:"queue"`
	Partition   string `json:"partition"`
	PartitionID string `json:"partitionId"`
	// LeaseID is the lease the messages are held under; null with autoAck.
	LeaseID *string `json:"leaseId"`
	// ConsumerGroup is the group popped for (Queen's __QUEUE_MODE__ in
	// queue mode).
	ConsumerGroup string `json:"consumerGroup"`
	// Messages are in partition order.
	Messages []PopMessage `json:"messages"`
}

// PopMessage is one delivered message.
type PopMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	TraceID       *string         `json:"traceId"`
	Data          json.RawMessage `json:"data"`
	// ProducerSub is the authenticated subject that pushed the message;
	// null without authentication.
	ProducerSub   *string `json:"producerSub"`
	CreatedAt     Time    `json:"createdAt"`
	PartitionID   string  `json:"partitionId"`
	Partition     string  `json:"partition"`
	LeaseID       *string `json:"leaseId"`
	ConsumerGroup string  `json:"consumerGroup"`
}

// Ack is the body of POST /api/v1/ack, and one acknowledgement of a batch
// or a transaction.
type Ack struct {
	// TransactionID and PartitionID name the message (a transactionId is
	// unique only within its partition); both are required.
	TransactionID string `json:"transactionId,omitempty"`
	PartitionID   string `json:"partitionId,omitempty"`
	// LeaseID is the lease the pop returned; "" acks without one (autoAck
	// and expired leases are checked by the broker).
	LeaseID string `json:"leaseId,omitempty"`
	// ConsumerGroup is the group acking; "" is queue mode.
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// Status says what became of the message; absent completes it.
	Status AckStatus `json:"status,omitempty"`
	// Error is recorded with a failure and its dead letter.
	Error string `json:"error,omitempty"`
}

// AckBatchRequest is the body of POST /api/v1/ack/batch.
type AckBatchRequest struct {
	// Acknowledgments are committed in order, each with its own verdict.
	Acknowledgments []Ack `json:"acknowledgments"`
	// ConsumerGroup, when set, applies to every acknowledgement.
	ConsumerGroup string `json:"consumerGroup,omitempty"`
}

// AckVerdict is one element of an ack answer (200), in request order:
// exactly these seven keys.
type AckVerdict struct {
	Index         int    `json:"index"`
	TransactionID string `json:"transactionId"`
	// Success says whether the acknowledgement committed.
	Success bool `json:"success"`
	// Error says why it did not ("invalid or expired lease" …); null
	// otherwise.
	Error *string `json:"error"`
	// LeaseReleased says the lease ended with this acknowledgement.
	LeaseReleased bool `json:"leaseReleased"`
	// DLQ says the message went to the dead-letter queue.
	DLQ bool `json:"dlq"`
	// Noop says the message was acknowledged already.
	Noop bool `json:"noop"`
}

// LeaseExtendRequest is the body of POST /api/v1/lease/{leaseId}/extend;
// an empty body extends by the default.
type LeaseExtendRequest struct {
	// Seconds is the lease's new remaining time; 0 means 60.
	Seconds int `json:"seconds,omitempty"`
}

// LeaseExtendResponse is a lease extension's answer (200), whatever became
// of the lease: {"renewed":0,"expiresAt":null} for a lease that is
// unknown, expired or not the caller's alike.
type LeaseExtendResponse struct {
	Renewed   int   `json:"renewed"`
	ExpiresAt *Time `json:"expiresAt"`
}

// TransactionRequest is the body of POST /api/v1/transaction: operations
// that commit together or not at all.
type TransactionRequest struct {
	// Operations are applied in order; at least one.
	Operations []TransactionOperation `json:"operations"`
	// RequiredLeases must all still be held, or nothing commits.
	RequiredLeases []string `json:"requiredLeases,omitempty"`
}

// The types of a transaction's operations.
const (
	OperationPush = "push"
	OperationAck  = "ack"
	OperationKV   = "kv"
)

// TransactionOperation is one operation of a transaction: a push of Items,
// an ack (the Ack fields) or a key/value operation (the KVOperation
// fields, set, incr or delete), as Type says. The fields of the three kinds
// share one JSON object.
type TransactionOperation struct {
	// Type is OperationPush, OperationAck or OperationKV.
	Type  string     `json:"type"`
	Items []PushItem `json:"items,omitempty"`
	Ack
	KVOperation
}

// TransactionResponse is a transaction's answer (200) — committed or, with
// Success false, rolled back — and the body of its 400s.
type TransactionResponse struct {
	TransactionID string `json:"transactionId"`
	Success       bool   `json:"success"`
	// Error says why the transaction did not commit.
	Error *string `json:"error,omitempty"`
	// Results hold one element per operation of a committed transaction.
	Results []TransactionResult `json:"results"`
}

// TransactionResult is what one operation of a committed transaction did.
type TransactionResult struct {
	Index   int    `json:"index"`
	Type    string `json:"type"`
	Success bool   `json:"success"`
	// TransactionID is the pushed or acknowledged message's.
	TransactionID string `json:"transactionId,omitempty"`
	// MessageID, PartitionID and QueueName are those of a pushed message.
	MessageID   string `json:"messageId,omitempty"`
	PartitionID string `json:"partitionId,omitempty"`
	QueueName   string `json:"queueName,omitempty"`
	// Error is null on acks and absent on pushes (Queen's shape).
	Error json.RawMessage `json:"error,omitempty"`
	// DLQ says an ack dead-lettered its message.
	DLQ *bool `json:"dlq,omitempty"`
	// Op, Namespace and Key name a key/value operation; Value and Version
	// are the key after a set or incr, Deleted whether a delete found it.
	Op        string          `json:"op,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Key       string          `json:"key,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   *int64          `json:"version,omitempty"`
	Deleted   *bool           `json:"deleted,omitempty"`
}
