package store

import (
	"context"
	"time"
)

// DLQStore lists, requeues and deletes dead letters, the rows a consumer
// group writes when a message exhausts its retries (the message itself stays
// in its partition). Every method is scoped to p.Tenant.
type DLQStore interface {
	// DLQDelete deletes up to p.Limit dead letters matching the filters
	// (never the messages) and returns how many it deleted; the caller
	// repeats until fewer than p.Limit are deleted, so that no transaction
	// grows with the size of the dead-letter queue.
	DLQDelete(ctx context.Context, p *DLQDeleteParams) (int, error)
	// DLQList returns a page of dead letters, newest failure first.
	DLQList(ctx context.Context, p *DLQListParams) ([]DeadLetter, error)
	// DLQRequeue requeues a selection of dead-lettered messages as
	// MessageRequeue does each one, in their original order within each
	// partition, in one transaction. A message dead-lettered by several
	// groups is requeued once.
	DLQRequeue(ctx context.Context, p *DLQRequeueParams) (*DLQRequeueResult, error)
}

// DeadLetter is one dead letter with its message.
type DeadLetter struct {
	ConsumerGroup string
	CreatedAt     time.Time // the message's
	Error         string
	FailedAt      time.Time
	MessageID     string
	Partition     string
	PartitionID   string
	Payload       []byte // as stored: sealed when Sealed says so
	ProducerSub   string
	Queue         string
	RetryCount    int
	Sealed        Seal
	TraceID       string
	TransactionID string
}

// DLQFilter selects dead letters; empty fields select everything.
type DLQFilter struct {
	ConsumerGroup string
	From          time.Time // failed at or after; zero for no bound
	Partition     string    // a partition name
	Queue         string
	To            time.Time // failed before; zero for no bound
}

// DLQListParams select a page of dead letters.
type DLQListParams struct {
	DLQFilter
	Limit  int // <= 0 means 100
	Offset int
	Tenant string
}

// DLQDeleteParams select dead letters to delete.
type DLQDeleteParams struct {
	DLQFilter
	Limit  int // rows per call; <= 0 means 1000
	Now    time.Time
	Tenant string
}

// DLQRequeueParams select dead-lettered messages to requeue: the messages
// named by Refs, or without Refs the oldest dead letters (failed first)
// matching the filter, up to Limit messages. The filter applies to Refs
// too.
type DLQRequeueParams struct {
	DLQFilter
	Limit  int // messages; <= 0 means 1000
	Now    time.Time
	Refs   []MessageRef
	Tenant string
}

// DLQRequeueResult lists what was requeued, in push order, and the named
// messages that could not be.
type DLQRequeueResult struct {
	Failed   []RequeueFailure
	Requeued []Requeued
}

// RequeueFailure is a message of DLQRequeueParams.Refs that was not
// requeued, and why (api.TextMessageNotFound, or ErrNotDeadLettered's text).
type RequeueFailure struct {
	MessageRef
	Error string
}
