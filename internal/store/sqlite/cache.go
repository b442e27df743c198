package sqlite

import "github.com/queen-go/queen/internal/store"

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
type cache struct {
	queues     map[queueName]*queueRow
	partitions map[partitionKey]*partitionRow
	byUUID     map[string]*partitionRow
	groups     map[groupKey]int64 // subscribed_from

	// lastClaim is the claim order last written to lanes.last_claimed_at.
	// It survives reset: it only ever grows, so a rolled-back claim merely
	// skips a number.
	lastClaim int64
	// lastSeq is the last message offset handed out (seq.go). It survives
	// reset for the same reason.
	lastSeq int64
	// unconsumed counts, per partition of a queue with a maxSize, the
	// messages after a position (capacity.go).
	unconsumed map[int64]*unconsumedCount
}

// nextClaim returns a claim order greater than every earlier one: the claim
// time in microseconds, bumped past the previous claim when two fall in the
// same microsecond, so that "least recently claimed first" has no ties.
func (c *cache) nextClaim(nowMs int64) int64 {
	c.lastClaim = max(nowMs*1000, c.lastClaim+1)
	return c.lastClaim
}

func newCache() *cache {
	c := &cache{}
	c.reset()
	return c
}

func (c *cache) reset() {
	c.queues = make(map[queueName]*queueRow)
	c.partitions = make(map[partitionKey]*partitionRow)
	c.byUUID = make(map[string]*partitionRow)
	c.groups = make(map[groupKey]int64)
	c.unconsumed = make(map[int64]*unconsumedCount)
}

func (c *cache) addPartition(p *partitionRow) {
	c.partitions[partitionKey{p.queue.id, p.name}] = p
	c.byUUID[p.uuid] = p
}
