// Package store defines the storage contract of the broker: the domain
// operations every engine implements (push a batch, pop from lanes, commit
// acks, extend leases, run a transaction, configure and delete queues) and the
// engine-neutral types they exchange.
//
// The contract is a set of small interfaces, one per noun (messages, lanes,
// queues, settings, transactions, the engine itself), with noun-first method
// names; Store is all of them. Consumers depend on the interfaces they use.
// Every method takes a context first and a params struct carrying Now, so
// that tests control the clock.
//
// A driver implements each operation in as few round trips as its engine
// allows; the lane rules shared by all drivers (cursor commits, clamping,
// retries, dead-lettering) live in package lane so that every engine applies
// exactly the same semantics.
package store

import (
	"context"
	"errors"
	"time"
)

// QueueMode is the consumer group name used when a client names none.
const QueueMode = "__QUEUE_MODE__"

// DefaultPartition is the partition a push lands in when it names none.
const DefaultPartition = "Default"

// DefaultTenant owns every queue while tenancy is off. Every operation that
// resolves a queue by name does so within one tenant: queue names are unique
// per tenant, and two tenants may each own a queue of the same name.
const DefaultTenant = "00000000-0000-0000-0000-000000000000"

// Sentinel errors drivers return (wrapped) so that callers can map them.
var (
	// ErrClosed is returned by operations on a store that has been closed.
	ErrClosed = errors.New("store closed")
	// ErrInvalid means the engine refused a value the request carried (a
	// byte sequence or a length it cannot store): a client error, not an
	// outage, and retrying the same request cannot succeed.
	ErrInvalid = errors.New("value refused by the database")
	// ErrNotFound means the named entity does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable means the engine cannot be reached right now.
	ErrUnavailable = errors.New("database unavailable")
)

// Store is the storage engine behind a broker: every interface below. All
// methods are safe for concurrent use.
type Store interface {
	DLQStore
	EngineStore
	EphemeralStore // ephemeral queues
	GroupStore
	KVStore // key/value state
	LaneStore
	MessageControlStore
	MessageStore
	QueueStore
	RetentionStore // retention, eviction and idle-partition sweeps
	SettingStore
	StreamStore
	TraceStore
	StatsStore
	TimerStore // timers that become messages
	TxStore
	WebhookStore // webhook ingress and delivery entities
}

// EngineStore is the engine itself: identity, health, pool, cluster-wide
// coordination and lifecycle.
type EngineStore interface {
	// Close releases the engine. It is safe to call more than once.
	Close() error
	// Engine names the engine ("sqlite", "postgres").
	Engine() string
	// JobLockTry takes the cluster-wide lock of the named background job
	// without waiting. It reports false when another broker holds it; the
	// caller runs the job only while it holds the lock and calls release
	// when done. An engine used by one broker alone always grants it.
	JobLockTry(ctx context.Context, name string) (release func(), acquired bool, err error)
	// Listen calls wake with the wake-ups announced by every other broker
	// sharing the engine (pushes, lease releases, control operations) until
	// ctx ends; a broker's own announcements are not delivered back to it,
	// since it woke its own long polls already. After the engine could not
	// be heard for a while (a reconnect), it calls wake with one Wake whose
	// Key is "": everything may have changed. An engine used by one broker
	// alone has nobody to hear from: it returns nil when ctx ends.
	Listen(ctx context.Context, wake func(ws ...Wake)) error
	// Ping reports whether the engine is reachable.
	Ping(ctx context.Context) error
	// PoolStats describes the engine's connection pool, for /metrics.
	PoolStats() PoolStats
	// TransportStats describes the engine's cross-broker wake-ups (Listen
	// and the notifications this broker sends), for the shared-state routes.
	TransportStats() TransportStats
}

// Wake says that up to Count messages of the queue named Key (QueueKey) may
// have become poppable. Count 0 means an unknown number: every long poll of
// the queue should look. Key "" means every queue.
type Wake struct {
	Count int
	Key   string
}

// QueueKey names a queue across tenants, for wake-ups: the tenant, a slash,
// the queue name.
func QueueKey(tenant, queue string) string { return tenant + "/" + queue }

// PoolStats describes a store's connection pool, for /metrics.
type PoolStats struct {
	Idle int // connections open and unused
	Size int // the most connections the pool opens
}

// TransportStats describes how an engine carries wake-ups between the
// brokers sharing it. Kind is "" for an engine used by one broker alone.
type TransportStats struct {
	Kind      string // "postgres-listen-notify"
	Channel   string // the notification channel
	Instance  string // this broker's id on the channel (new at every start)
	Listening bool   // the listener is connected now
	Sent      int64  // wake-ups this broker announced
	Received  int64  // wake-ups heard from other brokers
	Dropped   int64  // wake-ups this broker could not announce (the database failed)
	Peers     []Peer // the other brokers heard since the start, by id
}

// Peer is another broker heard on a transport.
type Peer struct {
	ID       string
	LastSeen time.Time
	Received int64 // wake-ups heard from it
}

// TenantOrDefault returns tenant, or DefaultTenant when it is "".
func TenantOrDefault(tenant string) string {
	if tenant == "" {
		return DefaultTenant
	}
	return tenant
}
