// Package streams serves Queen's stateful stream processing: a client
// registers a query (a name, a source and a sink queue, the hash of its
// operator chain), pops the source itself, and commits each batch as one
// cycle: state upserts and deletes, the messages it emits, and the ack of
// what it consumed, in one transaction of the store, serialised per (query,
// partition). Queen's Go and JS stream SDKs drive it through three routes;
// the control plane lists queries with the size of their state and deletes
// them.
//
// It is a plane of its own, beside the message plane (package broker) and
// the control plane (package control): its ack rules differ from the
// message plane's (a failed cycle input is dead-lettered at once, a
// replayed cycle writes nothing, a partial ack may keep or release the
// lease), and it owns a background service (freeing dropped state). Like
// them it knows neither HTTP nor SQL: it reaches the store through
// Store, the part of it this package declares, and every operation is scoped to a tenant.
package streams

import (
	"context"
	"log/slog"
	"time"

	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/purge"
)

// purgeEvery catches dropped state left unfreed by a previous process or
// by another broker that stopped; a deletion or a reset kicks the purge at
// once.
const purgeEvery = time.Minute

// Config configures a Streams.
type Config struct {
	// Logger receives the service's logs; nil discards them.
	Logger *slog.Logger
	// Metrics counts the messages cycles push and the acks they commit; nil
	// counts nothing.
	Metrics *metrics.Metrics
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Seal seals, in place, the payloads of the items a cycle pushes to
	// queues that encrypt them, as the broker does for a push
	// (broker.SealItems); it returns why an item cannot be sealed, or "".
	// nil seals nothing.
	Seal func(ctx context.Context, items []store.PushItem) (reason string, err error)
	// Wake wakes long polls waiting on the given queues (store.QueueKey):
	// the sink queues a cycle pushed to, the source queue whose lease a
	// cycle released. nil wakes nobody.
	Wake func(keys ...string)
}

// Streams serves stream queries over a store.
type Streams struct {
	store   Store
	log     *slog.Logger
	metrics *metrics.Metrics // nil: none
	now     func() time.Time
	seal    func(ctx context.Context, items []store.PushItem) (string, error) // nil: none
	wake    func(keys ...string)

	purge *service.Loop // frees dropped state
}

// New returns the stream service over st.
func New(st Store, cfg Config) *Streams {
	s := &Streams{store: st, log: cfg.Logger, metrics: cfg.Metrics, now: cfg.Now, seal: cfg.Seal, wake: cfg.Wake}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "streams")
	if s.now == nil {
		s.now = time.Now
	}
	if s.wake == nil {
		s.wake = func(...string) {}
	}
	s.purge = service.NewLoop("streams-purge", purgeEvery,
		service.Exclusive(st, "streams-purge", s.log, s.purgeDropped))
	return s
}

// Services returns the background work to be started and stopped by the
// caller's supervisor: freeing the state of deleted and reset queries and
// of deleted queues' partitions.
func (s *Streams) Services() []service.Service { return []service.Service{s.purge} }

// purgeDropped frees dropped state until none is left or ctx ends, one
// broker at a time (the service runs it under the cluster-wide job lock),
// in the paced steps of package purge.
func (s *Streams) purgeDropped(ctx context.Context) {
	start := time.Now()
	res, err := purge.Run(ctx, purger{s.store}, s.now)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("freeing dropped stream state interrupted", "rows", res.Rows, "err", err)
	case res.Rows > 0:
		s.log.Info("dropped stream state freed", "rows", res.Rows, "steps", res.Steps,
			"took", time.Since(start).Round(time.Millisecond))
	}
}

// purger adapts StreamPurge to package purge.
type purger struct{ store Store }

func (p purger) QueuePurge(ctx context.Context, params *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	return p.store.StreamPurge(ctx, &store.StreamPurgeParams{Limit: params.Limit, Now: params.Now})
}

// WaitPurged frees dropped state until none is left; tests use it to see
// the effect of a deletion without waiting on the background service.
func (s *Streams) WaitPurged(ctx context.Context) error {
	_, err := purge.Run(ctx, purger{s.store}, s.now)
	return err
}
