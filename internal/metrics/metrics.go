// Package metrics defines the broker's Prometheus collectors and its
// in-memory per-queue counters. Collectors are registered on a registry
// the caller owns (no global registry), so that several brokers can live in
// one test process; figures that cost a read (pool, process, per-queue
// gauges) are read at scrape time by GaugeFuncs and Collectors.
package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queen-go/queen/internal/store"
)

// Metrics holds the collectors the broker and its HTTP layer update.
type Metrics struct {
	Registry *prometheus.Registry
	Started  time.Time

	Acks           *prometheus.CounterVec // by result: success, failed, dlq
	HTTPDuration   *prometheus.HistogramVec
	HTTPRequests   *prometheus.CounterVec
	MessagesPopped prometheus.Counter
	MessagesPushed prometheus.Counter
	PopWaiting     prometheus.Gauge
	// PopRechecks counts store looks by parked long polls (a pop after a
	// wake-up, a deadline or a safety re-poll): what idle polls cost.
	PopRechecks prometheus.Counter
	// PopWakeups counts parked long polls woken, by cause: push (a push,
	// an ack releasing a lease, a control operation, another broker's
	// notification), deadline (a lease expiring, a delayed message coming
	// due) or pass (handed on by a poll that could not use it).
	PopWakeups     *prometheus.CounterVec
	PushDuplicates prometheus.Counter
	Transactions   *prometheus.CounterVec // by result: committed, aborted

	requests atomic.Int64
	pushed   atomic.Int64

	ackDLQ, ackFailed, ackSuccess prometheus.Counter // children of Acks
	dbErrors                      prometheus.Counter
	parked                        atomic.Int64 // long polls parked now
	queues                        sync.Map     // QueueKey -> *queueCounters
	queueReg                      *prometheus.Registry
	serverErrors                  atomic.Int64 // answers 500 or 503 since the last DrainErrors
	txCommitted                   prometheus.Counter
}

// New creates the collectors and registers them, with Go runtime and process
// collectors, on reg, which the caller owns (cmd/queen creates it in main).
func New(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		Registry: reg,
		Started:  time.Now(),
		Acks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_acks_total", Help: "Acknowledgements processed, by result.",
		}, []string{"result"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queen_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30},
		}, []string{"route"}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		MessagesPopped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_messages_popped_total", Help: "Messages delivered by pops.",
		}),
		MessagesPushed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_messages_pushed_total", Help: "Messages stored by pushes and transactions.",
		}),
		PopWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queen_pop_waiting", Help: "Long-poll pops currently waiting for messages.",
		}),
		PopRechecks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_pop_rechecks_total", Help: "Store looks by parked long polls after a wake-up, a deadline or a safety re-poll.",
		}),
		PopWakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_pop_wakeups_total", Help: "Parked long polls woken, by cause (push, deadline, pass).",
		}, []string{"cause"}),
		PushDuplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_push_duplicates_total", Help: "Pushed items answered as duplicates.",
		}),
		Transactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_transactions_total", Help: "Transactions by result.",
		}, []string{"result"}),
	}
	m.ackDLQ, m.ackFailed, m.ackSuccess = m.Acks.WithLabelValues("dlq"), m.Acks.WithLabelValues("failed"),
		m.Acks.WithLabelValues("success")
	m.txCommitted = m.Transactions.WithLabelValues("committed")
	m.dbErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "queen_db_errors_total", Help: "Requests answered 500 or 503 (the database failed or was unreachable).",
	})
	m.queueReg = prometheus.NewRegistry()
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.Acks, m.HTTPDuration, m.HTTPRequests, m.MessagesPopped, m.MessagesPushed,
		m.PopWaiting, m.PopRechecks, m.PopWakeups, m.PushDuplicates, m.Transactions,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_uptime_seconds", Help: "Seconds since the broker started.",
		}, func() float64 { return time.Since(m.Started).Seconds() }),
		m.dbErrors,
	)
	m.registerProcess()
	return m
}

// Gatherer returns what /metrics/prometheus serves: the registry and the
// per-queue families (WatchQueues), which are kept apart so that the JSON
// snapshot, which reads the registry, never waits for a store read.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	return prometheus.Gatherers{m.Registry, m.queueReg}
}

// ParkedTotal returns the long polls parked now.
func (m *Metrics) ParkedTotal() int64 { return m.parked.Load() }

// WatchPool reports the store's connections at scrape time, under Queen's
// names.
func (m *Metrics) WatchPool(pool func() store.PoolUsage) {
	gauge := func(name, help string, v func(u store.PoolUsage) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(v(pool())) })
	}
	m.Registry.MustRegister(
		gauge("queen_db_pool_size", "The most database connections the pool opens.",
			func(u store.PoolUsage) int { return u.Size }),
		gauge("queen_db_pool_idle", "Database connections open and unused.",
			func(u store.PoolUsage) int { return u.Idle }),
		gauge("queen_db_pool_active", "Database connections running a statement.",
			func(u store.PoolUsage) int { return u.Active }),
		gauge("queen_db_pool_waiting", "Operations waiting for a database connection (the embedded engine: for its writer).",
			func(u store.PoolUsage) int { return u.Waiting }),
	)
}

// Spool is what WatchSpool reads of the disk spool.
type Spool interface {
	Pending() int64
	DeadLettered() int64
	Bytes() int64
	RefusedFull() int64
}

// WatchSpool reports the disk spool at scrape time: pushes waiting for
// replay, pushes the database refused at replay, set aside, the bytes on
// disk the size cap bounds, and the items refused for that cap.
func (m *Metrics) WatchSpool(sp Spool) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_spool_pending", Help: "Pushes in the disk spool waiting to be replayed.",
		}, func() float64 { return float64(sp.Pending()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_spool_dead_letters", Help: "Spooled pushes the database refused, set aside in the dead-letter file.",
		}, func() float64 { return float64(sp.DeadLettered()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_spool_bytes", Help: "Bytes of the disk spool's segments, which FILE_BUFFER_MAX_BYTES caps.",
		}, func() float64 { return float64(sp.Bytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "queen_spool_full_refusals_total", Help: "Push items failed because the disk spool was at its size cap.",
		}, func() float64 { return float64(sp.RefusedFull()) }),
	)
}

// Pushed counts n stored messages.
func (m *Metrics) Pushed(n int) {
	m.MessagesPushed.Add(float64(n))
	m.pushed.Add(int64(n))
}

// Request counts one served HTTP request. Answers 500 and 503 count as
// database errors (queen_db_errors_total): the broker answers them only
// when the store failed or could not be reached.
func (m *Metrics) Request(route, code string, d time.Duration) {
	m.requests.Add(1)
	if code == "500" || code == "503" {
		m.serverErrors.Add(1)
		m.dbErrors.Inc()
	}
	m.HTTPRequests.WithLabelValues(route, code).Inc()
	m.HTTPDuration.WithLabelValues(route).Observe(d.Seconds())
}

// Totals returns the request and pushed-message counts since start, for the
// JSON snapshot.
func (m *Metrics) Totals() (requests, messages int64) {
	return m.requests.Load(), m.pushed.Load()
}
