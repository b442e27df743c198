package control

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Consumer groups: where each group stands, how far behind it is, and
// moving or dropping its cursors. A group's progress on a lane is its
// cursor; a seek sets cursors under the same locks pops and acks take, and
// wakes the long polls of the queue so that a seek backwards is read at
// once.

// LaggingAfter is how far behind a group is Lagging (Queen's 300 s).
const LaggingAfter = 300 * time.Second

// Group states, Queen's.
const (
	StateDead    = "Dead"    // it never committed anything (and is not Lagging)
	StateLagging = "Lagging" // its oldest unread message is older than LaggingAfter
	StateStable  = "Stable"  // it has committed messages (and is not Lagging)
)

// GroupQueue is a group on a queue with the figures Queen derives.
type GroupQueue struct {
	store.GroupQueue
	MaxTimeLag time.Duration // age of its oldest unread message; 0 when none
	State      string
}

// Lane is a group on a partition, with its time lag.
type Lane struct {
	store.LaneInfo
	TimeLag time.Duration // age of its oldest unread message; 0 when none
}

// GroupList lists a page of the tenant's (group, queue) pairs.
func (c *Control) GroupList(ctx context.Context, tenant string, p store.GroupListParams) ([]GroupQueue, error) {
	now := c.now()
	p.Tenant, p.Now = tenant, now
	list, err := c.store.GroupList(ctx, &p)
	if err != nil {
		return nil, err
	}
	out := make([]GroupQueue, len(list))
	for i, g := range list {
		out[i] = GroupQueue{GroupQueue: g, MaxTimeLag: age(now, g.OldestUnread)}
		switch {
		case out[i].MaxTimeLag > LaggingAfter:
			out[i].State = StateLagging
		case g.Consumed > 0:
			out[i].State = StateStable
		default:
			out[i].State = StateDead
		}
	}
	return out, nil
}

// GroupGet lists a page of a group's lanes on every queue of the tenant it
// has joined; store.ErrGroupNotFound when none.
func (c *Control) GroupGet(ctx context.Context, tenant string, p store.GroupGetParams) ([]Lane, error) {
	now := c.now()
	p.Tenant, p.Now = tenant, now
	lanes, err := c.store.GroupGet(ctx, &p)
	if err != nil {
		return nil, err
	}
	return withAge(now, lanes), nil
}

// GroupLagging lists a page of the tenant's lanes whose oldest unread
// message is older than minLag, most behind first.
func (c *Control) GroupLagging(ctx context.Context, tenant string, p store.GroupLaggingParams) ([]Lane, error) {
	now := c.now()
	p.Tenant, p.Now = tenant, now
	lanes, err := c.store.GroupLagging(ctx, &p)
	if err != nil {
		return nil, err
	}
	return withAge(now, lanes), nil
}

func withAge(now time.Time, lanes []store.LaneInfo) []Lane {
	out := make([]Lane, len(lanes))
	for i, l := range lanes {
		out[i] = Lane{LaneInfo: l, TimeLag: age(now, l.OldestUnread)}
	}
	return out
}

// age is how long before now t was; 0 for the zero time.
func age(now, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return max(0, now.Sub(t))
}

// GroupSeek moves a group's cursors on one of the tenant's queues (or one
// partition of it) and wakes the queue's long polls: after a seek
// backwards the group reads again at once.
func (c *Control) GroupSeek(ctx context.Context, tenant string, p store.GroupSeekParams) (*store.GroupSeekResult, error) {
	p.Tenant, p.Now = tenant, c.now()
	res, err := c.store.GroupSeek(ctx, &p)
	if err != nil {
		return nil, err
	}
	c.wake(store.QueueKey(store.TenantOrDefault(tenant), p.Queue))
	return res, nil
}

// GroupDelete drops a group's cursors on one of the tenant's queues or on
// all of them. A group that stays joined restarts from its subscription, so
// its consumers are woken.
func (c *Control) GroupDelete(ctx context.Context, tenant string, p store.GroupDeleteParams) (*store.GroupDeleteResult, error) {
	p.Tenant, p.Now = tenant, c.now()
	res, err := c.store.GroupDelete(ctx, &p)
	if err != nil {
		return nil, err
	}
	if !p.DeleteMetadata && len(res.Queues) > 0 {
		keys := make([]string, len(res.Queues))
		for i, q := range res.Queues {
			keys[i] = store.QueueKey(store.TenantOrDefault(tenant), q)
		}
		c.wake(keys...)
	}
	return res, nil
}

// GroupSubscriptionSet changes where a group starts reading on every queue
// of the tenant it has joined, and reports on how many.
func (c *Control) GroupSubscriptionSet(ctx context.Context, tenant, group string, from time.Time) (int, error) {
	return c.store.GroupSubscriptionSet(ctx, &store.GroupSubscriptionSetParams{Tenant: tenant, Group: group,
		From: from, Now: c.now()})
}
