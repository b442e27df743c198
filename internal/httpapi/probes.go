package httpapi

import "net/http"

// probeRoutes are the liveness probes Kubernetes and load balancers call
// (/ready, the readiness probe, and /health are operationRoutes). They
// never touch the database: a broker whose database is down is alive.
func (a *api) probeRoutes() []route {
	return []route{
		r(AccessPublic, "GET", "/healthz", "healthz", a.live).processWide(),
		r(AccessPublic, "GET", "/live", "live", a.live).processWide(),
	}
}

// liveJSON is the liveness probes' document.
type liveJSON struct {
	Status string `json:"status"`
}

// live answers 200 while the process serves requests.
func (a *api) live(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, liveJSON{"alive"})
	return nil
}
