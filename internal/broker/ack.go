package broker

import (
	"context"
	"time"

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
func (b *Broker) Ack(ctx context.Context, c Caller, acks []store.Ack) ([]store.AckResult, error) {
	if len(acks) == 0 {
		return []store.AckResult{}, nil
	}
	for i := range acks {
		if acks[i].ConsumerGroup == "" {
			acks[i].ConsumerGroup = store.QueueMode
		}
	}
	res, err := b.store.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: acks, Now: b.now(), Tenant: c.tenant()})
	if err != nil {
		return nil, err
	}
	b.afterAcks(c.tenant(), res)
	return res, nil
}

// afterAcks counts verdicts and wakes consumers of lanes whose lease was
// released: their unacked messages are deliverable again.
func (b *Broker) afterAcks(tenant string, res []store.AckResult) {
	b.metrics.Acked(tenant, res)
	var released []store.Wake
	for i := range res {
		r := &res[i]
		if r.LeaseReleased && r.Queue != "" {
			released = addWake(released, store.QueueKey(tenant, r.Queue))
		}
	}
	if len(released) > 0 {
		b.hub.kick(released...)
	}
}

// DefaultExtendSeconds is how far an extend with no seconds pushes a lease.
const DefaultExtendSeconds = 60

// ExtendLease renews every lane held by leaseID; seconds <= 0 means 60.
func (b *Broker) ExtendLease(ctx context.Context, c Caller, leaseID string, seconds int) (*store.LeaseExtendResult, error) {
	if seconds <= 0 {
		seconds = DefaultExtendSeconds
	}
	return b.store.LeaseExtend(ctx, &store.LeaseExtendParams{LeaseID: leaseID, Seconds: seconds, Now: b.now(),
		Tenant: c.tenant()})
}

// Configure creates or fully replaces a queue's configuration.
func (b *Broker) Configure(ctx context.Context, c Caller, name, namespace, task string, opts store.QueueOptions) (*store.Queue, error) {
	if err := b.checkSealing(opts); err != nil { // encryption at rest (encrypt.go)
		return nil, err
	}
	q, err := b.store.QueueConfigure(ctx, &store.QueueConfigureParams{
		Name: name, Namespace: namespace, Task: task, Options: opts, Now: b.now(), Tenant: c.tenant(),
	})
	if err == nil {
		b.sealing.put(store.QueueKey(c.tenant(), name), opts.EncryptionEnabled, time.Now())
		// A shorter delay, window or lease may make messages poppable
		// sooner than the deadlines parked polls sleep until.
		b.hub.kickAll(store.QueueKey(c.tenant(), name))
	}
	return q, err
}

// DeleteQueue deletes a queue and reports whether it existed.
func (b *Broker) DeleteQueue(ctx context.Context, c Caller, name string) (bool, error) {
	existed, err := b.store.QueueDelete(ctx, &store.QueueDeleteParams{Name: name, Now: b.now(), Tenant: c.tenant()})
	if existed {
		b.purge.Kick()
	}
	return existed, err
}
