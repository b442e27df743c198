package server

import (
	"context"
	"log/slog"
	"os"
	"strconv"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
)

// newSampler builds the metrics sampler of this broker: its rows are named
// by the host and WORKER_ID (the process id by default), so that several
// brokers sharing a database write their own.
func newSampler(cfg Config, st store.Store, m *metrics.Metrics, sp *spool.Spool, log *slog.Logger) *control.Sampler {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	worker := cfg.WorkerID
	if worker == "" {
		worker = strconv.Itoa(os.Getpid())
	}
	var pending func() int64
	if sp != nil {
		pending = sp.Pending
	}
	return control.NewSampler(st, m, control.SamplerConfig{
		AggregateEvery: cfg.MetricsAggregateEvery, Hostname: host, WorkerID: worker, PID: os.Getpid(),
		Logger: log, MaxQueues: cfg.MetricsMaxQueues, Retention: cfg.MetricsRetention,
		SampleEvery: cfg.MetricsSampleEvery, Spool: pending,
	})
}

// watchStore registers the families read from the store at scrape time:
// the pool, and the per-queue families of the deepest
// QUEEN_METRICS_MAX_QUEUES queues (through the control plane), with this
// broker's spool per queue.
func watchStore(cfg Config, m *metrics.Metrics, st store.Store, ctl *control.Control, sp *spool.Spool) {
	m.WatchPool(st.StatsPool)
	limit := cfg.MetricsMaxQueues
	if limit <= 0 {
		limit = control.DefaultMaxQueues
	}
	var spooled func() map[metrics.QueueKey]int64
	if sp != nil {
		spooled = func() map[metrics.QueueKey]int64 {
			out := map[metrics.QueueKey]int64{}
			for k, n := range sp.PendingQueues() {
				out[metrics.QueueKey{Tenant: k.Tenant, Queue: k.Queue}] = n
			}
			return out
		}
	}
	m.WatchQueues(metrics.QueueWatch{MaxQueues: limit, Tenancy: cfg.TenancyEnabled,
		Source: func(ctx context.Context) (*metrics.QueueSnapshot, error) {
			return ctl.QueueMetrics(ctx, limit, spooled)
		}})
}
