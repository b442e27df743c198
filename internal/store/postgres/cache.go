package postgres

import "sync"

// queueRef is what a push needs of a queues row.
type queueRef struct {
	id   int64
	uuid string
}

// partRef is what a push needs of a partitions row.
type partRef struct {
	id      int64
	uuid    string
	queueID int64
}

// queueName names a queue: names are unique per tenant.
type queueName struct {
	tenant, name string
}

type partKey struct {
	queueID int64
	name    string
}

// cache maps names to row ids so that a steady-state push needs no lookups.
// Ids are never reused, so an entry can only go stale when another broker
// deletes the queue; the push then finds the partition row missing (or the
// partition insert fails its foreign key) and retries with an empty cache.
// Pops use the cached queue id too: their claim statement finds no queue
// row for a deleted queue's id and the pop then looks the name up again.
// Queue options are never cached: another broker may reconfigure them, so
// the claim statement reads them afresh.
type cache struct {
	mu     sync.RWMutex
	queues map[queueName]queueRef
	parts  map[partKey]partRef
}

func newCache() *cache {
	c := &cache{}
	c.reset()
	return c
}

func (c *cache) reset() {
	c.mu.Lock()
	c.queues = make(map[queueName]queueRef)
	c.parts = make(map[partKey]partRef)
	c.mu.Unlock()
}

func (c *cache) queue(name queueName) (queueRef, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	q, ok := c.queues[name]
	return q, ok
}

func (c *cache) partition(k partKey) (partRef, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.parts[k]
	return p, ok
}

func (c *cache) putQueue(name queueName, q queueRef) {
	c.mu.Lock()
	c.queues[name] = q
	c.mu.Unlock()
}

func (c *cache) putPartition(k partKey, p partRef) {
	c.mu.Lock()
	c.parts[k] = p
	c.mu.Unlock()
}

// forgetQueue drops a deleted queue and its partitions.
func (c *cache) forgetQueue(name queueName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.queues[name]
	if !ok {
		return
	}
	delete(c.queues, name)
	for k := range c.parts {
		if k.queueID == q.id {
			delete(c.parts, k)
		}
	}
}
