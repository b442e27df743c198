package store

import (
	"context"
	"time"
)

// QueueStore creates, configures, inspects, clears and deletes queues.
type QueueStore interface {
	// PartitionList lists partitions with their message figures, of one
	// queue (ErrQueueNotFound if it does not exist) or of every queue.
	PartitionList(ctx context.Context, p *PartitionListParams) (*PartitionListResult, error)
	// QueueClear makes every message of a queue, or of one of its
	// partitions, unreachable at once: cursors move to the partition's end,
	// leases and retry counters are dropped. The rows are freed afterwards
	// by QueueClearPurge in bounded steps. ErrQueueNotFound or
	// ErrPartitionNotFound when the names do not exist.
	QueueClear(ctx context.Context, p *QueueClearParams) (*QueueClearResult, error)
	// QueueClearPurge frees up to p.Limit rows (messages and dead letters)
	// left by QueueClear and reports whether any remain.
	QueueClearPurge(ctx context.Context, p *QueuePurgeParams) (*QueuePurgeResult, error)
	// QueueConfigure creates or fully replaces a queue's configuration.
	QueueConfigure(ctx context.Context, p *QueueConfigureParams) (*Queue, error)
	// QueueDelete deletes a queue; it reports whether the queue existed.
	// The queue, its partitions, lanes and groups are gone when it returns
	// (its name can be used again at once); its messages are removed in
	// bounded steps by QueuePurge, so that deleting a queue of millions of
	// messages never stalls other queues.
	QueueDelete(ctx context.Context, p *QueueDeleteParams) (bool, error)
	// QueueGet describes one queue with a page of its partitions;
	// ErrQueueNotFound if it does not exist.
	QueueGet(ctx context.Context, p *QueueGetParams) (*QueueDetail, error)
	// QueueList lists a page of queues with their message figures (dead
	// letters included) and oldest unread message, newest first, in one
	// statement for the page whatever its size.
	QueueList(ctx context.Context, p *QueueListParams) (*QueueListResult, error)
	// QueueOverview sums up every queue of a tenant.
	QueueOverview(ctx context.Context, p *QueueOverviewParams) (*QueueOverview, error)
	// QueuePurge removes up to p.Limit rows left by deleted queues and
	// reports whether any remain. Deleted data is unreachable before it is
	// purged; purging only frees the space.
	QueuePurge(ctx context.Context, p *QueuePurgeParams) (*QueuePurgeResult, error)
	// QueueRollup sums up queues by namespace or by task, a page of keys in
	// order; queues without one are left out.
	QueueRollup(ctx context.Context, p *QueueRollupParams) (*QueueRollupResult, error)
}

// QueueOptions are a queue's settings. The zero value is not the default; use
// DefaultQueueOptions. The type is neither the wire's (api.QueueOptions)
// nor the stored format's (options_format.go), so that either can be read
// and written without the other.
type QueueOptions struct {
	CompletedRetentionSeconds int
	DeadLetterQueue           bool
	DelayedProcessing         int
	DLQAfterMaxRetries        bool
	EncryptionEnabled         bool
	LeaseTime                 int
	MaxSize                   int
	MaxWaitTimeSeconds        int
	Priority                  int
	RetentionEnabled          bool
	RetentionSeconds          int
	RetryDelay                int
	RetryLimit                int
	TTL                       int
	WindowBuffer              int
}

// DefaultQueueOptions returns the options of a queue created by its first push.
// RetryDelay is 0, where Queen echoes 1000: Queen never applies it, and its
// clients expect a negative ack to be redelivered at once, so only a queue
// that sets it gets a delay.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{
		LeaseTime:  300,
		RetryLimit: 3,
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
	Tenant             string
}

// QueueConfigureParams create or replace a queue's configuration.
type QueueConfigureParams struct {
	Name      string
	Namespace string
	Now       time.Time
	Options   QueueOptions
	Task      string
	Tenant    string
}

// QueueDeleteParams name the queue to delete.
type QueueDeleteParams struct {
	Name   string
	Now    time.Time
	Tenant string
}

// QueuePurgeParams bound one purge step.
type QueuePurgeParams struct {
	Limit int // rows at most; <= 0 means 1000
	Now   time.Time
}

// QueuePurgeResult says what a purge step removed and whether more remains.
type QueuePurgeResult struct {
	Deleted int
	More    bool
}

// Every figure below comes from counters and cursors (a partition's newest
// offset and message count, a lane's cursor) and from at most one index
// lookup per partition or lane; none is computed by reading messages.

// DefaultPageLimit is the page size of a list whose Limit is 0 or less.
const DefaultPageLimit = 100

