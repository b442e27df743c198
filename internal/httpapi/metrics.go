package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/queen-go/queen/api"
)

// metricsJSON is Queen's JSON snapshot, with the same keys, filled in from
// the registry /metrics/prometheus serves: uptime, requests and pushed
// messages since start, the database pool, the process's memory (RSS from
// /proc on Linux; the Go heap) and CPU time in microseconds, and (beyond
// Queen) the long polls waiting.
func (g *operationRoutes) metricsJSON(w http.ResponseWriter, r *http.Request) error {
	v, err := g.a.metrics.Values()
	if err != nil {
		return err
	}
	uptime := v["queen_uptime_seconds"]
	rate := func(n float64) float64 {
		if uptime <= 0 {
			return 0
		}
		return round3(n / uptime)
	}
	requests, messages := v["queen_http_requests_total"], v["queen_messages_pushed_total"]
	pool := g.broker.PoolStats() // when the pool families are not registered (a bare API)
	size, idle := v["queen_db_pool_size"], v["queen_db_pool_idle"]
	if _, ok := v["queen_db_pool_size"]; !ok {
		size, idle = float64(pool.Size), float64(pool.Idle)
	}
	writeJSON(w, http.StatusOK, api.MetricsSnapshot{
		Uptime:   uptime,
		Requests: api.MetricsRate{Total: int64(requests), Rate: rate(requests)},
		Messages: api.MetricsRate{Total: int64(messages), Rate: rate(messages)},
		Database: api.MetricsDatabase{Engine: g.broker.Engine(), PoolSize: int64(size), IdleConnections: int64(idle),
			ActiveConnections: int64(v["queen_db_pool_active"]), WaitingRequests: int64(v["queen_db_pool_waiting"])},
		Memory: api.MetricsMemory{RSS: v["queen_process_resident_memory_bytes"],
			Virtual: v["queen_process_virtual_memory_bytes"], HeapTotal: v["go_memstats_heap_sys_bytes"],
			HeapUsed: v["go_memstats_heap_alloc_bytes"]},
		CPU:       api.MetricsCPU{User: v["queen_cpu_user_microseconds_total"], System: v["queen_cpu_system_microseconds_total"]},
		LongPolls: api.MetricsPolls{Waiting: int64(v["queen_pop_waiting"])},
	})
	return nil
}

// metricsPrometheus serves the registry and the per-queue families in the
// Prometheus text format 0.0.4, whatever the scraper offered, uncached.
// With tenancy on, a token bound to a tenant sees only the series labelled
// with its tenant (its queues'); a token with a tenant claim that is no
// UUID is refused.
func (g *operationRoutes) metricsPrometheus(w http.ResponseWriter, r *http.Request) error {
	var tenant string
	if e, ok := r.Context().Value(exchangeKey{}).(*exchange); ok && g.a.tenancy {
		if e.tokenTenantInvalid {
			return api.ErrTenantClaim
		}
		tenant = e.tokenTenant
	}
	w.Header().Set("Cache-Control", "no-cache")
	r.Header.Del("Accept")
	if tenant == "" {
		g.a.prom.ServeHTTP(w, r)
		return nil
	}
	promhttp.HandlerFor(tenantGatherer{g.a.metrics.Gatherer(), tenant}, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

// tenantGatherer gathers only the series whose tenant label is tenant:
// what a tenant-bound token may see of the registry.
type tenantGatherer struct {
	prometheus.Gatherer
	tenant string
}

func (t tenantGatherer) Gather() ([]*dto.MetricFamily, error) {
	families, err := t.Gatherer.Gather()
	out := families[:0]
	for _, f := range families {
		kept := f.Metric[:0]
		for _, m := range f.Metric {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tenant" && l.GetValue() == t.tenant {
					kept = append(kept, m)
					break
				}
			}
		}
		if len(kept) > 0 {
			f.Metric = kept
			out = append(out, f)
		}
	}
	return out, err
}
