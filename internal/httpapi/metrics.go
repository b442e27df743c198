package httpapi

import (
	"net/http"

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
func (g *operationRoutes) metricsPrometheus(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-cache")
	r.Header.Del("Accept")
	g.a.prom.ServeHTTP(w, r)
	return nil
}
