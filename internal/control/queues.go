package control

import (
	"context"
	"slices"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/purge"
)

// Queues and partitions: listing, describing, summing up and clearing.
// Every figure is live: it is computed from the store's counters and
// cursors when asked (see store.MessageCounts), so there are no statistics
// to refresh.

// QueueItem is a listed queue with the age of its oldest unread message,
// measured by the broker's clock (a browser's may be off).
type QueueItem struct {
	store.QueueInfo
	OldestUnreadAge time.Duration // 0 when nothing is unread
}

// QueueListResult is a page of queues and how many match in all.
type QueueListResult struct {
	Queues []QueueItem
	Total  int
}

// QueueList lists a page of the tenant's queues, newest first.
func (c *Control) QueueList(ctx context.Context, tenant string, p store.QueueListParams) (*QueueListResult, error) {
	p.Tenant, p.Now = tenant, c.now()
	res, err := c.store.QueueList(ctx, &p)
	if err != nil {
		return nil, err
	}
	out := &QueueListResult{Queues: make([]QueueItem, len(res.Queues)), Total: res.Total}
	for i, q := range res.Queues {
		out.Queues[i] = QueueItem{QueueInfo: q, OldestUnreadAge: age(p.Now, q.OldestUnread)}
	}
	return out, nil
}

// QueueGet describes one of the tenant's queues with a page of its
// partitions; store.ErrQueueNotFound if it has none of that name.
func (c *Control) QueueGet(ctx context.Context, tenant string, p store.QueueGetParams) (*store.QueueDetail, error) {
	p.Tenant, p.Now = tenant, c.now()
	return c.store.QueueGet(ctx, &p)
}

// PartitionList lists a page of the partitions of one of the tenant's
// queues, or of all of them.
func (c *Control) PartitionList(ctx context.Context, tenant string, p store.PartitionListParams) (*store.PartitionListResult, error) {
	p.Tenant, p.Now = tenant, c.now()
	return c.store.PartitionList(ctx, &p)
}

// QueueRollup sums up the tenant's queues by namespace or by task.
func (c *Control) QueueRollup(ctx context.Context, tenant string, p store.QueueRollupParams) (*store.QueueRollupResult, error) {
	p.Tenant, p.Now = tenant, c.now()
	return c.store.QueueRollup(ctx, &p)
}

// Overview sums up the tenant's queues, with the spread of its lanes' lags.
type Overview struct {
	store.QueueOverview
	At        time.Time
	OffsetLag Spread // unread messages per lane behind
	TimeLag   Spread // seconds behind per lane behind
}

// Spread describes a set of values: 0 everywhere when it is empty.
type Spread struct {
	Avg, Max, Median, Min float64
}

// spread returns the spread of vs (which it sorts).
func spread(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	slices.Sort(vs)
	var sum float64
	for _, v := range vs {
		sum += v
	}
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return Spread{Avg: sum / float64(len(vs)), Max: vs[len(vs)-1], Median: med, Min: vs[0]}
}

// Overview sums up the tenant's queues. Its cost grows with the tenant's
// partitions and lanes (one index lookup per lane behind), never with its
// messages.
func (c *Control) Overview(ctx context.Context, tenant string) (*Overview, error) {
	now := c.now()
	o, err := c.store.QueueOverview(ctx, &store.QueueOverviewParams{Tenant: tenant, Now: now})
	if err != nil {
		return nil, err
	}
	out := &Overview{QueueOverview: *o, At: now}
	offsets := make([]float64, 0, len(o.Lags))
	times := make([]float64, 0, len(o.Lags))
	for _, l := range o.Lags {
		offsets = append(offsets, float64(l.Messages))
		times = append(times, max(0, now.Sub(l.OldestUnread).Seconds()))
	}
	out.OffsetLag, out.TimeLag = spread(offsets), spread(times)
	out.Lags = nil
	return out, nil
}

// QueueClear clears one of the tenant's queues, or one of its partitions:
// its messages are unreachable when it returns (cursors at the end, leases
// dropped) and their rows are freed in the background in short steps.
func (c *Control) QueueClear(ctx context.Context, tenant, queue, partition string) (*store.QueueClearResult, error) {
	res, err := c.store.QueueClear(ctx, &store.QueueClearParams{Tenant: tenant, Name: queue, Partition: partition,
		Now: c.now()})
	if err != nil {
		return nil, err
	}
	if res.Messages > 0 {
		c.clearPurge.Kick()
	}
	return res, nil
}

// clearPurgeEvery catches cleared rows left by a broker that stopped
// before freeing them.
const clearPurgeEvery = time.Minute

// purgeCleared frees cleared messages until none are left or ctx ends. The
// clear-purge service runs it after each clear (kicked), every minute, and
// under the cluster-wide job lock: one broker frees at a time.
func (c *Control) purgeCleared(ctx context.Context) {
	start := time.Now()
	res, err := purge.Run(ctx, clearPurger{c.store}, c.now)
	switch {
	case err != nil && ctx.Err() == nil:
		c.log.Warn("freeing cleared messages interrupted", "rows", res.Rows, "err", err)
	case res.Rows > 0:
		c.log.Info("cleared messages freed", "rows", res.Rows, "steps", res.Steps,
			"took", time.Since(start).Round(time.Millisecond))
	}
}

// clearPurger adapts QueueClearPurge to package purge, which sizes and
// paces the steps exactly as for deleted queues.
type clearPurger struct{ store Store }

func (p clearPurger) QueuePurge(ctx context.Context, params *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	return p.store.QueueClearPurge(ctx, params)
}

// WaitCleared frees cleared messages until none are left; tests use it to
// see the result of a clear without waiting on the background purge.
func (c *Control) WaitCleared(ctx context.Context) error {
	_, err := purge.Run(ctx, clearPurger{c.store}, c.now)
	return err
}
