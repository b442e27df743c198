package broker

import (
	"context"

	"github.com/queen-go/queen/internal/store"
)

// NormalizeStatus maps a client's ack status to its meaning. completed,
// success, acked, ok and an absent status complete; retry and dlq mean
// themselves; anything else at all is a failure, so a typo nacks instead of
// erroring.
func NormalizeStatus(status *string) store.AckStatus {
	if status == nil {
		return store.AckCompleted
	}
	switch *status {
	case "completed", "success", "acked", "ok":
		return store.AckCompleted
	case "retry":
		return store.AckRetry
	case "dlq":
		return store.AckDLQ
	default:
		return store.AckFailed
	}
}

// Ack commits acknowledgements and returns one verdict per ack, in order.
func (b *Broker) Ack(ctx context.Context, acks []store.Ack) ([]store.AckResult, error) {
	if len(acks) == 0 {
		return []store.AckResult{}, nil
	}
	for i := range acks {
		if acks[i].ConsumerGroup == "" {
			acks[i].ConsumerGroup = store.QueueMode
		}
	}
	res, err := b.store.AckMany(ctx, &store.AckManyParams{Acks: acks, Now: b.now()})
	if err != nil {
		return nil, err
	}
	b.afterAcks(res)
	return res, nil
}

// afterAcks counts verdicts and wakes consumers of lanes whose lease was
// released: their unacked messages are deliverable again.
func (b *Broker) afterAcks(res []store.AckResult) {
	var released []string
	for i := range res {
		r := &res[i]
		switch {
		case r.DLQ:
			b.metrics.Acks.WithLabelValues("dlq").Inc()
		case r.Success:
			b.metrics.Acks.WithLabelValues("success").Inc()
		default:
			b.metrics.Acks.WithLabelValues("failed").Inc()
		}
		if r.LeaseReleased && r.Queue != "" {
			released = appendNew(released, r.Queue)
		}
	}
	if len(released) > 0 {
		b.hub.kick(released...)
	}
}

// DefaultExtendSeconds is how far an extend with no seconds pushes a lease.
const DefaultExtendSeconds = 60

// ExtendLease renews every lane held by leaseID; seconds <= 0 means 60.
func (b *Broker) ExtendLease(ctx context.Context, leaseID string, seconds int) (*store.LeaseExtendResult, error) {
	if seconds <= 0 {
		seconds = DefaultExtendSeconds
	}
	return b.store.LeaseExtend(ctx, &store.LeaseExtendParams{LeaseID: leaseID, Seconds: seconds, Now: b.now()})
}

// Configure creates or fully replaces a queue's configuration.
func (b *Broker) Configure(ctx context.Context, name, namespace, task string, opts store.QueueOptions) (*store.Queue, error) {
	return b.store.QueueConfigure(ctx, &store.QueueConfigureParams{
		Name: name, Namespace: namespace, Task: task, Options: opts, Now: b.now(),
	})
}

// DeleteQueue deletes a queue and reports whether it existed.
func (b *Broker) DeleteQueue(ctx context.Context, name string) (bool, error) {
	return b.store.QueueDelete(ctx, name)
}
