package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
)

// MessageControlStore inspects and repairs single messages for the control
// plane: list them with their standing in every consumer group, read one,
// delete one, move one to the dead-letter queue or requeue one from it.
// Every method is scoped to p.Tenant: a partitionId of another tenant's queue
// is unknown.
type MessageControlStore interface {
	// MessageDeadLetter records a dead letter for a message in one consumer
	// group. It returns ErrNotFound for an unknown message and
	// ErrAlreadyDeadLettered when the group already has one for it. Cursors
	// do not move: a group that has not reached the message still receives
	// it.
	MessageDeadLetter(ctx context.Context, p *MessageDeadLetterParams) error
	// MessageDelete deletes a message with its dead letters and traces and
	// reports whether it existed. Lanes whose next message it was move
	// their cursor over it, so no lane waits on a message that is gone.
	MessageDelete(ctx context.Context, p *MessageDeleteParams) (bool, error)
	// MessageGet returns one message with its payload and its standing in
	// every consumer group; ErrNotFound when it does not exist.
	MessageGet(ctx context.Context, p *MessageGetParams) (*MessageDetail, error)
	// MessageList returns a page of messages created in [p.From, p.To),
	// newest first across partitions (package listing merges the
	// partitions' own offset order), each judged by every group reading its
	// partition or by p.Group's lane alone. It reads about as many messages
	// as it skips and lists, and never more than MessageListScanLimit. A
	// queue that does not exist lists nothing.
	MessageList(ctx context.Context, p *MessageListParams) (*MessageListResult, error)
}

// MessageStatus is a message's standing as the control plane reports it.
type MessageStatus string

// Message statuses, as they appear on the wire.
const (
	// StatusPending: some consumer group has still to receive it.
	StatusPending MessageStatus = "pending"
	// StatusProcessing: a live lease holds it, and some group has still to
	// commit it.
	StatusProcessing MessageStatus = "processing"
	// StatusCompleted: every consumer group reading its partition has
	// committed it (and at least one reads it).
	StatusCompleted MessageStatus = "completed"
	// StatusDeadLetter: some consumer group dead-lettered it.
	StatusDeadLetter MessageStatus = "dead_letter"
)

// Valid reports whether s is one of the four statuses.
func (s MessageStatus) Valid() bool {
	switch s {
	case StatusPending, StatusProcessing, StatusCompleted, StatusDeadLetter:
		return true
	}
	return false
}

// MessageListScanLimit bounds the messages a listing examines, newest first
// (the offset's and those of another status included): a listing never
// reads more than this many, however large its window. A status filter
// that matches nothing among them answers an empty page; narrowing From
// and To reaches further back.
const MessageListScanLimit = 100_000

// Sentinel errors of the control plane's message repairs.
var (
	// ErrAlreadyDeadLettered means the consumer group already has a dead
	// letter for the message.
	ErrAlreadyDeadLettered = errors.New(api.TextAlreadyDeadLettered)
	// ErrNotDeadLettered means the message has no dead letter to requeue.
	ErrNotDeadLettered = errors.New(api.TextNotDeadLettered)
)

// MessageRef names a message: a transactionId is unique within a partition.
type MessageRef struct {
	PartitionID   string
	TransactionID string
}

// MessageListParams select a page of messages.
type MessageListParams struct {
	From time.Time // inclusive
	// Group, when set, judges every message by that consumer group's lane
	// alone (QueueMode for the status view, as Queen's procedure does)
	// instead of by every group reading its partition. A status filter
	// then reads every selected partition: the lanes' bounds of where a
	// status can be are every group's.
	Group     string
	Limit     int // <= 0 means 200
	Namespace string
	Now       time.Time // decides which leases are live
	Offset    int
	Partition string
	Queue     string
	Status    MessageStatus // "" for any
	Task      string
	Tenant    string
	To        time.Time // exclusive
}

// MessageListResult is a page of messages and the consumption mode of the
// queues the filters selected.
type MessageListResult struct {
	Messages []ListedMessage
	Mode     QueueModeSummary
}

// QueueModeSummary says how the selected queues are consumed: whether queue
// mode reads them and how many named (bus) groups do.
type QueueModeSummary struct {
	BusGroups    int
	HasQueueMode bool
}

// Type is "queue", "bus", "hybrid" or "none".
func (m QueueModeSummary) Type() string {
	switch {
	case m.HasQueueMode && m.BusGroups > 0:
		return "hybrid"
	case m.HasQueueMode:
		return "queue"
	case m.BusGroups > 0:
		return "bus"
	}
	return "none"
}

