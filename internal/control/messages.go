package control

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// DefaultWindow is how far back a message listing reaches when it names no
// start, as in Queen.
const DefaultWindow = time.Hour

// MessageQuery selects a page of messages. From and To bound the messages'
// creation time; To counts its whole minute, as in Queen (a listing "to
// 09:12:44" includes everything created before 09:13:00).
type MessageQuery struct {
	From      time.Time // zero: DefaultWindow before now
	Limit     int
	Namespace string
	Offset    int
	Partition string
	Queue     string
	Status    store.MessageStatus // "" for any
	Task      string
	Tenant    string
	To        time.Time // zero: now
}

// Window returns the [from, to) a query lists at now.
func (q *MessageQuery) Window(now time.Time) (from, to time.Time) {
	from, to = q.From, q.To
	if from.IsZero() {
		from = now.Add(-DefaultWindow)
	}
	if to.IsZero() {
		to = now
	}
	return from, to.Truncate(time.Minute).Add(time.Minute)
}

// ListMessages returns a page of the tenant's messages, newest first, with
// each one's status and the consumption mode of the selected queues.
func (c *Control) ListMessages(ctx context.Context, q MessageQuery) (*store.MessageListResult, error) {
	now := c.now()
	from, to := q.Window(now)
	return c.store.MessageList(ctx, &store.MessageListParams{
		From: from, Limit: q.Limit, Namespace: q.Namespace, Now: now, Offset: q.Offset, Partition: q.Partition,
		Queue: q.Queue, Status: q.Status, Task: q.Task, Tenant: q.Tenant, To: to,
	})
}

// GetMessage returns one message with its payload and its standing in every
// consumer group; store.ErrNotFound when the tenant has no such message.
func (c *Control) GetMessage(ctx context.Context, tenant string, ref store.MessageRef) (*store.MessageDetail, error) {
	return c.store.MessageGet(ctx, &store.MessageGetParams{MessageRef: ref, Now: c.now(), Tenant: tenant})
}

// DeleteMessage deletes a message with its dead letters and traces and
// reports whether it existed.
func (c *Control) DeleteMessage(ctx context.Context, tenant string, ref store.MessageRef) (bool, error) {
	existed, err := c.store.MessageDelete(ctx, &store.MessageDeleteParams{MessageRef: ref, Now: c.now(), Tenant: tenant})
	if err == nil && existed {
		c.log.InfoContext(ctx, "message deleted", "tenant", tenant, "partitionId", ref.PartitionID,
			"transactionId", ref.TransactionID)
	}
	return existed, err
}

// RetryMessage pushes a dead-lettered message again at the end of its
// partition (store.MessageRequeue) and wakes the long polls of its queue.
// group "" requeues it whatever group dead-lettered it.
func (c *Control) RetryMessage(ctx context.Context, tenant string, ref store.MessageRef, group string) (*store.Requeued, error) {
	r, err := store.MessageRequeue(ctx, c.store, &store.MessageRequeueParams{MessageRef: ref, ConsumerGroup: group,
		Now: c.now(), Tenant: tenant})
	if err != nil {
		return nil, err
	}
	c.wake(store.QueueKey(store.TenantOrDefault(tenant), r.Queue))
	return r, nil
}

// DeadLetterMessage records a dead letter for a message in one consumer
// group ("" for queue mode) with errText ("" for "manual"). No cursor moves.
func (c *Control) DeadLetterMessage(ctx context.Context, tenant string, ref store.MessageRef, group, errText string) error {
	return c.store.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: ref, ConsumerGroup: group,
		Error: errText, Now: c.now(), Tenant: tenant})
}
