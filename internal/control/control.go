// Package control is the broker's control plane: listing and inspecting
// queues, partitions, consumer groups, messages, the dead-letter queue and
// traces, and repairing them (seek, retry, move to the DLQ, clear, delete).
// It knows neither HTTP nor SQL: it reaches the store through the small
// interfaces it declares, and every operation is scoped to a tenant.
//
// The message plane (push, pop, ack, leases, transactions) is package
// broker's; what the control plane changes that consumers must notice (a
// seek backwards, a retried message) wakes their long polls through Wake.
package control

import (
	"log/slog"
	"time"

	"github.com/queen-go/queen/internal/service"
)

// Config configures a Control.
type Config struct {
	// Logger receives the control plane's logs; nil discards them.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Wake wakes long polls waiting on the given queues (store.QueueKey);
	// nil wakes nobody.
	Wake func(keys ...string)
}

// Control serves the control plane over a store.
type Control struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
	wake  func(keys ...string)

	clearPurge *service.Loop // frees the rows of cleared messages
}

// New returns the control plane over st.
func New(st Store, cfg Config) *Control {
	c := &Control{store: st, log: cfg.Logger, now: cfg.Now, wake: cfg.Wake}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("component", "control")
	if c.now == nil {
		c.now = time.Now
	}
	if c.wake == nil {
		c.wake = func(...string) {}
	}
	c.clearPurge = service.NewLoop("clear-purge", clearPurgeEvery,
		service.Exclusive(st, "clear-purge", c.log, c.purgeCleared))
	return c
}

// Services returns the control plane's background work, to be started and
// stopped by the caller's supervisor: freeing the rows of cleared messages.
func (c *Control) Services() []service.Service { return []service.Service{c.clearPurge} }

// Engine names the storage engine.
func (c *Control) Engine() string { return c.store.Engine() }
