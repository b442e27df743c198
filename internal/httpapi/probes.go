package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
)

// probeRoutes are the liveness probes Kubernetes and load balancers call
// (/ready, the readiness probe, and /health are operationRoutes). They
// never touch the database: a broker whose database is down is alive.
type probeRoutes struct{}

func (probeRoutes) Routes() []Route {
	return []Route{
		row(AccessPublic, "GET", "/healthz", "healthz", live).ProcessWide(),
		row(AccessPublic, "GET", "/live", "live", live).ProcessWide(),
	}
}

// live answers 200 while the process serves requests.
func live(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, api.Live{Status: "alive"})
	return nil
}