// ListedMessage is one message of a listing: no payload.
type ListedMessage struct {
	ConsumedBy     int // bus groups that committed it
	CreatedAt      time.Time
	ID             string
	LeaseExpiresAt *time.Time // the live lease holding it, if any
	Namespace      string
	Partition      string
	PartitionID    string
	ProducerSub    string
	Queue          string
	QueuePriority  int
	Status         MessageStatus
	Task           string
	TotalGroups    int // bus groups reading its partition
	TraceID        string
	TransactionID  string
}

// MessageGetParams name one message.
type MessageGetParams struct {
	MessageRef
	Now    time.Time
	Tenant string
}

// MessageDetail is one message with its payload and its standing in every
// consumer group reading its partition.
type MessageDetail struct {
	ListedMessage
	// ErrorMessage is the error of its newest dead letter, "" when none.
	ErrorMessage string
	// Groups are the consumer groups reading its partition (queue mode
	// included), by name.
	Groups       []GroupStanding
	HasQueueMode bool
	Options      QueueOptions // its queue's
	Payload      []byte       // as stored: sealed when Sealed says so
	Sealed       Seal
	// RetryCount is the retry count of its newest dead letter; without one,
	// the most failed attempts any group has made at it so far.
	RetryCount int
}

// GroupStanding is a message's standing in one consumer group.
type GroupStanding struct {
	Consumed       bool
	LeaseExpiresAt *time.Time // the live lease of this group holding it
	Name           string
}

// MessageDeleteParams name the message to delete.
type MessageDeleteParams struct {
	MessageRef
	Now    time.Time
	Tenant string
}

// MessageDeadLetterParams record a dead letter by hand.
type MessageDeadLetterParams struct {
	MessageRef
	ConsumerGroup string // "" means QueueMode
	Error         string // "" means "manual"
	Now           time.Time
	Tenant        string
}

// MessageRequeueParams name the dead-lettered message to requeue.
type MessageRequeueParams struct {
	MessageRef
	ConsumerGroup string // "" requeues whatever group dead-lettered it
	Now           time.Time
	Tenant        string
}

// Requeued is a message pushed again from the dead-letter queue.
type Requeued struct {
	MessageID             string // the new message's
	OriginalTransactionID string
	PartitionID           string
	Queue                 string
	TransactionID         string // the new message's
}

// RetryTransactionID returns the transactionId of the n-th requeue of a
// message whose transactionId is txn: "<txn>:retry:<n>", where a txn that is
// itself a requeue ("<base>:retry:<k>") counts on from k instead of nesting.
// A driver tries n = 1, 2, … (after k) until the id is free in the
// partition.
func RetryTransactionID(txn string, n int) string {
	base, k := SplitRetry(txn)
	return base + ":retry:" + strconv.Itoa(k+n)
}

// SplitRetry splits "<base>:retry:<k>" into base and k; any other txn is its
// own base with k = 0.
func SplitRetry(txn string) (string, int) {
	const marker = ":retry:"
	i := strings.LastIndex(txn, marker)
	if i < 0 {
		return txn, 0
	}
	digits := txn[i+len(marker):]
	if digits == "" || len(digits) > 9 || digits[0] == '0' {
		return txn, 0
	}
	k := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return txn, 0
		}
		k = k*10 + int(c-'0')
	}
	return txn[:i], k
}

// ManualDLQError is the error of a dead letter written by hand when the
// request names none.
const ManualDLQError = "manual"

// MessageRequeue pushes a dead-lettered message again at the end of its
// partition as a new message (transactionId "<original>:retry:<n>", a fresh
// id, payload, traceId and producer kept) and deletes its dead letters (only
// p.ConsumerGroup's when set). ErrNotFound for an unknown message,
// ErrNotDeadLettered when it has no (matching) dead letter. It is a
// DLQRequeue of the one message, so that every engine requeues one way.
func MessageRequeue(ctx context.Context, s DLQStore, p *MessageRequeueParams) (*Requeued, error) {
	res, err := s.DLQRequeue(ctx, &DLQRequeueParams{
		DLQFilter: DLQFilter{ConsumerGroup: p.ConsumerGroup},
		Now:       p.Now, Refs: []MessageRef{p.MessageRef}, Tenant: p.Tenant,
	})
	if err != nil {
		return nil, err
	}
	return singleRequeue(res)
}

// singleRequeue turns the result of a DLQRequeue of one named message into
// MessageRequeue's: the message requeued, or ErrNotFound or
// ErrNotDeadLettered.
func singleRequeue(res *DLQRequeueResult) (*Requeued, error) {
	if len(res.Requeued) == 1 {
		return &res.Requeued[0], nil
	}
	if len(res.Failed) == 1 && res.Failed[0].Error == api.TextMessageNotFound {
		return nil, ErrNotFound
	}
	return nil, ErrNotDeadLettered
}
