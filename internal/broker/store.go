package broker

import (
	"context"

	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/purge"
	"github.com/queen-go/queen/internal/store/sweep"
)

// Store is what the message plane needs of the storage engine: the lanes
// and messages it pops, pushes and acks, transactions, the queue options it
// seals by (QueueGet), the settings it syncs, and the steps of its
// background sweeps.
// store.Store implements it; a test fake implements only this.
type Store interface {
	store.LaneStore    // pop, next ready, lease extension
	store.MessageStore // push, ack
	store.SettingStore // the settings every broker syncs
	store.TxStore      // transactions
	purge.Purger       // frees the rows of deleted queues
	sweep.Sweeper      // retention, eviction and idle-partition steps
	service.JobLocker  // one broker at a time runs each sweep

	// Engine names the engine, for logs and /health.
	Engine() string
	// Ping reports whether the engine is reachable.
	Ping(ctx context.Context) error
	// PoolStats describes the engine's connection pool, for /metrics.
	PoolStats() store.PoolStats
	// TransportStats describes the engine's cross-broker wake-ups, for the
	// shared-state routes.
	TransportStats() store.TransportStats
	// QueueConfigure creates or reconfigures a queue.
	QueueConfigure(ctx context.Context, p *store.QueueConfigureParams) (*store.Queue, error)
	// QueueGet describes a queue: the broker reads which queues seal their
	// payloads from its options.
	QueueGet(ctx context.Context, p *store.QueueGetParams) (*store.QueueDetail, error)
	// QueueDelete deletes a queue.
	QueueDelete(ctx context.Context, p *store.QueueDeleteParams) (bool, error)
	// RetentionHistoryPrune drops sweep history past its retention.
	RetentionHistoryPrune(ctx context.Context, p *store.RetentionHistoryPruneParams) (int, error)
}
