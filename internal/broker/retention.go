package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sweep"
)

// The retention and eviction services apply the queue options
// retentionSeconds, completedRetentionSeconds (retention) and
// maxWaitTimeSeconds (eviction), and delete partitions left empty and idle.
// Each runs its sweeps as short store steps (store.RetentionStore) driven
// by package sweep like the purge of deleted queues: each step takes a few
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
	expired, errE := sweep.Run(ctx, b.store, store.RetentionExpired, cfg.RetentionBatch, b.now)
	completed, errC := sweep.Run(ctx, b.store, store.RetentionCompleted, cfg.RetentionBatch, b.now)
	parts, errP := sweep.Partitions(ctx, b.store, cfg.PartitionIdle, cfg.RetentionBatch, b.now)
	now := b.now()
	_, errH := b.store.RetentionHistoryPrune(ctx, &store.RetentionHistoryPruneParams{
		Before: now.Add(-cfg.HistoryKeep), Now: now})
	for _, err := range []error{errE, errC, errP, errH} {
		if err != nil && ctx.Err() == nil {
			b.log.Warn("retention interrupted", "err", err)
			break
		}
	}
	if expired.Removed+completed.Removed+parts.Removed > 0 {
		b.log.Info("retention", "expired", expired.Removed, "completed", completed.Removed,
			"partitions", parts.Removed, "took", time.Since(start).Round(time.Millisecond))
	}
}

// evict runs one eviction pass.
func (b *Broker) evict(ctx context.Context) {
	start := time.Now()
	res, err := sweep.Run(ctx, b.store, store.RetentionEviction, b.sweeps.cfg.EvictionBatch, b.now)
	if err != nil && ctx.Err() == nil {
		b.log.Warn("eviction interrupted", "evicted", res.Removed, "err", err)
	}
	if res.Removed > 0 {
		b.log.Info("eviction", "evicted", res.Removed, "took", time.Since(start).Round(time.Millisecond))
	}
}
