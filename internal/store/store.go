// Package store defines the storage contract of the broker: the domain
// operations every engine implements (push a batch, pop from lanes, commit
// acks, extend leases, run a transaction, configure and delete queues) and the
// engine-neutral types they exchange.
//
// A driver implements each operation in as few round trips as its engine
// allows; the lane rules shared by all drivers (cursor commits, clamping,
// retries, dead-lettering) live in package lane so that every engine applies
// exactly the same semantics.
package store

import (
	"context"
	"errors"
	"time"
)

// QueueMode is the consumer group name used when a client names none.
const QueueMode = "__QUEUE_MODE__"

// DefaultPartition is the partition a push lands in when it names none.
const DefaultPartition = "Default"

// Sentinel errors drivers return (wrapped) so that callers can map them.
var (
	// ErrClosed is returned by operations on a store that has been closed.
	ErrClosed = errors.New("store closed")
	// ErrUnavailable means the engine cannot be reached right now.
	ErrUnavailable = errors.New("database unavailable")
)

// Store is the storage engine behind a broker. All methods are safe for
// concurrent use. Times in params are supplied by the caller so that tests
// control the clock.
type Store interface {
	// AckMany commits a batch of acknowledgements and returns one result per
	// ack, in order.
	AckMany(ctx context.Context, p *AckManyParams) ([]AckResult, error)
	// Close releases the engine. It is safe to call more than once.
	Close() error
	// Engine names the engine ("sqlite", "postgres").
	Engine() string
	// LeaseExtend pushes back the deadline of every lane held by a lease.
	LeaseExtend(ctx context.Context, p *LeaseExtendParams) (*LeaseExtendResult, error)
	// Ping reports whether the engine is reachable.
	Ping(ctx context.Context) error
	// Pop claims up to p.Partitions lanes and returns up to p.Batch messages
	// from them under one lease. An empty result is not an error.
	Pop(ctx context.Context, p *PopParams) (*PopResult, error)
	// PushMany stores a batch of messages. Items carry broker-minted ids and
	// are already free of duplicates within the batch.
	PushMany(ctx context.Context, p *PushManyParams) ([]PushResult, error)
	// QueueConfigure creates or fully replaces a queue's configuration.
	QueueConfigure(ctx context.Context, p *QueueConfigureParams) (*Queue, error)
	// QueueDelete deletes a queue and everything in it; it reports whether
	// the queue existed.
	QueueDelete(ctx context.Context, name string) (bool, error)
	// SettingGet returns a broker-wide setting shared by every broker on the
	// store, "" when it was never set.
	SettingGet(ctx context.Context, key string) (string, error)
	// SettingSet durably stores a broker-wide setting.
	SettingSet(ctx context.Context, key, value string) error
	// Transaction runs pushes and acks atomically. A logical failure is
	// returned as *TxAbortError and nothing is written.
	Transaction(ctx context.Context, p *TransactionParams) ([]TxOpResult, error)
}

// QueueOptions are a queue's settings. The zero value is not the default; use
// DefaultQueueOptions.
type QueueOptions struct {
	CompletedRetentionSeconds int  `json:"completedRetentionSeconds"`
	DeadLetterQueue           bool `json:"deadLetterQueue"`
	DelayedProcessing         int  `json:"delayedProcessing"`
	DLQAfterMaxRetries        bool `json:"dlqAfterMaxRetries"`
	EncryptionEnabled         bool `json:"encryptionEnabled"`
	LeaseTime                 int  `json:"leaseTime"`
	MaxSize                   int  `json:"maxSize"`
	MaxWaitTimeSeconds        int  `json:"maxWaitTimeSeconds"`
	Priority                  int  `json:"priority"`
	RetentionEnabled          bool `json:"retentionEnabled"`
	RetentionSeconds          int  `json:"retentionSeconds"`
	RetryDelay                int  `json:"retryDelay"`
	RetryLimit                int  `json:"retryLimit"`
	TTL                       int  `json:"ttl"`
	WindowBuffer              int  `json:"windowBuffer"`
}

// DefaultQueueOptions returns the options of a queue created by its first push.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{
		LeaseTime:  300,
		RetryLimit: 3,
		RetryDelay: 1000,
		TTL:        3600,
	}
}

// LeaseDuration is how long a pop on this queue holds its lease. A stored
// leaseTime of 0 (or less) means 60 seconds, as in Queen.
func (o QueueOptions) LeaseDuration() time.Duration {
	if o.LeaseTime <= 0 {
		return 60 * time.Second
	}
	return time.Duration(o.LeaseTime) * time.Second
}

// Queue is a configured or implicitly created queue.
type Queue struct {
	DefaultPartitionID string
	ID                 string
	Name               string
	Namespace          string
	Options            QueueOptions
	Task               string
}

