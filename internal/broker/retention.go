package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/purge"
)

// The retention and eviction services apply the queue options
// retentionSeconds, completedRetentionSeconds (retention) and
// maxWaitTimeSeconds (eviction), and delete partitions left empty and idle.
// Each runs its sweeps as short store steps (store.RetentionStore) sized
// like the purge of deleted queues (package purge): each step takes a few
// milliseconds and is followed by a pause twice as long, so that pushes and
// pops never wait long behind a sweep. On a database shared by several
// brokers one broker at a time runs each service (service.Exclusive).

// SweepConfig configures the retention and eviction services. Zero fields
// take the defaults noted per field (Queen's).
type SweepConfig struct {
	// EvictionBatch bounds the rows one eviction step writes
	// (EVICTION_BATCH_SIZE). Default 1000.
	EvictionBatch int
	// EvictionEvery is how often eviction runs (EVICTION_INTERVAL).
	// Default 1 minute.
	EvictionEvery time.Duration
	// HistoryKeep is how long the retention history is kept
	// (METRICS_RETENTION_DAYS). Default 90 days.
	HistoryKeep time.Duration
	// PartitionIdle is how long an empty partition must have seen no push
	// and no pop before retention deletes it (PARTITION_CLEANUP_DAYS).
	// Default 30 days.
	PartitionIdle time.Duration
	// RetentionBatch bounds the rows one retention step deletes
	// (RETENTION_BATCH_SIZE). Default 1000.
	RetentionBatch int
	// RetentionEvery is how often retention runs (RETENTION_INTERVAL).
	// Default 5 minutes.
	RetentionEvery time.Duration
}

// Defaults of SweepConfig.
const (
	DefaultEvictionEvery  = time.Minute
	DefaultHistoryKeep    = 90 * 24 * time.Hour
	DefaultPartitionIdle  = 30 * 24 * time.Hour
	DefaultRetentionEvery = 5 * time.Minute
	DefaultSweepBatch     = 1000
)

func (c SweepConfig) withDefaults() SweepConfig {
	if c.EvictionBatch <= 0 {
		c.EvictionBatch = DefaultSweepBatch
	}
	if c.EvictionEvery <= 0 {
		c.EvictionEvery = DefaultEvictionEvery
	}
	if c.HistoryKeep <= 0 {
		c.HistoryKeep = DefaultHistoryKeep
	}
	if c.PartitionIdle <= 0 {
		c.PartitionIdle = DefaultPartitionIdle
	}
	if c.RetentionBatch <= 0 {
		c.RetentionBatch = DefaultSweepBatch
	}
	if c.RetentionEvery <= 0 {
		c.RetentionEvery = DefaultRetentionEvery
	}
	return c
}

// sweeps holds the two services.
type sweeps struct {
	cfg       SweepConfig
	retention *service.Loop
	eviction  *service.Loop
}

func (b *Broker) newSweeps(cfg SweepConfig) *sweeps {
	sw := &sweeps{cfg: cfg.withDefaults()}
	sw.retention = service.NewLoop("retention", sw.cfg.RetentionEvery,
		service.Exclusive(b.store, "retention", b.log, b.retain))
	sw.eviction = service.NewLoop("eviction", sw.cfg.EvictionEvery,
		service.Exclusive(b.store, "eviction", b.log, b.evict))
	return sw
}

// retain runs one retention pass: expired messages, consumed messages, idle
// partitions, old history.
func (b *Broker) retain(ctx context.Context) {
	cfg := b.sweeps.cfg
	start := time.Now()
	expired, errE := b.sweep(ctx, store.RetentionExpired, cfg.RetentionBatch)
	completed, errC := b.sweep(ctx, store.RetentionCompleted, cfg.RetentionBatch)
	parts, errP := b.cleanPartitions(ctx, cfg.RetentionBatch, cfg.PartitionIdle)
	now := b.now()
	_, errH := b.store.RetentionHistoryPrune(ctx, &store.RetentionHistoryPruneParams{
		Before: now.Add(-cfg.HistoryKeep), Now: now})
	for _, err := range []error{errE, errC, errP, errH} {
		if err != nil && ctx.Err() == nil {
			b.log.Warn("retention interrupted", "err", err)
			break
		}
	}
	if expired+completed+parts > 0 {
		b.log.Info("retention", "expired", expired, "completed", completed, "partitions", parts,
			"took", time.Since(start).Round(time.Millisecond))
	}
}

// evict runs one eviction pass.
func (b *Broker) evict(ctx context.Context) {
	start := time.Now()
	n, err := b.sweep(ctx, store.RetentionEviction, b.sweeps.cfg.EvictionBatch)
	if err != nil && ctx.Err() == nil {
		b.log.Warn("eviction interrupted", "evicted", n, "err", err)
	}
	if n > 0 {
		b.log.Info("eviction", "evicted", n, "took", time.Since(start).Round(time.Millisecond))
	}
}

// sweep runs a whole sweep of kind in adaptive steps of at most batch rows
// and returns the messages it removed.
func (b *Broker) sweep(ctx context.Context, kind store.RetentionKind, batch int) (int, error) {
	total := 0
	limit := min(batch, purge.MinLimit*4)
	var from int64
	for {
		t0 := time.Now()
		r, err := b.store.RetentionSweep(ctx, &store.RetentionSweepParams{Kind: kind, From: from, Limit: limit,
			Now: b.now()})
		if err != nil {
			return total, err
		}
		took := time.Since(t0)
		total += r.Removed
		if r.Next == 0 {
			return total, nil
		}
		from = r.Next
		limit = min(purge.NextLimit(limit, r.Removed, took), batch)
		if err := pause(ctx, took); err != nil {
			return total, err
		}
	}
}

// cleanPartitions deletes empty partitions idle for longer than idle.
func (b *Broker) cleanPartitions(ctx context.Context, batch int, idle time.Duration) (int, error) {
	total := 0
	var from int64
	for {
		t0 := time.Now()
		now := b.now()
		r, err := b.store.RetentionPartitions(ctx, &store.RetentionPartitionsParams{From: from,
			IdleSince: now.Add(-idle), Limit: batch, Now: now})
		if err != nil {
			return total, err
		}
		total += r.Removed
		if r.Next == 0 {
			return total, nil
		}
		from = r.Next
		if err := pause(ctx, time.Since(t0)); err != nil {
			return total, err
		}
	}
}

// pause waits twice as long as a step took (at least a little), leaving
// the engine to pushes and pops at least two thirds of the time.
func pause(ctx context.Context, took time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(max(2*took, 2*time.Millisecond)):
		return nil
	}
}
