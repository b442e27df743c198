package httpapi

import "github.com/queen-go/queen/internal/broker"

// operationRoutes serve probes, metrics and the API's own description
// (health.go, metrics.go, openapi.go), and this broker's spool.
type operationRoutes struct {
	a      *adapter // authentication, exposure and metrics
	broker *broker.Broker
}

func (g *operationRoutes) Routes() []Route {
	return []Route{
		row(AccessPublic, "GET", "/health", "health", g.health).ProcessWide(),
		row(AccessPublic, "GET", "/ready", "ready", g.ready).ProcessWide(),
		// Public unless closed: JWT_SKIP_PATHS not naming them, or (the
		// metrics) QUEEN_METRICS_AUTH, makes them read-level routes.
		row(AccessPublic, "GET", "/metrics", "metrics", g.metricsJSON).Operator().MetricsRoute(),
		row(AccessPublic, "GET", "/metrics/prometheus", "metrics_prometheus", g.metricsPrometheus).ProcessWide().
			MetricsRoute(),
		row(AccessPublic, "GET", "/api/v1/openapi.json", "openapi", g.openapi).ProcessWide().SkipListed(),
		row(AccessRead, "GET", "/api/v1/status/buffers", "status_buffers", g.buffers).Operator(),
	}
}
