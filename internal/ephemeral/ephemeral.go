// Package ephemeral holds the rules of ephemeral queues: short-lived
// channels of one tenant (request/reply, notifications) with a TTL renewed
// by keepalive, a bound on their depth and at-most-once delivery (a pop
// deletes what it returns). It mints names, applies the limits, runs the
// long poll of pops on the broker's wake-ups, and sweeps expired queues.
package ephemeral

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Defaults and bounds of Config and requests.
const (
	DefaultMaxMessages = 1000
	DefaultSweepEvery  = 10 * time.Second
	DefaultTTL         = 300 * time.Second
	MaxBatch           = 1000
	MaxMaxMessages     = 100000
	MaxNameBytes       = 255
	MaxTTL             = 86400 * time.Second
	sweepBatch         = 100
)

// Config configures ephemeral queues. Zero fields take the defaults.
type Config struct {
	// Disabled turns the feature off (QUEEN_EPHEMERAL_ENABLED=false): its
	// routes answer 403.
	Disabled bool
	// Logger receives the sweeper's logs; nil discards them.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// SweepEvery is how often expired queues are deleted.
	SweepEvery time.Duration
}

// Broker is what ephemeral queues need of the message plane: its wake-ups.
type Broker interface {
	Notify(keys ...string)
	Stopping() bool
	Wait(key string) <-chan struct{}
}

// invalidf is a request the rules refuse (HTTP 400).
func invalidf(format string, args ...any) error {
	return api.ErrBadRequest.Withf(format, args...)
}

// Ephemeral serves ephemeral queues.
type Ephemeral struct {
	broker  Broker
	cfg     Config
	log     *slog.Logger
	store   Store
	sweeper *service.Loop
}

// New returns the ephemeral-queue feature over st.
func New(st Store, b Broker, cfg Config) *Ephemeral {
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = DefaultSweepEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Ephemeral{broker: b, cfg: cfg, log: log.With("component", "ephemeral"), store: st}
	e.sweeper = service.NewLoop("ephemeral-sweep", cfg.SweepEvery, service.Exclusive(st, "ephemeral-sweep", e.log, e.sweep))
	return e
}

// Enabled reports whether the feature is on.
func (e *Ephemeral) Enabled() bool { return !e.cfg.Disabled }

// Services returns the sweeper of expired queues.
func (e *Ephemeral) Services() []service.Service { return []service.Service{e.sweeper} }

// CheckName checks a queue name: 1 to MaxNameBytes bytes of letters,
// digits, '-', '_', '.' and ':'.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameBytes {
		return invalidf("queue name must be 1 to %d characters", MaxNameBytes)
	}
	for _, r := range name {
		ok := r == '-' || r == '_' || r == '.' || r == ':' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') ||
			(r >= 'A' && r <= 'Z')
		if !ok {
			return invalidf("queue name %q: only letters, digits, '-', '_', '.' and ':' are allowed", name)
		}
	}
	return nil
}

// CheckCreate applies the rules of Create: a name ("" is minted), ttl (0:
// DefaultTTL) and maxMessages (0: DefaultMaxMessages) in range.
func CheckCreate(name string, ttl time.Duration, maxMessages int) error {
	if name != "" {
		if err := CheckName(name); err != nil {
			return err
		}
	}
	if ttl != 0 && (ttl < time.Second || ttl > MaxTTL) {
		return invalidf("ttlSeconds must be between 1 and %d", int(MaxTTL.Seconds()))
	}
	if maxMessages != 0 && (maxMessages < 1 || maxMessages > MaxMaxMessages) {
		return invalidf("maxMessages must be between 1 and %d", MaxMaxMessages)
	}
	return nil
}

