package httpapi

import (
	"context"
	"net/http"
	"time"
)

// healthTimeout bounds the database ping of /health.
const healthTimeout = 2 * time.Second

// healthJSON is /health's own document, at 200 and 503 alike.
type healthJSON struct {
	Status   string `json:"status"`
	Database string `json:"database"`
	Engine   string `json:"engine"`
	Version  string `json:"version"`
	// Auth is "none" only when the API is served without authentication
	// on an address other hosts can reach, so that a probe or an audit
	// sees it; absent otherwise.
	Auth string `json:"auth,omitempty"`
}

// health answers 200 when the database answers a ping, 503 otherwise.
func (a *api) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	out, code := healthJSON{Status: "healthy", Database: "connected", Engine: a.broker.Engine(), Version: a.version}, http.StatusOK
	if a.auth == nil && a.exposed() {
		out.Auth = "none"
	}
	if err := a.broker.Health(ctx); err != nil {
		out.Status, out.Database, code = "unhealthy", "disconnected", http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
	return nil
}

// readyJSON is /ready's document.
type readyJSON struct {
	Status   string `json:"status"`
	Database string `json:"database"`
}

// ready is the readiness probe: 200 when the database answers and its
// schema is migrated, 503 while it is unreachable (pushes are then spooled
// and pops refused) and once the broker is shutting down, so that a load
// balancer sends requests elsewhere.
func (a *api) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	switch {
	case a.broker.Stopping():
		writeJSON(w, http.StatusServiceUnavailable, readyJSON{"shutting down", "connected"})
	case a.broker.Health(ctx) != nil:
		writeJSON(w, http.StatusServiceUnavailable, readyJSON{"not ready", "disconnected"})
	default:
		writeJSON(w, http.StatusOK, readyJSON{"ready", "connected"})
	}
	return nil
}
