package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/store"
)

// QueueSnapshot is what the per-queue families show: live figures of the
// deepest queues, the cluster's counters of the last complete minute, and
// this broker's spool.
type QueueSnapshot struct {
	Gauges   *store.QueueGauges
	Minute   []store.QueueBucket // the last complete minute, per queue (every tenant, every broker)
	MinuteAt time.Time           // that minute's start
	Spool    map[QueueKey]int64  // pushes in this broker's spool, per queue
}

// QueueSource reads a snapshot.
type QueueSource func(ctx context.Context) (*QueueSnapshot, error)

// QueueWatch configures the per-queue families.
type QueueWatch struct {
	// Source reads the figures (index-backed store reads).
	Source QueueSource
	// MaxQueues is the cap the source applies (QUEEN_METRICS_MAX_QUEUES),
	// reported for reference; the source reads at most this many queues.
	MaxQueues int
	// TTL is how long a snapshot serves scrapes before the next is read; 0
	// means DefaultQueueTTL. Scrapes in between cost nothing.
	TTL time.Duration
	// Timeout bounds one read; 0 means DefaultQueueTimeout. A read that
	// fails or times out leaves the previous snapshot in place.
	Timeout time.Duration
	// Tenancy adds a tenant label to every per-queue family: queues of the
	// same name in two tenants are two series. Without it only the default
	// tenant's queues are described (the only ones requests can reach).
	Tenancy bool
}

// Defaults of QueueWatch.
const (
	DefaultQueueTTL     = 5 * time.Second
	DefaultQueueTimeout = 5 * time.Second
)

// WatchQueues registers the per-queue families, read at scrape time through
// w.Source and cached for w.TTL. Only the w.MaxQueues deepest queues get
// series; queen_queue_metrics_omitted_queues says how many did not.
func (m *Metrics) WatchQueues(w QueueWatch) {
	if w.TTL <= 0 {
		w.TTL = DefaultQueueTTL
	}
	if w.Timeout <= 0 {
		w.Timeout = DefaultQueueTimeout
	}
	m.queueReg.MustRegister(newQueueCollector(m, w))
}

// queueCollector is the prometheus.Collector of the per-queue families.
type queueCollector struct {
	m      *Metrics
	w      QueueWatch
	labels []string

	mu     sync.Mutex // serialises reads: concurrent scrapes share one
	snap   *QueueSnapshot
	readAt time.Time
	errors float64

	depth, inFlight, dlqByQueue, oldestAge, groupLag, partitions, spool, parked *prometheus.Desc
	pushReq, pushMsg, popMsg, popEmpty, ack, tx, popLag                         *prometheus.Desc
	dlqCluster, queues, omitted, age, errs, max                                 *prometheus.Desc
}

func newQueueCollector(m *Metrics, w QueueWatch) *queueCollector {
	labels := []string{"queue"}
	if w.Tenancy {
		labels = []string{"tenant", "queue"}
	}
	d := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string{}, labels...), extra...), nil)
	}
	g := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &queueCollector{m: m, w: w, labels: labels,
		depth:      d("queen_queue_depth", "Messages pending in the queue: neither committed nor leased, for the consumer group furthest behind."),
		inFlight:   d("queen_queue_in_flight", "Messages of the queue under a live lease."),
		dlqByQueue: d("queen_dlq_depth_by_queue", "Dead-letter entries of the queue's messages."),
		oldestAge:  d("queen_queue_oldest_message_age_seconds", "Age of the oldest message some consumer group has still to read (the oldest message when none reads the queue)."),
		groupLag:   d("queen_queue_consumer_lag_messages", "Unread messages of the consumer group furthest behind on the queue."),
		partitions: d("queen_queue_partitions", "Partitions of the queue."),
		spool:      d("queen_queue_spool_pending", "Pushes to the queue in this broker's disk spool, waiting for the database."),
		parked:     d("queen_queue_parked_consumers", "Long polls parked on the queue at this broker."),
		pushReq:    d("queen_queue_push_requests_per_minute", "Push requests to the queue in the last complete minute, every broker."),
		pushMsg:    d("queen_queue_push_messages_per_minute", "Messages pushed to the queue in the last complete minute, every broker."),
		popMsg:     d("queen_queue_pop_messages_per_minute", "Messages popped from the queue in the last complete minute, every broker."),
		popEmpty:   d("queen_queue_pop_empty_per_minute", "Pops of the queue that returned nothing in the last complete minute, every broker."),
		ack:        d("queen_queue_ack_per_minute", "Acknowledgements on the queue in the last complete minute, every broker, by result.", "result"),
		tx:         d("queen_queue_transactions_per_minute", "Transactions that pushed to the queue in the last complete minute, every broker."),
		popLag:     d("queen_queue_pop_lag_milliseconds", "Time popped messages had waited since their push, in the last complete minute.", "stat"),
		dlqCluster: g("queen_dlq_depth", "Dead-letter entries of every queue.", "scope"),
		queues:     g("queen_queues", "Queues of every tenant."),
		omitted:    g("queen_queue_metrics_omitted_queues", "Queues left out of the per-queue families (only the deepest QUEEN_METRICS_MAX_QUEUES have series)."),
		age:        g("queen_queue_metrics_age_seconds", "Age of the per-queue figures served (they are read at most every few seconds)."),
		errs:       g("queen_queue_metrics_errors_total", "Reads of the per-queue figures that failed (the previous figures were served)."),
		max:        g("queen_queue_metrics_max_queues", "The most queues the per-queue families describe (QUEEN_METRICS_MAX_QUEUES)."),
	}
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.inFlight, c.dlqByQueue, c.oldestAge, c.groupLag, c.partitions,
		c.spool, c.parked, c.pushReq, c.pushMsg, c.popMsg, c.popEmpty, c.ack, c.tx, c.popLag, c.dlqCluster, c.queues,
		c.omitted, c.age, c.errs, c.max} {
		ch <- d
	}
}

