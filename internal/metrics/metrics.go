// Package metrics defines the broker's Prometheus collectors. They are
// registered on a registry the caller owns (no global registry), so that
// several brokers can live in one test process.
package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
	PushDuplicates prometheus.Counter
	Transactions   *prometheus.CounterVec // by result: committed, aborted

	requests atomic.Int64
	pushed   atomic.Int64
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
		PushDuplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_push_duplicates_total", Help: "Pushed items answered as duplicates.",
		}),
		Transactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_transactions_total", Help: "Transactions by result.",
		}, []string{"result"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.Acks, m.HTTPDuration, m.HTTPRequests, m.MessagesPopped, m.MessagesPushed,
		m.PopWaiting, m.PushDuplicates, m.Transactions,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_uptime_seconds", Help: "Seconds since the broker started.",
		}, func() float64 { return time.Since(m.Started).Seconds() }),
	)
	return m
}

// WatchSpool reports the disk spool at scrape time: pushes waiting for
// replay, and pushes the database refused at replay, set aside.
func (m *Metrics) WatchSpool(pending, deadLettered func() int64) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_spool_pending", Help: "Pushes in the disk spool waiting to be replayed.",
		}, func() float64 { return float64(pending()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "queen_spool_dead_letters", Help: "Spooled pushes the database refused, set aside in the dead-letter file.",
		}, func() float64 { return float64(deadLettered()) }),
	)
}

// Pushed counts n stored messages.
func (m *Metrics) Pushed(n int) {
	m.MessagesPushed.Add(float64(n))
	m.pushed.Add(int64(n))
}

// Request counts one served HTTP request.
func (m *Metrics) Request(route, code string, d time.Duration) {
	m.requests.Add(1)
	m.HTTPRequests.WithLabelValues(route, code).Inc()
	m.HTTPDuration.WithLabelValues(route).Observe(d.Seconds())
}

// Totals returns the request and pushed-message counts since start, for the
// JSON snapshot.
func (m *Metrics) Totals() (requests, messages int64) {
	return m.requests.Load(), m.pushed.Load()
}
