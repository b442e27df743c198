package httpapi

import (
	"net/http"
)

// metricsJSON is Queen's JSON snapshot, with the same keys, filled in from
// the registry /metrics/prometheus serves: uptime, requests and pushed
// messages since start, the database pool, the process's memory (RSS from
// /proc on Linux; the Go heap) and CPU time in microseconds, and (beyond
// Queen) the long polls waiting.
func (a *api) metricsJSON(w http.ResponseWriter, r *http.Request) error {
	v, err := a.metrics.Values()
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
	pool := a.broker.PoolStats() // when the pool families are not registered (a bare API)
	size, idle := v["queen_db_pool_size"], v["queen_db_pool_idle"]
	if _, ok := v["queen_db_pool_size"]; !ok {
		size, idle = float64(pool.Size), float64(pool.Idle)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"uptime":   uptime,
		"requests": map[string]any{"total": int64(requests), "rate": rate(requests)},
		"messages": map[string]any{"total": int64(messages), "rate": rate(messages)},
		"database": map[string]any{"engine": a.broker.Engine(), "poolSize": int64(size), "idleConnections": int64(idle),
			"activeConnections": int64(v["queen_db_pool_active"]), "waitingRequests": int64(v["queen_db_pool_waiting"])},
		"memory": map[string]any{"rss": v["queen_process_resident_memory_bytes"],
			"virtual": v["queen_process_virtual_memory_bytes"], "heapTotal": v["go_memstats_heap_sys_bytes"],
			"heapUsed": v["go_memstats_heap_alloc_bytes"], "external": 0, "arrayBuffers": 0},
		"cpu":       map[string]any{"user": v["queen_cpu_user_microseconds_total"], "system": v["queen_cpu_system_microseconds_total"]},
		"longPolls": map[string]any{"waiting": int64(v["queen_pop_waiting"])},
	})
	return nil
}

// metricsPrometheus serves the registry and the per-queue families in the
// Prometheus text format 0.0.4, whatever the scraper offered, uncached.
func (a *api) metricsPrometheus(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-cache")
	r.Header.Del("Accept")
	a.prom.ServeHTTP(w, r)
	return nil
}
