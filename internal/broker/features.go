package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// What the key/value, timer and ephemeral features (packages kv, timers,
// ephemeral) need of the broker: its wake-ups, its push preparation and its
// state. Their rules live in their own packages; the broker lends them the
// parts of the message plane they must share with it.

// Wait returns a channel closed by the next Notify of key: the wake-ups of
// long polls, for keys other than queues (an ephemeral queue's, the timer
// service's). Take it before looking at the store, so that a change between
// the look and the wait still wakes.
func (b *Broker) Wait(key string) <-chan struct{} { return b.hub.watch(key) }

// PrepareTimed prepares items to be pushed later (a timer's message) as a
// push prepares them now: defaults, minted message ids, the caller's
// subject, and the payload sealed when the queue encrypts (so that a timer
// stores no plaintext of an encrypted queue). It returns, per item, "" or
// why it cannot be pushed (an encrypted queue on a broker without a key).
func (b *Broker) PrepareTimed(ctx context.Context, c Caller, items []store.PushItem) ([]string, error) {
	prepareItems(items, c)
	out := make([]string, len(items))
	flags, err := b.sealFlags(ctx, items)
	if err != nil {
		return nil, err
	}
	refused, err := b.seal(items, flags)
	if err != nil {
		return nil, err
	}
	for i := range refused {
		if refused[i] != nil {
			out[i] = refused[i].Error
		}
	}
	return out, nil
}

// Pushed reports messages stored outside Push (a timer service's fires):
// they count in the push metrics, and consumers waiting on their queues
// wake, exactly as after a push.
func (b *Broker) Pushed(counts []store.PushedCount) {
	if len(counts) == 0 {
		return
	}
	var wakes []store.Wake
	for _, c := range counts {
		tally := b.metrics.Tally(store.TenantOrDefault(c.Tenant))
		tally.Add(c.Queue, c.Messages)
		tally.Pushed()
		wakes = addWakes(wakes, store.QueueKey(store.TenantOrDefault(c.Tenant), c.Queue), c.Messages)
	}
	b.hub.kick(wakes...)
}

// Unable reports why the broker cannot serve the key/value, timer and
// ephemeral routes right now, "" when it can: push maintenance, or a
// database the last write found unreachable.
func (b *Broker) Unable() string {
	switch {
	case b.maintenance.Load():
		return "maintenance mode"
	case b.dbDown.Load():
		return "database unavailable"
	}
	return ""
}

// Clock returns the broker's clock.
func (b *Broker) Clock() func() time.Time { return b.now }
