package postgres

import (
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
)

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

// DefaultNameCacheSize is how many entries each name → id cache holds
// when Config.NameCacheSize is 0 (QUEEN_NAME_CACHE_SIZE).
const DefaultNameCacheSize = 50000

// cache maps names to row ids so that a steady-state push needs no lookups.
// Ids are never reused, so an entry can only go stale when another broker
// deletes the queue; the push then finds the partition row missing (or the
// partition insert fails its foreign key) and retries with an empty cache.
// Pops use the cached queue id too: their claim statement finds no queue
// row for a deleted queue's id and the pop then looks the name up again.
// Queue options are never cached: another broker may reconfigure them, so
// the claim statement reads them afresh.
//
// Both maps are LRUs of a fixed number of entries (QUEEN_NAME_CACHE_SIZE),
// so that millions of partitions do not grow the broker's memory: an entry
// dropped is read again from the database when next needed. The LRUs lock
// themselves.
//
// capped holds the ids of queues last seen with a maxSize: their pushes go
// straight to the insert that checks room. It is a hint only (a cap set or
// dropped by another broker is noticed on the next push, which reads the
// options anyway), so it can forget entries like the others.
type cache struct {
	queues *lru.Cache[queueName, queueRef]
	parts  *lru.Cache[partKey, partRef]
	capped *lru.Cache[int64, struct{}]
}

func newCache(size int) *cache {
	if size <= 0 {
		size = DefaultNameCacheSize
	}
	queues, err := lru.New[queueName, queueRef](size)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	parts, err := lru.New[partKey, partRef](size)
	if err != nil {
		panic(err)
	}
	capped, err := lru.New[int64, struct{}](size)
	if err != nil {
		panic(err)
	}
	return &cache{queues: queues, parts: parts, capped: capped}
}

func (c *cache) reset() {
	c.queues.Purge()
	c.parts.Purge()
	c.capped.Purge()
}

// anyCapped says whether one of the queues was last seen with a cap.
func (c *cache) anyCapped(queueIDs []int64) bool {
	for _, id := range queueIDs {
		if c.capped.Contains(id) {
			return true
		}
	}
	return false
}

// setCapped records which of the queues have a cap now.
func (c *cache) setCapped(queueIDs, capped []int64) {
	for _, id := range queueIDs {
		if slices.Contains(capped, id) {
			c.capped.Add(id, struct{}{})
		} else {
			c.capped.Remove(id)
		}
	}
}

func (c *cache) queue(name queueName) (queueRef, bool) { return c.queues.Get(name) }

func (c *cache) partition(k partKey) (partRef, bool) { return c.parts.Get(k) }

func (c *cache) putQueue(name queueName, q queueRef) { c.queues.Add(name, q) }

func (c *cache) putPartition(k partKey, p partRef) { c.parts.Add(k, p) }

// forgetQueue drops a deleted queue and its partitions.
func (c *cache) forgetQueue(name queueName) {
	q, ok := c.queues.Peek(name)
	if !ok {
		return
	}
	c.queues.Remove(name)
	for _, k := range c.parts.Keys() {
		if k.queueID == q.id {
			c.parts.Remove(k)
		}
	}
}