// QueueConfigureParams create or replace a queue's configuration.
type QueueConfigureParams struct {
	Name      string
	Namespace string
	Now       time.Time
	Options   QueueOptions
	Task      string
}

// PushItem is one message to store. MessageID and TransactionID are always
// set by the broker.
type PushItem struct {
	MessageID     string
	Namespace     string // used only when this push creates the queue
	Partition     string
	Payload       []byte // raw JSON
	ProducerSub   string // "" means none
	Queue         string
	Task          string // used only when this push creates the queue
	TraceID       string // "" means none
	TransactionID string
}

// PushManyParams is a batch of messages written with one createdAt.
type PushManyParams struct {
	Items []PushItem
	Now   time.Time
}

// PushStatus is the verdict on one pushed item.
type PushStatus string

// Push verdicts, as they appear on the wire.
const (
	PushBuffered  PushStatus = "buffered"
	PushDuplicate PushStatus = "duplicate"
	PushError     PushStatus = "error"
	PushFailed    PushStatus = "failed"
	PushQueued    PushStatus = "queued"
)

// PushResult is the outcome of one pushed item. For a duplicate, MessageID
// is the id of the message already stored.
type PushResult struct {
	Error       string
	MessageID   string
	PartitionID string
	Status      PushStatus
}

// SubscriptionMode says where a consumer group starts reading the first
// time it touches a queue.
type SubscriptionMode int

// Subscription modes.
const (
	SubscribeAll  SubscriptionMode = iota // from the beginning
	SubscribeFrom                         // after Subscription.From (also "new": From = join time)
)

// Subscription is a consumer group's starting point; it is honoured only on
// the group's first pop from a queue (first join wins).
type Subscription struct {
	From time.Time
	Mode SubscriptionMode
}

// PopParams describe one pop. Exactly one of Queue or (Namespace, Task) is
// used; Partition pins one lane of Queue.
type PopParams struct {
	AutoAck       bool
	Batch         int
	ConsumerGroup string
	LeaseID       string
	Namespace     string
	Now           time.Time
	Partition     string
	Partitions    int
	Queue         string
	Subscription  Subscription
	Task          string
}

// Message is a delivered message.
type Message struct {
	CreatedAt     time.Time
	ID            string
	Partition     string
	PartitionID   string
	Payload       []byte
	ProducerSub   string
	Queue         string
	TraceID       string
	TransactionID string
}

// PopResult holds the messages of a pop, lanes concatenated in claim order.
// An empty pop has no messages.
type PopResult struct {
	Messages []Message
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

// AckManyParams is a batch of acknowledgements.
type AckManyParams struct {
	Acks []Ack
	Now  time.Time
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

// Ack verdict texts.
const (
	ErrTextAlreadyCommitted = "already committed"
	ErrTextCancelled        = "cancelled by a negative ack at a lower offset"
	ErrTextInvalidLease     = "invalid or expired lease"
	ErrTextUnresolvable     = "unresolvable"
)

// LeaseExtendParams renew a lease by Seconds from Now (never shortening it).
type LeaseExtendParams struct {
	LeaseID string
	Now     time.Time
	Seconds int
}

// LeaseExtendResult says how many lanes were renewed and the earliest new
// deadline among them (nil when none).
type LeaseExtendResult struct {
	ExpiresAt *time.Time
	Renewed   int
}

// TxOp is one operation of a transaction: either a push of Items or one Ack.
type TxOp struct {
	Ack   *Ack
	Items []PushItem
}

// TransactionParams is an atomic bundle of pushes and acks.
type TransactionParams struct {
	Now            time.Time
	Ops            []TxOp
	RequiredLeases []string
}

// TxOpResult is the result of one push item or one ack of a transaction.
type TxOpResult struct {
	Ack  *AckResult
	Push *PushResult
}

// TxAbortError reports a transaction that was rolled back for a reason the
// client caused (a lease gone, an ack that did not apply, a duplicate push).
type TxAbortError struct {
	Reason string
}

func (e *TxAbortError) Error() string { return e.Reason }

// Notifier is implemented by stores shared by several brokers: Listen calls
// wake with the queue names pushed to (or released) by any broker, until ctx
// ends. Stores used by one broker alone need not implement it; the broker
// wakes its own waiters.
type Notifier interface {
	Listen(ctx context.Context, wake func(queues ...string)) error
}

// PoolStats describes a store's connection pool, for /metrics.
type PoolStats struct {
	Idle int // connections open and unused
	Size int // the most connections the pool opens
}

// PoolReporter is implemented by stores with a connection pool.
type PoolReporter interface {
	PoolStats() PoolStats
}