// Create creates a queue of the tenant; name "" mints eph-<uuidv7>, ttl 0
// means DefaultTTL, maxMessages 0 DefaultMaxMessages.
func (e *Ephemeral) Create(ctx context.Context, tenant, name string, ttl time.Duration, maxMessages int) (*store.EphemeralQueue, error) {
	if err := CheckCreate(name, ttl, maxMessages); err != nil {
		return nil, err
	}
	if name == "" {
		name = "eph-" + uuid.Must(uuid.NewV7()).String()
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if maxMessages == 0 {
		maxMessages = DefaultMaxMessages
	}
	return e.store.EphemeralCreate(ctx, &store.EphemeralCreateParams{Tenant: tenant, Name: name, TTL: ttl,
		MaxMessages: maxMessages, Now: e.cfg.Now()})
}

// List returns a page of the tenant's live queues.
func (e *Ephemeral) List(ctx context.Context, tenant string, limit, offset int) (*store.EphemeralListResult, error) {
	return e.store.EphemeralList(ctx, &store.EphemeralListParams{Tenant: tenant, Limit: limit, Offset: offset, Now: e.cfg.Now()})
}

// Item is one message to push.
type Item struct {
	Payload []byte
	Queue   string
}

// Pushed is the verdict on one item: its id, or Error.
type Pushed struct {
	Error     string
	MessageID string
}

// Push stores messages; an item whose queue is unknown, expired or full is
// refused, the others stored. Pops waiting on the queues wake.
func (e *Ephemeral) Push(ctx context.Context, tenant string, items []Item) ([]Pushed, error) {
	in := make([]store.EphemeralItem, len(items))
	for i, it := range items {
		if err := CheckName(it.Queue); err != nil {
			return nil, invalidf("items[%d]: %v", i, err)
		}
		in[i] = store.EphemeralItem{ID: uuid.Must(uuid.NewV7()).String(), Queue: it.Queue, Payload: it.Payload}
	}
	res, err := e.store.EphemeralPush(ctx, &store.EphemeralPushParams{Tenant: tenant, Items: in, Now: e.cfg.Now()})
	if err != nil {
		return nil, err
	}
	out := make([]Pushed, len(res))
	var keys []string
	for i, r := range res {
		out[i] = Pushed{Error: r.Error}
		if r.Error == "" {
			out[i].MessageID = in[i].ID
			keys = append(keys, store.EphemeralKey(tenant, in[i].Queue))
		}
	}
	if len(keys) > 0 {
		e.broker.Notify(keys...)
	}
	return out, nil
}

// Pop deletes and returns up to batch messages of a live queue. With wait
// it waits up to timeout for the first (a push on any broker wakes it);
// it returns empty at the deadline, when ctx ends or when the broker stops.
// A waiting pop looks at the store only when woken: a push announces itself
// to every broker (on PostgreSQL after its commit), and a broker whose
// listener lost its connection wakes every waiter once it is back.
func (e *Ephemeral) Pop(ctx context.Context, tenant, name string, batch int, wait bool, timeout time.Duration) ([]store.EphemeralMessage, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	key := store.EphemeralKey(tenant, name)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		woken := e.broker.Wait(key)
		msgs, err := e.store.EphemeralPop(ctx, &store.EphemeralPopParams{Tenant: tenant, Name: name, Limit: batch, Now: e.cfg.Now()})
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				// The failed pop may have held rows that a concurrent
				// pop skipped and then parked on: they are there to
				// take again.
				e.broker.Notify(key)
			}
			return nil, err
		}
		if len(msgs) > 0 || !wait || e.broker.Stopping() {
			return msgs, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-woken:
		}
	}
}

// Keepalive moves a live queue's expiry to now plus its TTL.
func (e *Ephemeral) Keepalive(ctx context.Context, tenant, name string) (*store.EphemeralQueue, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return e.store.EphemeralKeepalive(ctx, &store.EphemeralKeepaliveParams{Tenant: tenant, Name: name, Now: e.cfg.Now()})
}

// Delete deletes a queue and its messages; false when there was none.
func (e *Ephemeral) Delete(ctx context.Context, tenant, name string) (bool, error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	return e.store.EphemeralDelete(ctx, &store.EphemeralDeleteParams{Tenant: tenant, Name: name, Now: e.cfg.Now()})
}

// sweep deletes expired queues in bounded steps.
func (e *Ephemeral) sweep(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := e.store.EphemeralSweep(ctx, &store.EphemeralSweepParams{Limit: sweepBatch, Now: e.cfg.Now()})
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("ephemeral sweep interrupted", "err", err)
			}
			return
		}
		if n < sweepBatch {
			return
		}
	}
}
