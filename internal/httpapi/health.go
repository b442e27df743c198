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
}

// health answers 200 when the database answers a ping, 503 otherwise.
func (a *api) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	out, code := healthJSON{"healthy", "connected", a.broker.Engine(), a.version}, http.StatusOK
	if err := a.broker.Health(ctx); err != nil {
		out.Status, out.Database, code = "unhealthy", "disconnected", http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
	return nil
}