// snapshot returns the cached snapshot, reading a new one when it is older
// than the TTL.
func (c *queueCollector) snapshot() (*QueueSnapshot, time.Time, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil || time.Since(c.readAt) >= c.w.TTL {
		ctx, cancel := context.WithTimeout(context.Background(), c.w.Timeout)
		snap, err := c.w.Source(ctx)
		cancel()
		if err != nil {
			c.errors++
		} else {
			c.snap, c.readAt = snap, time.Now()
		}
	}
	return c.snap, c.readAt, c.errors
}

// Collect implements prometheus.Collector.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	snap, readAt, errs := c.snapshot()
	ch <- prometheus.MustNewConstMetric(c.errs, prometheus.CounterValue, errs)
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(c.w.MaxQueues))
	if snap == nil || snap.Gauges == nil {
		return
	}
	g := snap.Gauges
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, time.Since(readAt).Seconds())
	ch <- prometheus.MustNewConstMetric(c.queues, prometheus.GaugeValue, float64(g.Total))
	ch <- prometheus.MustNewConstMetric(c.omitted, prometheus.GaugeValue, float64(g.Total-len(g.Queues)))
	ch <- prometheus.MustNewConstMetric(c.dlqCluster, prometheus.GaugeValue, float64(g.DeadLetter), "cluster")
	parked := c.m.ParkedNow()
	described := make(map[QueueKey]bool, len(g.Queues))
	for _, q := range g.Queues {
		k := QueueKey{Tenant: store.TenantOrDefault(q.Tenant), Queue: q.Queue}
		if !c.w.Tenancy && k.Tenant != store.DefaultTenant {
			// Left from a time tenancy was on: unreachable now, and its
			// series would collide with the default tenant's of that name.
			continue
		}
		described[k] = true
		lv := c.labelValues(k)
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
		gauge(c.depth, float64(q.Pending))
		gauge(c.inFlight, float64(q.Processing))
		gauge(c.dlqByQueue, float64(q.DeadLetter))
		gauge(c.groupLag, float64(q.GroupLag))
		gauge(c.partitions, float64(q.Partitions))
		age := 0.0
		if !q.OldestUnread.IsZero() {
			age = max(0, readAt.Sub(q.OldestUnread).Seconds())
		}
		gauge(c.oldestAge, age)
		gauge(c.spool, float64(snap.Spool[k]))
		gauge(c.parked, float64(parked[k]))
	}
	for _, b := range snap.Minute {
		k := QueueKey{Tenant: store.TenantOrDefault(b.Tenant), Queue: b.Queue}
		if !described[k] {
			continue
		}
		lv := c.labelValues(k)
		gauge := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(lv, extra...)...)
		}
		o := b.Ops
		gauge(c.pushReq, float64(o.PushRequests))
		gauge(c.pushMsg, float64(o.PushMessages))
		gauge(c.popMsg, float64(o.PopMessages))
		gauge(c.popEmpty, float64(o.PopEmpty))
		gauge(c.ack, float64(o.AckSuccess), "success")
		gauge(c.ack, float64(o.AckFailed), "failed")
		gauge(c.tx, float64(o.Transactions))
		gauge(c.popLag, o.AvgLagMs(), "avg")
		gauge(c.popLag, float64(o.LagMaxMs), "max")
	}
}

// labelValues returns the label values of a queue.
func (c *queueCollector) labelValues(k QueueKey) []string {
	if c.w.Tenancy {
		return []string{k.Tenant, k.Queue}
	}
	return []string{k.Queue}
}
