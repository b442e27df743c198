package store

import (
	"context"
	"time"
)

// QueueStore creates, configures and deletes queues.
type QueueStore interface {
	// QueueConfigure creates or fully replaces a queue's configuration.
	QueueConfigure(ctx context.Context, p *QueueConfigureParams) (*Queue, error)
	// QueueDelete deletes a queue; it reports whether the queue existed.
	// The queue, its partitions, lanes and groups are gone when it returns
	// (its name can be used again at once); its messages are removed in
	// bounded steps by QueuePurge, so that deleting a queue of millions of
	// messages never stalls other queues.
	QueueDelete(ctx context.Context, p *QueueDeleteParams) (bool, error)
	// QueuePurge removes up to p.Limit rows left by deleted queues and
	// reports whether any remain. Deleted data is unreachable before it is
	// purged; purging only frees the space.
	QueuePurge(ctx context.Context, p *QueuePurgeParams) (*QueuePurgeResult, error)
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
