package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/store"
)

// Encryption at rest (queue option encryptionEnabled, package crypt). The
// broker seals a payload before it reaches the store or the disk spool and
// opens it after a pop reads it; the engines store the sealed shape like any
// other payload, with the seal it carries (store.Seal) beside it. Which
// queues seal is read from the store and kept for sealFresh (a configure
// made through this broker applies at once; one made through another broker
// within sealFresh).
//
// What is opened. A pop opens a payload only by its recorded seal, never by
// its shape: a client's payload is SealNone whatever it looks like, so a
// sealed blob copied from anywhere (the messages route, a backup) and pushed
// again pops as the opaque JSON it is; on a queue that seals it is sealed
// once more, as any payload. What this broker seals binds the tenant and the
// queue (SealBound, crypt.AD), so a row copied into another queue does not
// open there either. Rows imported from Queen keep Queen's unbound seal
// (SealQueen) and open on the queue that holds them. Old keys of the
// keyring open both, so rotating the key keeps every row readable.
//
// Plaintext and the spool: a push that has to be spooled (the database is
// down, or push maintenance) is sealed first when this broker knows that its
// queue seals, whatever the age of that knowledge. Only a push to a queue
// this broker has not read since it started, made while the database cannot
// be read, is spooled as it came; it is sealed when the spool is replayed,
// before it reaches the database.
//
// A broker without a key never writes plaintext to a queue that seals: such
// items fail, configuring encryptionEnabled is refused, and pops return the
// sealed shape as stored.

// sealFresh is how long the broker trusts what it read of a queue's
// encryptionEnabled.
const sealFresh = time.Second

// sealCache remembers which queues seal their payloads, by store.QueueKey:
// an LRU of a fixed size, so that many queues do not grow memory without
// bound (a dropped entry is read again from the store).
type sealCache struct {
	m            *lru.Cache[string, sealEntry] // locks itself
	hits, misses atomic.Int64                  // lookups, for the shared-state routes
}

type sealEntry struct {
	on bool
	at time.Time
}

// defaultNameCacheSize is the size of the broker's per-queue caches when
// Config.NameCacheSize is 0.
const defaultNameCacheSize = 50000

func newSealCache(size int) *sealCache {
	if size <= 0 {
		size = defaultNameCacheSize
	}
	m, err := lru.New[string, sealEntry](size)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &sealCache{m: m}
}

func (c *sealCache) get(key string) (sealEntry, bool) {
	e, ok := c.m.Get(key)
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return e, ok
}

func (c *sealCache) put(key string, on bool, at time.Time) { c.m.Add(key, sealEntry{on: on, at: at}) }

// errNoKey is the verdict on an item of a queue that seals, pushed to a
// broker without a key.
func errNoKey(queue string) string {
	return fmt.Sprintf("queue %s encrypts its payloads (encryptionEnabled) and this broker has no "+
		"QUEEN_ENCRYPTION_KEY: not stored", queue)
}

// sealFlags reports, per store.QueueKey of items, whether the queue seals,
// reading from the store what the cache does not hold fresh.
func (b *Broker) sealFlags(ctx context.Context, items []store.PushItem) (map[string]bool, error) {
	now := time.Now()
	flags := make(map[string]bool, 1)
	var missing []queueName // not cached fresh, each once
	var keys queueKeys
	for i := range items {
		tenant := store.TenantOrDefault(items[i].Tenant)
		key := keys.of(tenant, items[i].Queue)
		if _, done := flags[key]; done {
			continue
		}
		if e, ok := b.sealing.get(key); ok && now.Sub(e.at) < sealFresh {
			flags[key] = e.on
			continue
		}
		flags[key] = false
		missing = append(missing, queueName{tenant, items[i].Queue})
	}
	for _, q := range missing {
		on, err := b.queueSeals(ctx, q.tenant, q.name)
		if err != nil {
			return nil, err
		}
		key := store.QueueKey(q.tenant, q.name)
		flags[key] = on
		b.sealing.put(key, on, now)
	}
	return flags, nil
}

// queueName is a queue of a tenant.
type queueName struct{ tenant, name string }

