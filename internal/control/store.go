package control

import (
	"context"

	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Store is what the control plane needs of the storage engine: the queues,
// groups, messages, dead letters and traces it inspects and edits, and the
// figures of the status and analytics pages. store.Store implements it; a
// test fake implements only this.
type Store interface {
	store.DLQStore
	store.GroupStore
	store.MessageControlStore
	store.TraceStore
	service.JobLocker // one broker at a time frees cleared rows

	// Engine names the engine, for the status page.
	Engine() string

	PartitionList(ctx context.Context, p *store.PartitionListParams) (*store.PartitionListResult, error)
	QueueClear(ctx context.Context, p *store.QueueClearParams) (*store.QueueClearResult, error)
	QueueClearPurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error)
	QueueGet(ctx context.Context, p *store.QueueGetParams) (*store.QueueDetail, error)
	QueueList(ctx context.Context, p *store.QueueListParams) (*store.QueueListResult, error)
	QueueOverview(ctx context.Context, p *store.QueueOverviewParams) (*store.QueueOverview, error)
	QueueRollup(ctx context.Context, p *store.QueueRollupParams) (*store.QueueRollupResult, error)

	StatsEngine(ctx context.Context, p *store.StatsEngineParams) (*store.EngineStats, error)
	StatsLeases(ctx context.Context, p *store.StatsLeasesParams) (*store.LeaseSummary, error)
	StatsQueueGauges(ctx context.Context, p *store.StatsQueueGaugesParams) (*store.QueueGauges, error)
	StatsQueueSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueBucket, error)
	StatsQueueStateSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueState, error)
	StatsRetentionSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.RetentionBucket, error)
	StatsWorkerSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.WorkerMinute, error)
}

// SamplerStore is what the metrics sampler needs of the storage engine: the
// pool and queue gauges it samples, and the minutes it writes, rolls up and
// sweeps.
type SamplerStore interface {
	service.JobLocker // one broker at a time writes the cluster's figures

	StatsPool() store.PoolUsage
	StatsQueueGauges(ctx context.Context, p *store.StatsQueueGaugesParams) (*store.QueueGauges, error)
	StatsRecord(ctx context.Context, p *store.StatsRecordParams) error
	StatsRollup(ctx context.Context, p *store.StatsRollupParams) error
	StatsSweep(ctx context.Context, p *store.StatsSweepParams) (*store.StatsSweepResult, error)
}
