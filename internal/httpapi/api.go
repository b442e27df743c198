// Package httpapi is Queen's HTTP/JSON API over a broker: routing, request
// decoding, response shapes and the one mapping from errors to statuses. It
// holds no SQL and no message-plane rules.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/metrics"
)

// DefaultMaxBodyBytes is the request body cap (QUEEN_MAX_BODY_BYTES).
const DefaultMaxBodyBytes = 64 << 20

// Config configures the API.
type Config struct {
	Broker       *broker.Broker
	Logger       *slog.Logger
	MaxBodyBytes int64 // 0 means DefaultMaxBodyBytes
	Metrics      *metrics.Metrics
	Version      string
}

type api struct {
	broker  *broker.Broker
	log     *slog.Logger
	maxBody int64
	metrics *metrics.Metrics
	version string
}

// New returns the HTTP handler of the whole API.
func New(cfg Config) http.Handler {
	a := &api{
		broker:  cfg.Broker,
		log:     cfg.Logger,
		maxBody: cfg.MaxBodyBytes,
		metrics: cfg.Metrics,
		version: cfg.Version,
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	mux := http.NewServeMux()
	handle := func(pattern, route string, h http.HandlerFunc) {
		mux.Handle(pattern, a.instrument(route, a.limitBody(h)))
	}
	handle("POST /api/v1/push", "push", a.push)
	handle("GET /api/v1/pop", "pop", a.pop)
	handle("GET /api/v1/pop/queue/{queue}", "pop", a.pop)
	handle("GET /api/v1/pop/queue/{queue}/partition/{partition}", "pop", a.pop)
	handle("POST /api/v1/ack", "ack", a.ack)
	handle("POST /api/v1/ack/batch", "ack_batch", a.ackBatch)
	handle("POST /api/v1/lease/{leaseId}/extend", "lease_extend", a.extend)
	handle("POST /api/v1/transaction", "transaction", a.transaction)
	handle("POST /api/v1/configure", "configure", a.configure)
	handle("DELETE /api/v1/resources/queues/{queue}", "queue_delete", a.deleteQueue)
	handle("GET /api/v1/system/maintenance", "maintenance", a.getMaintenance)
	handle("POST /api/v1/system/maintenance", "maintenance", a.setMaintenance)
	handle("GET /api/v1/system/maintenance/pop", "maintenance_pop", a.getPopMaintenance)
	handle("POST /api/v1/system/maintenance/pop", "maintenance_pop", a.setPopMaintenance)
	handle("GET /health", "health", a.health)
	handle("GET /metrics", "metrics", a.metricsJSON)
	prom := promhttp.HandlerFor(a.metrics.Registry, promhttp.HandlerOpts{})
	handle("GET /metrics/prometheus", "metrics_prometheus", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		// Prometheus text format 0.0.4, whatever the scraper offered.
		r.Header.Del("Accept")
		prom.ServeHTTP(w, r)
	})
	// Everything else, including a known path with the wrong method: the
	// ServeMux would answer 405, but Queen's fallback answers this 404.
	handle("/", "no_such_route", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}{"Not Found", "no_such_route"})
	})
	return mux
}

// statusRecorder remembers the status for metrics and logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (a *api) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		a.metrics.Request(route, strconv.Itoa(rec.status), time.Since(start))
	})
}

// limitBody caps request bodies: a declared length over the cap is refused
// before the handler runs, and a streamed body is cut at the cap.
func (a *api) limitBody(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > a.maxBody {
			writeTooLarge(w)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, a.maxBody)
		h(w, r)
	}
}

func (a *api) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status, database, code := "healthy", "connected", http.StatusOK
	if err := a.broker.Health(ctx); err != nil {
		status, database, code = "unhealthy", "disconnected", http.StatusServiceUnavailable
	}
	writeJSON(w, code, struct {
		Status   string `json:"status"`
		Database string `json:"database"`
		Engine   string `json:"engine"`
		Version  string `json:"version"`
	}{status, database, a.broker.Engine(), a.version})
}

// metricsJSON is Queen's JSON snapshot, with the same keys, filled in.
func (a *api) metricsJSON(w http.ResponseWriter, r *http.Request) {
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
}

// writeError is the one place that turns an error into a status and an
// {"error": …} body.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var bad *badRequest
	var invalid *broker.InvalidError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeTooLarge(w)
	case errors.As(err, &bad):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": bad.msg})
	case errors.As(err, &invalid):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": invalid.Msg})
	default:
		a.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}

func writeTooLarge(w http.ResponseWriter) {
	writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "request body too large"})
}
