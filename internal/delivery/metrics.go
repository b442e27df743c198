package delivery

import "github.com/prometheus/client_golang/prometheus"

// metricSet is the delivery's Prometheus families.
type metricSet struct {
	attempts   *prometheus.CounterVec // by outcome of one POST
	attemptDur prometheus.Histogram   // seconds of one POST
	deliveries *prometheus.CounterVec // by outcome of a delivery: delivered, retrying, dlq
	latency    prometheus.Histogram   // seconds from the message's creation to its 2xx
}

func newMetrics(reg prometheus.Registerer) *metricSet {
	buckets := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &metricSet{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_delivery_attempts_total",
			Help: "Webhook delivery POSTs by outcome (delivered, failed, timeout, refused, error)."}, []string{"outcome"}),
		attemptDur: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "queen_delivery_attempt_duration_seconds",
			Help: "Seconds one webhook delivery POST took, answer read.", Buckets: buckets}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_deliveries_total",
			Help: "Webhook deliveries by outcome: delivered (acked), retrying (nacked) or dlq."}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "queen_delivery_latency_seconds",
			Help: "Seconds from a message's creation to its delivery's 2xx.", Buckets: buckets}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.attemptDur, m.deliveries, m.latency)
	}
	return m
}
