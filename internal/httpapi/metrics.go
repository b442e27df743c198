package httpapi

import (
	"net/http"
	"runtime"
	"time"
)

// metricsJSON is Queen's JSON snapshot, with the same keys, filled in.
func (a *api) metricsJSON(w http.ResponseWriter, r *http.Request) error {
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	uptime := time.Since(a.metrics.Started).Seconds()
	requests, messages := a.metrics.Totals()
	pool := a.broker.PoolStats()
	rate := func(n int64) float64 {
		if uptime <= 0 {
			return 0
		}
		return float64(n) / uptime
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"uptime":   uptime,
		"requests": map[string]any{"total": requests, "rate": rate(requests)},
		"messages": map[string]any{"total": messages, "rate": rate(messages)},
		"database": map[string]any{"engine": a.broker.Engine(), "poolSize": pool.Size,
			"idleConnections": pool.Idle, "waitingRequests": 0},
		"memory": map[string]any{"rss": mem.Sys, "heapTotal": mem.HeapSys, "heapUsed": mem.HeapAlloc,
			"external": 0, "arrayBuffers": 0},
		"cpu": map[string]any{"user": 0, "system": 0},
	})
	return nil
}

// metricsPrometheus serves the registry in the Prometheus text format 0.0.4,
// whatever the scraper offered, uncached.
func (a *api) metricsPrometheus(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-cache")
	r.Header.Del("Accept")
	a.prom.ServeHTTP(w, r)
	return nil
}
