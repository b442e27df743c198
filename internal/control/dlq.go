package control

import (
	"context"

	"github.com/queen-go/queen/internal/store"
)

// dlqDeleteStep is how many dead letters one transaction of DeleteDLQ
// deletes: a delete of any size is a series of short transactions.
const dlqDeleteStep = 1000

// ListDLQ returns a page of the tenant's dead letters, newest failure first.
func (c *Control) ListDLQ(ctx context.Context, p store.DLQListParams) ([]store.DeadLetter, error) {
	return c.store.DLQList(ctx, &p)
}

// RetryDLQ requeues a selection of dead-lettered messages (see
// store.DLQRequeueParams), in their original order within each partition,
// and wakes the long polls of their queues.
func (c *Control) RetryDLQ(ctx context.Context, p store.DLQRequeueParams) (*store.DLQRequeueResult, error) {
	p.Now = c.now()
	res, err := c.store.DLQRequeue(ctx, &p)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, r := range res.Requeued {
		k := store.QueueKey(store.TenantOrDefault(p.Tenant), r.Queue)
		if len(keys) == 0 || keys[len(keys)-1] != k {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		c.wake(keys...)
		c.log.InfoContext(ctx, "dead letters requeued", "tenant", p.Tenant, "messages", len(res.Requeued))
	}
	return res, nil
}

// DeleteDLQ deletes the tenant's dead letters matching f (never their
// messages), in steps of dlqDeleteStep rows, and returns how many it
// deleted. It stops early, with what it deleted so far, when ctx ends.
func (c *Control) DeleteDLQ(ctx context.Context, tenant string, f store.DLQFilter) (int, error) {
	total := 0
	for {
		n, err := c.store.DLQDelete(ctx, &store.DLQDeleteParams{DLQFilter: f, Limit: dlqDeleteStep, Now: c.now(),
			Tenant: tenant})
		total += n
		if err != nil {
			return total, err
		}
		if n < dlqDeleteStep {
			if total > 0 {
				c.log.InfoContext(ctx, "dead letters deleted", "tenant", tenant, "rows", total)
			}
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
