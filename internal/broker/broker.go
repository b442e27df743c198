// Package broker holds the semantics of Queen's message plane: validation
// and defaults, id minting, in-request deduplication, status normalisation,
// long polling and the wake-ups that drive it. It knows neither HTTP nor SQL:
// storage is reached through the methods of Store it declares, whose drivers
// apply the lane rules atomically.
package broker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Caller is who a request acts for. The HTTP layer fills it from the
// request (the auth layer, once enabled, from the token); the zero Caller is
// the default tenant without an authenticated subject.
type Caller struct {
	// Subject is the authenticated subject (a JWT's sub), stamped on pushed
	// messages as producerSub; "" without authentication.
	Subject string
	// Tenant owns every queue the request names; "" means
	// store.DefaultTenant.
	Tenant string
}

// tenant returns the caller's tenant, the default one when unset.
func (c Caller) tenant() string {
	if c.Tenant == "" {
		return store.DefaultTenant
	}
	return c.Tenant
}

// Config tunes a Broker. Zero values take the defaults noted per field.
type Config struct {
	// Logger receives the broker's logs; nil discards them.
	Logger *slog.Logger
	// Metrics is updated by every operation; nil creates a private set.
	Metrics *metrics.Metrics
	// PollFallback is how often a namespace/task long poll looks at the
	// store without a wake-up (it cannot learn its queues' deadlines), and
	// the longest pause of a poll retrying a lane another transaction held.
	// Default 1s.
	PollFallback time.Duration
	// PollSafety is how often a parked long poll of one queue looks at the
	// store without a wake-up or a known deadline. Every change that makes
	// a queue poppable is announced (pushes, released leases, control
	// operations and reconfigurations, on every broker) or has a deadline
	// the poll learns, so this is only a safety net for a wake-up lost in
	// a way nobody noticed. Default 5 minutes: long polls are usually
	// answered by their timeout (30 s by default) long before.
	PollSafety time.Duration
	// NameCacheSize is how many queues the broker's own per-queue cache
	// (which queues seal their payloads) holds (QUEEN_NAME_CACHE_SIZE);
	// 0 means 50,000.
	NameCacheSize int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// RecoverEvery is how often the recovery service checks a down store
	// and the spool. Default 100ms (Queen's FILE_BUFFER_FLUSH_MS).
	RecoverEvery time.Duration
	// Spool receives pushes the store cannot take; nil disables spooling,
	// and a failed store write then fails the push.
	Spool Spooler

	// Encryption seals the payloads of queues with encryptionEnabled
	// (QUEEN_ENCRYPTION_KEY); nil refuses to configure such queues and to
	// push to them (encrypt.go).
	Encryption *crypt.Keyring
	// Sweeps configures the retention and eviction services
	// (retention.go).
	Sweeps SweepConfig
}

// Broker implements push, pop, ack, lease, transaction and queue
// configuration over a store.
type Broker struct {
	store      Store
	log        *slog.Logger
	metrics    *metrics.Metrics
	hub        *hub
	fallback   time.Duration
	safetyPoll time.Duration
	now        func() time.Time

	stopOnce sync.Once
	stopping chan struct{}

	spool          Spooler
	recoverEvery   time.Duration
	recovery       *service.Loop // replays the spool once the store is back
	settings       *service.Loop // adopts maintenance modes set by other brokers
	purge          *service.Loop // frees the space of deleted queues
	dbDown         atomic.Bool   // a store write failed; cleared by a good ping
	spoolBroken    atomic.Bool   // the last spool write failed
	spoolFull      atomic.Bool   // the last spool write was refused for the cap
	maintenance    atomic.Bool   // push maintenance: pushes go to the spool
	popMaintenance atomic.Bool   // pop maintenance: pops answer empty
	// settingsGen counts the modes this broker set, under settingsMu, so
	// that a refresh never applies a value read before one (refreshSettings).
	settingsMu  sync.Mutex
	settingsGen uint64

	// Queue options the broker applies itself.
	keys    *crypt.Keyring // nil without QUEEN_ENCRYPTION_KEY (encrypt.go)
	sealing *sealCache     // which queues seal their payloads (encrypt.go)
	sweeps  *sweeps        // retention and eviction services (retention.go)
}

// New returns a broker over st.
func New(st Store, cfg Config) *Broker {
	b := &Broker{
		store:      st,
		log:        cfg.Logger,
		metrics:    cfg.Metrics,
		fallback:   cfg.PollFallback,
		safetyPoll: cfg.PollSafety,
		now:        cfg.Now,
		stopping:   make(chan struct{}),
		spool:      cfg.Spool,
	}
	b.recoverEvery = cfg.RecoverEvery
	if b.recoverEvery <= 0 {
		b.recoverEvery = 100 * time.Millisecond
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.log = b.log.With("component", "broker")
	b.recovery = service.NewLoop("spool-replay", b.recoverEvery, b.recoverOnce)
	b.settings = service.NewLoop("settings-sync", settingsEvery, b.refreshSettings)
	b.purge = service.NewLoop("queue-purge", purgeEvery,
		service.Exclusive(st, "queue-purge", b.log, b.purgeDeleted))
	b.sweeps = b.newSweeps(cfg.Sweeps)
	b.keys, b.sealing = cfg.Encryption, newSealCache(cfg.NameCacheSize)
	if b.metrics == nil {
		b.metrics = metrics.New(prometheus.NewRegistry())
	}
	if b.fallback <= 0 {
		b.fallback = time.Second
	}
	if b.safetyPoll <= 0 {
		b.safetyPoll = 5 * time.Minute
	}
	if b.now == nil {
		b.now = time.Now
	}
	b.hub = newHub(nil, b.now) // wake-ups are counted by the woken polls (pop.go)
	return b
}

// Services returns the broker's background work, to be started (in this
// order) and stopped by the caller's supervisor: adopting maintenance modes
// set by other brokers, replaying the spool once the store is back,
// freeing the space of deleted queues, retention and eviction.
func (b *Broker) Services() []service.Service {
	return []service.Service{b.settings, b.recovery, b.purge, b.sweeps.retention, b.sweeps.eviction}
}

// Stop makes every waiting and future long-poll pop return empty at once. It
// is the first step of a graceful shutdown; other operations keep working.
func (b *Broker) Stop() {
	b.stopOnce.Do(func() {
		close(b.stopping)
		b.hub.notifyAll()
	})
}

// Stopping reports whether Stop was called: the broker is shutting down.
func (b *Broker) Stopping() bool {
	select {
	case <-b.stopping:
		return true
	default:
		return false
	}
}

// Engine names the storage engine.
func (b *Broker) Engine() string { return b.store.Engine() }

// PoolStats reports the store's connection pool.
func (b *Broker) PoolStats() store.PoolStats { return b.store.PoolStats() }

// Health reports whether the store is reachable.
func (b *Broker) Health(ctx context.Context) error { return b.store.Ping(ctx) }

// Notify wakes every long poll waiting on the named queues (store.QueueKey):
// the control plane calls it after an operation that may make messages
// poppable again (a seek, a retried dead letter).
func (b *Broker) Notify(queues ...string) { b.hub.kickAll(queues...) }

// Wake wakes long polls for the wake-ups another broker announced
// (store.EngineStore.Listen): as many polls per consumer group as messages
// arrived.
func (b *Broker) Wake(ws ...store.Wake) { b.hub.kick(ws...) }

func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// invalidf is a request the broker refuses because of its content (HTTP
// 400).
func invalidf(format string, args ...any) error {
	return api.ErrBadRequest.Withf(format, args...)
}