// PageLimit returns limit, or DefaultPageLimit when it is 0 or less.
func PageLimit(limit int) int {
	if limit <= 0 {
		return DefaultPageLimit
	}
	return limit
}

// MessageCounts are the message figures of a partition, or their sums over
// partitions. A partition counts the messages stored since it was last
// cleared. Its Completed, Pending and Processing are the largest among the
// consumer groups reading it (Queen's rule); with no group reading it,
// Pending is Total.
type MessageCounts struct {
	Completed  int64 // committed by the group furthest ahead
	DeadLetter int64 // dead-letter rows of its messages, all groups together
	Pending    int64 // neither committed nor leased, for the group furthest behind
	Processing int64 // under a live lease
	Total      int64 // stored since the partition was last cleared
}

// Add adds o to c.
func (c *MessageCounts) Add(o MessageCounts) {
	c.Completed += o.Completed
	c.DeadLetter += o.DeadLetter
	c.Pending += o.Pending
	c.Processing += o.Processing
	c.Total += o.Total
}

// QueueInfo describes one queue.
type QueueInfo struct {
	CreatedAt time.Time
	ID        string
	Messages  MessageCounts // over all its partitions
	Name      string
	Namespace string
	// OldestUnread (QueueList only) is the createdAt of the oldest message
	// some group (queue mode included) has still to read, or, while no
	// group reads the queue, of its oldest message; zero when there is
	// none. The rule of the queue gauges (QueueGauge.OldestUnread).
	OldestUnread time.Time
	Partitions   int
	Task         string
}

// PartitionInfo describes one partition.
type PartitionInfo struct {
	CreatedAt     time.Time
	ID            string
	LastActivity  time.Time // its last push or claim; zero when none
	Messages      MessageCounts
	Name          string
	NewestMessage time.Time // zero when it holds no message
	OldestMessage time.Time // zero when it holds no message
	Queue         string
}

// QueueListParams select a page of a tenant's queues, newest first,
// optionally of one namespace and/or task.
type QueueListParams struct {
	Limit     int
	Namespace string
	Now       time.Time
	Offset    int
	Task      string
	Tenant    string
}

// QueueListResult is a page of queues and how many match in all.
type QueueListResult struct {
	Queues []QueueInfo
	Total  int
}

// QueueGetParams name a queue and the page of its partitions (by name) to
// describe.
type QueueGetParams struct {
	Limit  int
	Name   string
	Now    time.Time
	Offset int
	Tenant string
}

// QueueDetail is a queue (its figures over all partitions, its
// configuration) and a page of its partitions.
type QueueDetail struct {
	Options    QueueOptions
	Partitions []PartitionInfo
	Queue      QueueInfo
}

// PartitionListParams select a page of partitions: of Queue by name, or of
// every queue by queue name then partition name when Queue is "".
type PartitionListParams struct {
	Limit  int
	Now    time.Time
	Offset int
	Queue  string
	Tenant string
}

// PartitionListResult is a page of partitions and how many match in all.
type PartitionListResult struct {
	Partitions []PartitionInfo
	Total      int
}

// RollupKey says what QueueRollup groups queues by.
type RollupKey int

// Rollup keys.
const (
	RollupNamespace RollupKey = iota
	RollupTask
)

// QueueRollupParams select a page of namespaces (or tasks), in order.
type QueueRollupParams struct {
	By     RollupKey
	Limit  int
	Now    time.Time
	Offset int
	Tenant string
}

// QueueRollup sums up the queues of one namespace (or task).
type QueueRollup struct {
	Key        string
	Messages   MessageCounts
	Partitions int
	Queues     int
}

// QueueRollupResult is a page of rollups and how many keys there are.
type QueueRollupResult struct {
	Rollups []QueueRollup
	Total   int
}

// QueueOverviewParams name the tenant to sum up.
type QueueOverviewParams struct {
	Now    time.Time
	Tenant string
}

// QueueOverview sums up a tenant's queues. Lags has one entry per lane with
// unread messages.
type QueueOverview struct {
	Lags       []LaneLag
	Messages   MessageCounts
	Namespaces int
	Partitions int
	Queues     int
	Tasks      int
}

// LaneLag is how far one lane is behind: its unread messages and the
// createdAt of the oldest of them.
type LaneLag struct {
	Messages     int64
	OldestUnread time.Time
}

// QueueClearParams name the queue to clear, or one of its partitions.
type QueueClearParams struct {
	Name      string
	Now       time.Time
	Partition string // "" clears every partition
	Tenant    string
}

// QueueClearResult says how many messages and partitions were cleared.
type QueueClearResult struct {
	Messages   int64
	Partitions int
}
