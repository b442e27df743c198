package metrics

import (
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Per-queue counters. The broker counts every push, pop and ack here, on
// the hot path, so counting must never make two requests wait for each
// other: each queue's counters are atomics in an entry found through a
// sync.Map (a lock-free read once the queue has been seen), and a request
// adds to them once per queue it touched, not once per message. The metrics
// sampler drains them (swapping each to zero) every sample interval and
// writes a row per queue and minute; nothing here touches the store.

// QueueKey names a queue across tenants.
type QueueKey struct {
	Tenant string // "" for counts no queue can be named for
	Queue  string
}

// queueCounters are one queue's counters since the last drain, and its
// parked long polls now.
type queueCounters struct {
	ackFailed, ackRequests, ackSuccess, dlq  atomic.Int64
	lagCount, lagMaxMs, lagSumMs             atomic.Int64
	popEmpty, popMessages, popRequests       atomic.Int64
	pushMessages, pushRequests, transactions atomic.Int64
	parked                                   atomic.Int64 // a gauge, never drained
	idleDrains                               int          // drains that found nothing; owned by the drainer
	_                                        [24]byte     // keep hot entries on their own cache lines
}

// unattributed holds the counts of requests that name no single queue (a
// namespace pop that found nothing, an unresolvable ack).
var unattributed = QueueKey{}

// queue returns the counters of (tenant, queue), creating them.
func (m *Metrics) queue(tenant, queue string) *queueCounters {
	k := QueueKey{Tenant: tenant, Queue: queue}
	if queue == "" {
		k = unattributed
	}
	if c, ok := m.queues.Load(k); ok {
		return c.(*queueCounters)
	}
	c, _ := m.queues.LoadOrStore(k, &queueCounters{})
	return c.(*queueCounters)
}

// Tally gathers one request's stored messages per queue, so that the
// shared counters are touched once per queue at the end. The zero value
// is not usable: get one from Metrics.Tally.
type Tally struct {
	m      *Metrics
	tenant string
	first  [4]tallyEntry // batches name one queue or a few: no allocation
	n      int
	more   []tallyEntry
}

type tallyEntry struct {
	queue    string
	messages int64
}

// Tally returns a tally of the tenant's queues.
func (m *Metrics) Tally(tenant string) Tally { return Tally{m: m, tenant: tenant} }

// Add counts n messages stored in queue.
func (t *Tally) Add(queue string, n int) {
	for i := range t.n {
		if t.first[i].queue == queue {
			t.first[i].messages += int64(n)
			return
		}
	}
	if t.n < len(t.first) {
		t.first[t.n] = tallyEntry{queue, int64(n)}
		t.n++
		return
	}
	for i := range t.more {
		if t.more[i].queue == queue {
			t.more[i].messages += int64(n)
			return
		}
	}
	t.more = append(t.more, tallyEntry{queue, int64(n)})
}

// each calls fn for every queue of the tally.
func (t *Tally) each(fn func(e tallyEntry)) {
	for i := range t.n {
		fn(t.first[i])
	}
	for _, e := range t.more {
		fn(e)
	}
}

// Pushed records a push request: one request and its stored messages per
// queue, and the messages in the broker's totals.
func (t *Tally) Pushed() {
	var total int64
	t.each(func(e tallyEntry) {
		c := t.m.queue(t.tenant, e.queue)
		c.pushRequests.Add(1)
		c.pushMessages.Add(e.messages)
		total += e.messages
	})
	t.m.Pushed(int(total))
}

// Committed records a committed transaction: its pushed messages as a push
// request per queue, and one transaction per queue it pushed to.
func (t *Tally) Committed() {
	var total int64
	t.each(func(e tallyEntry) {
		c := t.m.queue(t.tenant, e.queue)
		c.transactions.Add(1)
		if e.messages > 0 {
			c.pushRequests.Add(1)
			c.pushMessages.Add(e.messages)
			total += e.messages
		}
	})
	t.m.Pushed(int(total))
	t.m.txCommitted.Inc()
}

// Popped records a pop that delivered msgs (of one queue, or of several
// for a namespace pop) at now: a request per queue, its messages, and how
// long each waited since it was pushed.
func (m *Metrics) Popped(tenant string, msgs []store.Message, now time.Time) {
	m.MessagesPopped.Add(float64(len(msgs)))
	for i := 0; i < len(msgs); {
		q := msgs[i].Queue
		var n, sum, most int64
		for ; i < len(msgs) && msgs[i].Queue == q; i++ {
			lag := max(now.Sub(msgs[i].CreatedAt).Milliseconds(), 0)
			n++
			sum += lag
			most = max(most, lag)
		}
		c := m.queue(tenant, q)
		c.popRequests.Add(1)
		c.popMessages.Add(n)
		c.lagCount.Add(n)
		c.lagSumMs.Add(sum)
		for {
			old := c.lagMaxMs.Load()
			if most <= old || c.lagMaxMs.CompareAndSwap(old, most) {
				break
			}
		}
	}
}

// PopEmpty records a pop of queue ("" for a namespace or task pop) that
// returned nothing.
func (m *Metrics) PopEmpty(tenant, queue string) {
	c := m.queue(tenant, queue)
	c.popRequests.Add(1)
	c.popEmpty.Add(1)
}

// Parked records a long poll starting (delta 1) or ending (-1) its wait on
// queue ("" for a namespace or task pop).
func (m *Metrics) Parked(tenant, queue string, delta int) {
	m.PopWaiting.Add(float64(delta))
	m.parked.Add(int64(delta))
	m.queue(tenant, queue).parked.Add(int64(delta))
}

// Acked records the verdicts of one ack request: per queue one request and
// its successes, failures and dead letters (an unresolvable ack names no
// queue), and the broker's totals by result. Shared counters are touched
// once per queue and result, not once per ack.
func (m *Metrics) Acked(tenant string, res []store.AckResult) {
	var dlq, ok, failed int64 // totals
	for i := 0; i < len(res); {
		q := res[i].Queue
		var qDLQ, qOK, qFailed int64
		for ; i < len(res) && res[i].Queue == q; i++ {
			switch r := &res[i]; {
			case r.DLQ:
				qDLQ++
			case r.Success:
				qOK++
			default:
				qFailed++
			}
		}
		c := m.queue(tenant, q)
		c.ackRequests.Add(1) // acks of one queue arrive together: a repeat is rare and harmless
		c.ackSuccess.Add(qOK + qDLQ)
		add(&c.ackFailed, qFailed)
		add(&c.dlq, qDLQ)
		dlq, ok, failed = dlq+qDLQ, ok+qOK, failed+qFailed
	}
	addCounter(m.ackDLQ, dlq)
	addCounter(m.ackSuccess, ok)
	addCounter(m.ackFailed, failed)
}

// add adds n to c unless it is 0, sparing the shared cache line.
func add(c *atomic.Int64, n int64) {
	if n != 0 {
		c.Add(n)
	}
}

// addCounter adds n to c unless it is 0.
func addCounter(c interface{ Add(float64) }, n int64) {
	if n != 0 {
		c.Add(float64(n))
	}
}

// drainIdleLimit is how many drains a queue's entry may stay idle (nothing
// counted, nothing parked) before it is dropped, so that deleted and
// forgotten queues do not accumulate. A count racing the drop of its entry
// may be lost; after this long idle that is one request.
const drainIdleLimit = 3600

// DrainQueues calls fn with every queue's counters since the last drain
// (zeroing them) and its parked long polls now, for queues that counted
// something or have polls parked. The unattributed counts come with the
// zero QueueKey. One drainer at a time.
func (m *Metrics) DrainQueues(fn func(k QueueKey, ops store.QueueOps, parked int64)) {
	m.queues.Range(func(key, value any) bool {
		c := value.(*queueCounters)
		ops := store.QueueOps{
			AckFailed: c.ackFailed.Swap(0), AckRequests: c.ackRequests.Swap(0), AckSuccess: c.ackSuccess.Swap(0),
			DLQ: c.dlq.Swap(0), LagCount: c.lagCount.Swap(0), LagMaxMs: c.lagMaxMs.Swap(0),
			LagSumMs: c.lagSumMs.Swap(0), PopEmpty: c.popEmpty.Swap(0), PopMessages: c.popMessages.Swap(0),
			PopRequests: c.popRequests.Swap(0), PushMessages: c.pushMessages.Swap(0),
			PushRequests: c.pushRequests.Swap(0), Transactions: c.transactions.Swap(0),
		}
		parked := c.parked.Load()
		if ops.IsZero() && parked == 0 {
			if c.idleDrains++; c.idleDrains > drainIdleLimit {
				m.queues.Delete(key)
			}
			return true
		}
		c.idleDrains = 0
		fn(key.(QueueKey), ops, parked)
		return true
	})
}

// ParkedNow returns the long polls parked now on each queue that has
// some (namespace and task pops under the zero QueueKey).
func (m *Metrics) ParkedNow() map[QueueKey]int64 {
	out := map[QueueKey]int64{}
	m.queues.Range(func(key, value any) bool {
		if n := value.(*queueCounters).parked.Load(); n > 0 {
			out[key.(QueueKey)] = n
		}
		return true
	})
	return out
}

// DrainErrors returns the requests answered 500 or 503 since the last
// call.
func (m *Metrics) DrainErrors() int64 { return m.serverErrors.Swap(0) }
