package store

import (
	"context"
	"time"
)

// LaneStore claims lanes (partition x consumer group) under leases.
type LaneStore interface {
	// LanePop claims up to p.Partitions lanes and returns up to p.Batch
	// messages from them under one lease. An empty result is not an error.
	LanePop(ctx context.Context, p *LanePopParams) (*PopResult, error)
	// LaneNextReady returns the earliest time at which a lane of p.Queue
	// (p.Partition only, when set) for p.ConsumerGroup that holds unread
	// messages may become claimable without any push: a lease expiring, a
	// retry delay, a window buffer or a delayed message coming due. The zero
	// time means no lane is waiting for a deadline (only a push, an ack or a
	// control operation can make the queue poppable); a time not after
	// p.Now means a lane looks claimable already. Namespace and task are
	// not used: the broker asks this of single-queue long polls only.
	LaneNextReady(ctx context.Context, p *LanePopParams) (time.Time, error)
	// LeaseExtend pushes back the deadline of every lane held by a lease.
	LeaseExtend(ctx context.Context, p *LeaseExtendParams) (*LeaseExtendResult, error)
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

// LanePopParams describe one pop. Exactly one of Queue or (Namespace, Task) is
// used; Partition pins one lane of Queue.
type LanePopParams struct {
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
	Tenant        string
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
	Sealed        Seal // how Payload is stored; the broker opens it
	TraceID       string
	TransactionID string
}

// PopResult holds the messages of a pop, lanes concatenated in claim order.
// An empty pop has no messages.
type PopResult struct {
	// LeaseExpiresAt is when the lease taken by a non-empty, non-autoAck
	// pop expires (the earliest deadline when lanes of several queues were
	// claimed): the broker wakes long polls then, in case the lease is
	// neither acknowledged nor extended. Zero otherwise.
	LeaseExpiresAt time.Time
	Messages       []Message
}

// LeaseExtendParams renew a lease by Seconds from Now (never shortening it).
type LeaseExtendParams struct {
	LeaseID string
	Now     time.Time
	Seconds int
	Tenant  string // only lanes of this tenant's queues are renewed
}

// LeaseExtendResult says how many lanes were renewed and the earliest new
// deadline among them (nil when none).
type LeaseExtendResult struct {
	ExpiresAt *time.Time
	Renewed   int
}