// queueSeals reads whether a queue seals its payloads. A queue that does not
// exist yet is created plain by the push. It asks for one partition, the
// smallest page: only the options matter here, and a miss happens at most
// once per sealFresh per queue.
func (b *Broker) queueSeals(ctx context.Context, tenant, name string) (bool, error) {
	d, err := b.store.QueueGet(ctx, &store.QueueGetParams{Name: name, Tenant: tenant, Limit: 1, Now: b.now()})
	if errors.Is(err, store.ErrQueueNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.Options.EncryptionEnabled, nil
}

// seal seals, in place, the payloads of items whose queue seals according
// to flags (binding tenant and queue, and marking them SealBound), and
// returns a failed verdict for each item it cannot seal (nil when there is
// none). An item sealed already (a spooled push sealed before it was
// spooled) is left as it is; one spooled by a build that did not record
// seals (store.SealUnknown) is resolved first (resolveUnknown).
func (b *Broker) seal(items []store.PushItem, flags map[string]bool) ([]*store.PushResult, error) {
	var refused []*store.PushResult
	on := anyOn(flags)
	var keys queueKeys
	for i := range items {
		it := &items[i]
		if it.Sealed == store.SealUnknown {
			b.resolveUnknown(it, on && flags[keys.of(store.TenantOrDefault(it.Tenant), it.Queue)])
		}
		if !on {
			continue // no queue of the batch encrypts: the usual case
		}
		if it.Sealed != store.SealNone || !flags[keys.of(store.TenantOrDefault(it.Tenant), it.Queue)] {
			continue
		}
		if b.keys == nil {
			if refused == nil {
				refused = make([]*store.PushResult, len(items))
			}
			refused[i] = &store.PushResult{Status: store.PushFailed, Error: errNoKey(it.Queue)}
			continue
		}
		p, err := b.keys.SealFor(it.Payload, crypt.AD(store.TenantOrDefault(it.Tenant), it.Queue))
		if err != nil {
			return nil, err
		}
		it.Payload, it.Sealed = p, store.SealBound
	}
	return refused, nil
}

// resolveUnknown decides the seal of an item spooled by a build that did
// not record seals, which sealed without binding before spooling for a
// queue it knew to seal: on a queue that seals, a payload our keys open
// unbound is such a seal (SealQueen, opened on this queue only); anything
// else is the client's payload (SealNone), sealed now if the queue seals.
func (b *Broker) resolveUnknown(it *store.PushItem, queueSeals bool) {
	it.Sealed = store.SealNone
	if queueSeals && b.keys != nil && crypt.Sealed(it.Payload) {
		if _, ok := b.keys.Open(it.Payload); ok {
			it.Sealed = store.SealQueen
		}
	}
}

func anyOn(flags map[string]bool) bool {
	for _, on := range flags {
		if on {
			return true
		}
	}
	return false
}

// storePush seals the items that need it and stores them: the broker's one
// way into MessagePushMany (pushes and spool replay). Items it cannot seal
// are answered failed without reaching the store.
func (b *Broker) storePush(ctx context.Context, items []store.PushItem) ([]store.PushResult, error) {
	flags, err := b.sealFlags(ctx, items)
	if err != nil {
		return nil, err
	}
	refused, err := b.seal(items, flags)
	if err != nil {
		return nil, err
	}
	if refused == nil {
		return b.store.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: b.now()})
	}
	send := make([]store.PushItem, 0, len(items))
	for i := range items {
		if refused[i] == nil {
			send = append(send, items[i])
		}
	}
	var res []store.PushResult
	if len(send) > 0 {
		if res, err = b.store.MessagePushMany(ctx, &store.MessagePushManyParams{Items: send, Now: b.now()}); err != nil {
			return nil, err
		}
	}
	out := make([]store.PushResult, len(items))
	for i := range items {
		if refused[i] != nil {
			out[i] = *refused[i]
			continue
		}
		out[i], res = res[0], res[1:]
	}
	return out, nil
}

// sealKnown seals, before they are spooled, the payloads of items whose
// queue this broker knows to seal, however old that knowledge; without a
// database it cannot learn more (see the top of this file).
func (b *Broker) sealKnown(items []store.PushItem) {
	if b.keys == nil {
		return
	}
	flags := make(map[string]bool)
	for i := range items {
		key := store.QueueKey(store.TenantOrDefault(items[i].Tenant), items[i].Queue)
		if e, ok := b.sealing.get(key); ok {
			flags[key] = e.on
		}
	}
	_, _ = b.seal(items, flags) // a failed seal leaves the item for the replay to seal
}

// sealTx seals the pushed items of a transaction; it returns the abort
// reason when one of them cannot be sealed.
func (b *Broker) sealTx(ctx context.Context, ops []store.TxOp) (string, error) {
	for _, op := range ops {
		if len(op.Items) == 0 {
			continue
		}
		flags, err := b.sealFlags(ctx, op.Items)
		if err != nil {
			return "", err
		}
		refused, err := b.seal(op.Items, flags)
		if err != nil {
			return "", err
		}
		for i, r := range refused {
			if r != nil {
				return fmt.Sprintf("push of transactionId %s: %s", op.Items[i].TransactionID, r.Error), nil
			}
		}
	}
	return "", nil
}

// openPayloads replaces the payloads of popped messages of tenant that the
// broker sealed (by their recorded seal, never their shape) by what they
// seal: a bound seal with the tenant and the message's queue, Queen's with
// nothing. A payload no key opens is left as stored, and so is every
// client payload.
func (b *Broker) openPayloads(tenant string, msgs []store.Message) {
	if b.keys == nil {
		return
	}
	tenant = store.TenantOrDefault(tenant)
	var ad []byte
	var adQueue string
	for i := range msgs {
		m := &msgs[i]
		var p []byte
		var ok bool
		switch m.Sealed {
		case store.SealBound:
			if ad == nil || m.Queue != adQueue {
				ad, adQueue = crypt.AD(tenant, m.Queue), m.Queue
			}
			p, ok = b.keys.OpenFor(m.Payload, ad)
		case store.SealQueen:
			p, ok = b.keys.Open(m.Payload)
		default:
			continue
		}
		if ok {
			m.Payload = p
		}
	}
}

// checkSealing refuses to configure encryptionEnabled on a broker that has
// no key: the queue's payloads would otherwise be stored in plaintext.
func (b *Broker) checkSealing(opts store.QueueOptions) error {
	if opts.EncryptionEnabled && b.keys == nil {
		return invalidf("encryptionEnabled needs an encryption key: this broker has no QUEEN_ENCRYPTION_KEY " +
			"(64 hex characters), and it never stores the payloads of such a queue in plaintext")
	}
	return nil
}
