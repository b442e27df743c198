package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
)

// healthTimeout bounds the database ping of /health.
const healthTimeout = 2 * time.Second

// health answers 200 when the database answers a ping, 503 otherwise. Its
// auth is "none" only when the API is served without authentication on an
// address other hosts can reach, so that a probe or an audit sees it.
func (g *operationRoutes) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	out, code := api.Health{Status: "healthy", Database: "connected", Engine: g.broker.Engine(),
		Version: g.a.version}, http.StatusOK
	if g.a.auth == nil && g.a.exposed() {
		out.Auth = "none"
	}
	if err := g.broker.Health(ctx); err != nil {
		out.Status, out.Database, code = "unhealthy", "disconnected", http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
	return nil
}

// ready is the readiness probe: 200 when the database answers and its
// schema is migrated, 503 while it is unreachable (pushes are then spooled
// and pops refused) and once the broker is shutting down, so that a load
// balancer sends requests elsewhere.
func (g *operationRoutes) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	switch {
	case g.broker.Stopping():
		writeJSON(w, http.StatusServiceUnavailable, api.Ready{Status: "shutting down", Database: "connected"})
	case g.broker.Health(ctx) != nil:
		writeJSON(w, http.StatusServiceUnavailable, api.Ready{Status: "not ready", Database: "disconnected"})
	default:
		writeJSON(w, http.StatusOK, api.Ready{Status: "ready", Database: "connected"})
	}
	return nil
}
