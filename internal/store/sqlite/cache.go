package sqlite

import (
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/queen-go/queen/internal/store"
)

// DefaultNameCacheSize is how many entries each name → id cache holds
// when Config.NameCacheSize is 0 (QUEEN_NAME_CACHE_SIZE).
const DefaultNameCacheSize = 50000

// queueRow is a cached queues row.
type queueRow struct {
	id        int64
	uuid      string
	tenant    string
	name      string
	namespace string
	task      string
	opts      store.QueueOptions
}

// partitionRow is a cached partitions row.
type partitionRow struct {
	id    int64
	uuid  string
	name  string
	queue *queueRow
}

// queueName names a queue: names are unique per tenant.
type queueName struct {
	tenant, name string
}

type partitionKey struct {
	queueID int64
	name    string
}

type groupKey struct {
	queueID int64
	group   string
}

// cache holds rows that never change behind the writer's back. It is owned by
// the writer goroutine; any rollback resets it, since the rolled-back job may
// have cached rows that no longer exist.
//
// Every map is an LRU of size entries (QUEEN_NAME_CACHE_SIZE), so that
// millions of partitions do not grow memory without bound: an entry dropped
// is read again when next needed. A partition row points at its queue's row;
// since the queue's row may be dropped and read again (a new *queueRow,
// which a reconfiguration then updates), a partition found in the cache is
// re-pointed at the queue's current row before use (queue.go).
type cache struct {
	size       int
	queues     *simplelru.LRU[queueName, *queueRow]
	partitions *simplelru.LRU[partitionKey, *partitionRow]
	byUUID     *simplelru.LRU[string, *partitionRow]
	groups     *simplelru.LRU[groupKey, int64] // subscribed_from

	// lastClaim is the claim order last written to lanes.last_claimed_at.
	// It survives reset: it only ever grows, so a rolled-back claim merely
	// skips a number.
	lastClaim int64
	// lastSeq is the last message offset handed out (seq.go). It survives
	// reset for the same reason.
	lastSeq int64
	// unconsumed counts, per partition of a queue with a maxSize, the
	// messages after a position (capacity.go).
	unconsumed *simplelru.LRU[int64, *unconsumedCount]
}

// nextClaim returns a claim order greater than every earlier one: the claim
// time in microseconds, bumped past the previous claim when two fall in the
// same microsecond, so that "least recently claimed first" has no ties.
func (c *cache) nextClaim(nowMs int64) int64 {
	c.lastClaim = max(nowMs*1000, c.lastClaim+1)
	return c.lastClaim
}

func newCache(size int) *cache {
	if size <= 0 {
		size = DefaultNameCacheSize
	}
	c := &cache{size: size}
	c.queues = newLRU[queueName, *queueRow](size)
	c.partitions = newLRU[partitionKey, *partitionRow](size)
	c.byUUID = newLRU[string, *partitionRow](size)
	c.groups = newLRU[groupKey, int64](size)
	c.unconsumed = newLRU[int64, *unconsumedCount](size)
	return c
}

func (c *cache) reset() {
	c.queues.Purge()
	c.partitions.Purge()
	c.byUUID.Purge()
	c.groups.Purge()
	c.unconsumed.Purge()
}

func (c *cache) addPartition(p *partitionRow) {
	c.partitions.Add(partitionKey{p.queue.id, p.name}, p)
	c.byUUID.Add(p.uuid, p)
}

func newLRU[K comparable, V any](size int) *simplelru.LRU[K, V] {
	l, err := simplelru.NewLRU[K, V](size, nil)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return l
}
