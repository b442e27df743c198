package store

import (
	"context"
	"time"

	"github.com/queen-go/queen/api"
)

// MessageStore writes messages and commits acknowledgements.
type MessageStore interface {
	// MessageAckMany commits a batch of acknowledgements and returns one
	// result per ack, in order.
	MessageAckMany(ctx context.Context, p *MessageAckManyParams) ([]AckResult, error)
	// MessagePushMany stores a batch of messages. Items carry broker-minted
	// ids and are already free of duplicates within the batch.
	MessagePushMany(ctx context.Context, p *MessagePushManyParams) ([]PushResult, error)
}

// Seal is how a stored payload is sealed (encryption at rest, package
// crypt): the messages' sealed column, kept with the payload wherever a
// message is copied. The broker opens a payload only by what this says,
// never by its shape.
type Seal uint8

// Seals.
const (
	// SealNone: the payload as the client gave it, never opened, whatever
	// its shape.
	SealNone Seal = 0
	// SealQueen: Queen's seal, which binds nothing (rows imported from a
	// Queen database that has is_encrypted). Opened with no associated data,
	// on the queue holding the row.
	SealQueen Seal = 1
	// SealBound: sealed by this broker with associated data naming the
	// tenant and the queue (crypt.AD); it opens on that queue only.
	SealBound Seal = 2
	// SealUnknown is never stored: the spool gives it to records written by
	// builds that did not record seals, and the broker resolves it before
	// the store sees the item.
	SealUnknown Seal = 255
)

// Encrypted reports whether the payload is sealed (what the API calls
// isEncrypted).
func (s Seal) Encrypted() bool { return s != SealNone }

// PushItem is one message to store. MessageID and TransactionID are always
// set by the broker.
type PushItem struct {
	MessageID   string
	Namespace   string // used only when this push creates the queue
	Partition   string
	Payload     []byte // raw JSON
	ProducerSub string // "" means none
	Queue       string
	// Sealed says how Payload is sealed (encryption at rest); the store
	// keeps it beside the payload and gives it back with the message. Only
	// the broker sets it: a client's payload is always SealNone.
	Sealed        Seal
	Task          string // used only when this push creates the queue
	Tenant        string // owner of Queue
	TraceID       string // "" means none
	TransactionID string
	// MintedTxn says the broker minted TransactionID for this push (the
	// client sent none): it cannot repeat a stored one, so a store may skip
	// looking for a duplicate.
	MintedTxn bool
}

// MessagePushManyParams is a batch of messages written with one createdAt.
type MessagePushManyParams struct {
	Items []PushItem
	Now   time.Time
}

// PushStatus is the verdict on one pushed item: the wire's (api.PushStatus),
// which engines, the spool and the broker all speak.
type PushStatus = api.PushStatus

// Push verdicts.
const (
	PushBuffered  = api.PushBuffered
	PushDuplicate = api.PushDuplicate
	PushError     = api.PushError
	PushFailed    = api.PushFailed
	PushQueued    = api.PushQueued
)

// PushResult is the outcome of one pushed item. For a duplicate, MessageID
// is the id of the message already stored.
type PushResult struct {
	Error       string
	MessageID   string
	PartitionID string
	Status      PushStatus
}

// AckStatus is a normalised acknowledgement status.
type AckStatus int

// Ack statuses. Their order is their precedence at the same offset.
const (
	AckCompleted AckStatus = iota
	AckRetry
	AckFailed
	AckDLQ
)

// Ack is one acknowledgement.
type Ack struct {
	ConsumerGroup string
	Error         string
	LeaseID       string
	PartitionID   string
	Status        AckStatus
	TransactionID string
}

// MessageAckManyParams is a batch of acknowledgements.
type MessageAckManyParams struct {
	Acks []Ack
	Now  time.Time
	// Tenant scopes the acks: a partitionId of another tenant's queue is
	// unresolvable.
	Tenant string
}

// AckResult is the verdict on one acknowledgement. Queue names the queue of
// the acked lane ("" if unresolvable) so the broker can wake consumers when a
// lease is released.
type AckResult struct {
	DLQ           bool
	Error         string
	LeaseReleased bool
	Noop          bool
	Queue         string
	Success       bool
}
