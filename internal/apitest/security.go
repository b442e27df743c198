package apitest

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
)

// operatorRoutes are the routes that act on or read the whole cell: with
// tenancy on, only a tenantless token may call them.
var operatorRoutes = []struct {
	method, path string
	body         any
	admin        bool // the route needs the admin level
	served       int  // the status of a tenantless admin's answer; 0: 200
}{
	{"GET", "/api/v1/system/maintenance", nil, true, 0},
	{"POST", "/api/v1/system/maintenance", map[string]any{"enabled": false}, true, 0},
	{"GET", "/api/v1/system/maintenance/pop", nil, true, 0},
	{"POST", "/api/v1/system/maintenance/pop", map[string]any{"enabled": false}, true, 0},
	{"GET", "/api/v1/analytics/system-metrics", nil, false, 0},
	{"GET", "/api/v1/analytics/worker-metrics", nil, false, 0},
	{"GET", "/api/v1/analytics/postgres-stats", nil, false, 0},
	{"POST", "/api/v1/stats/refresh", nil, true, 0},
	{"GET", "/api/v1/status/buffers", nil, false, 0},
	{"GET", "/api/v1/system/shared-state", nil, true, 0},
	{"GET", "/internal/api/shared-state/stats", nil, true, 0},
	{"GET", "/internal/api/inter-instance/stats", nil, true, 0},
	{"POST", "/internal/api/notify", map[string]any{"queue": "nowhere", "partition": "p"}, true, 0},
	{"POST", "/api/v1/migration/test-connection", map[string]any{}, true, http.StatusBadRequest},
}

const operatorOnly = "Insufficient permissions: this route acts on the whole cell and needs a token without a tenant"

// testOperatorRoutes: with tenancy on, a tenant-bound token is refused every
// operator route whatever its role (a tenant cannot stop the cell or read
// other tenants' figures), and a tenantless admin is still served.
func (s *suite) testOperatorRoutes(t *testing.T) {
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true, Auth: auth.Config{
		JWTEnabled: true, Secret: authSecret, Issuer: authIssuer, Audience: []string{authAudience},
		Tokens: apiTokens(t, "tok-tenant-a-81c3:admin:"+tenantA),
	}})
	tenantTokens := map[string]string{
		"JWT admin of A":       bearer(hs(t, claims("alice", "admin", "tenant", tenantA))),
		"JWT read-only of B":   bearer(hs(t, claims("bob", "read-only", "tenant", tenantB))),
		"JWT bad tenant claim": bearer(hs(t, claims("eve", "admin", "tenant", "acme"))),
		"API token of A":       bearer("tok-tenant-a-81c3"),
	}
	operator := bearer(hs(t, claims("ops", "admin")))
	var table []attack
	for _, rt := range operatorRoutes {
		for who, tok := range tenantTokens {
			msg := operatorOnly
			if rt.admin && strings.Contains(who, "read-only") {
				msg = "Insufficient permissions" // the level is checked first
			}
			table = append(table, attack{name: who + " " + rt.method + " " + rt.path, method: rt.method, path: rt.path,
				authz: tok, body: rt.body, status: http.StatusForbidden, msg: msg})
		}
		table = append(table, attack{name: "tenantless admin " + rt.method + " " + rt.path, method: rt.method,
			path: rt.path, authz: operator, body: rt.body, status: cmp.Or(rt.served, http.StatusOK),
			msg: "host, database, and user are required"})
	}
	runAttacks(t, c, table)

	t.Run("tenant admin cannot stop another tenant", func(t *testing.T) {
		a := c.with("Authorization", tenantTokens["JWT admin of A"])
		b := c.with("Authorization", bearer(hs(t, claims("bob", "admin", "tenant", tenantB))))
		q := uniq("b-q")
		b.push(t, item(q, map[string]any{"n": 1}))
		for _, p := range []string{"/api/v1/system/maintenance/pop", "/api/v1/system/maintenance"} {
			r := a.do(t, "POST", p, map[string]any{"enabled": true})
			if msg := wantPlainError(t, r, http.StatusForbidden, ""); msg != operatorOnly {
				t.Fatalf("%s: %q", p, msg)
			}
		}
		b.popOK(t, queuePath(q))
	})

	t.Run("worker metrics of a tenantless operator only", func(t *testing.T) {
		a := c.with("Authorization", tenantTokens["JWT admin of A"])
		q := uniq("qa-secret")
		a.push(t, item(q, map[string]any{"n": 1}))
		a.popOK(t, queuePath(q))
		r := c.with("Authorization", tenantTokens["JWT read-only of B"]).do(t, "GET", "/api/v1/analytics/worker-metrics", nil)
		if strings.Contains(string(r.Body), q) || strings.Contains(string(r.Body), tenantA) {
			t.Fatalf("tenant B reads A's worker metrics: %s", r.Body)
		}
	})
}

// testOperatorRoutesTenancyOff: with tenancy off nothing changes: a token
// with a tenant claim of the right role calls the operator routes.
func (s *suite) testOperatorRoutesTenancyOff(t *testing.T) {
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{
		JWTEnabled: true, Secret: authSecret, Issuer: authIssuer, Audience: []string{authAudience},
	}})
	tok := bearer(hs(t, claims("alice", "admin", "tenant", tenantA)))
	var table []attack
	for _, rt := range operatorRoutes {
		table = append(table, attack{name: rt.method + " " + rt.path, method: rt.method, path: rt.path, authz: tok,
			body: rt.body, status: cmp.Or(rt.served, http.StatusOK), msg: "host, database, and user are required"})
	}
	runAttacks(t, c, table)
}

func (s *suite) testSecurity(t *testing.T) {
	t.Run("OperatorRoutes", s.testOperatorRoutes)
	t.Run("OperatorRoutesTenancyOff", s.testOperatorRoutesTenancyOff)
	t.Run("CrossSite", s.testCrossSite)
	t.Run("MetricsClosed", s.testMetricsClosed)
	t.Run("Hosts", s.testHosts)
	t.Run("MaxPollTimeout", s.testMaxPollTimeout)
}

// testCrossSite: with authentication off, a page of another origin cannot
// drive the broker: a forged POST is refused before it acts (a text/plain
// push, maintenance, a configure), while curl-style requests (no Origin),
// a listed origin sending JSON and the broker's own origin pass.
func (s *suite) testCrossSite(t *testing.T) {
	const dash, evil = "https://dash.example.com", "https://evil.example"
	listed := s.serverWith(t, server.Config{Version: "0.0.0-apitest", CORSAllowOrigins: []string{dash}})
	off := s.server(t)
	refusedOrigin := func(o string) string {
		return `cross-origin request refused: Origin "` + o + `" is neither this broker's nor allowed by CORS_ALLOW_ORIGIN`
	}
	const notJSON = `browser request refused: Content-Type "text/plain" is not JSON (send application/json)`
	for name, c := range map[string]*client{"CORS listed": listed, "CORS off": off} {
		t.Run(name, func(t *testing.T) {
			q := uniq("victim")
			forged := c.with("Origin", evil, "Content-Type", "text/plain")
			for _, rq := range []struct {
				path string
				body any
			}{
				{"/api/v1/push", pushBody(q)},
				{"/api/v1/system/maintenance", map[string]any{"enabled": true}},
				{"/api/v1/configure", map[string]any{"queue": q, "options": map[string]any{"retentionEnabled": true, "retentionSeconds": 1}}},
			} {
				if msg := wantPlainError(t, forged.do(t, "POST", rq.path, rq.body), http.StatusForbidden, ""); msg != refusedOrigin(evil) {
					t.Fatalf("forged POST %s: %q", rq.path, msg)
				}
			}
			if msg := wantPlainError(t, c.with("Origin", "null").do(t, "POST", "/api/v1/push", pushBody(q)),
				http.StatusForbidden, ""); msg != refusedOrigin("null") {
				t.Fatalf("POST from a null origin: %q", msg)
			}
			// Nothing happened: the queue is empty, maintenance is off.
			c.popNone(t, queuePath(q))
			var m map[string]any
			wantJSON(t, c.do(t, "GET", "/api/v1/system/maintenance", nil), http.StatusOK, &m)
			if m["maintenanceMode"] == true {
				t.Fatalf("maintenance switched on by a forged request: %v", m)
			}
			// curl and the SDKs send no Origin: text/plain stays accepted (Queen's rule).
			wantStatus(t, c.with("Content-Type", "text/plain").do(t, "POST", "/api/v1/push", pushBody(q)), http.StatusCreated)
			// The broker's own origin (the dashboard) passes.
			own := c.with("Origin", c.base)
			wantStatus(t, own.do(t, "POST", "/api/v1/push", pushBody(q)), http.StatusCreated)
			if msg := wantPlainError(t, own.with("Content-Type", "text/plain").do(t, "POST", "/api/v1/push", pushBody(q)),
				http.StatusForbidden, ""); msg != notJSON {
				t.Fatalf("same-origin text/plain: %q", msg)
			}
			// Reads are not refused (CORS decides whether the page may read them).
			wantStatus(t, c.with("Origin", evil).do(t, "GET", "/api/v1/resources/queues", nil), http.StatusOK)
		})
	}
	t.Run("listed origin", func(t *testing.T) {
		q := uniq("dash")
		d := listed.with("Origin", dash)
		wantStatus(t, d.do(t, "POST", "/api/v1/push", pushBody(q)), http.StatusCreated)
		wantStatus(t, d.with("Content-Type", "application/json; charset=utf-8").do(t, "POST", "/api/v1/push", pushBody(q)),
			http.StatusCreated)
		if msg := wantPlainError(t, d.with("Content-Type", "text/plain").do(t, "POST", "/api/v1/push", pushBody(q)),
			http.StatusForbidden, ""); msg != notJSON {
			t.Fatalf("listed origin, text/plain: %q", msg)
		}
	})
}

// testMetricsClosed: JWT_SKIP_PATHS governs the public routes it names
// (with none, the metrics and the OpenAPI document need a read-level
// token) while the probes stay public; QUEEN_METRICS_AUTH closes the
// metrics whatever the list says; with tenancy on a tenant-bound token
// scrapes only its own tenant's series and cannot read the process-wide
// JSON snapshot.
func (s *suite) testMetricsClosed(t *testing.T) {
	jwtOn := func(skip []string) auth.Config {
		return auth.Config{JWTEnabled: true, Secret: authSecret, Issuer: authIssuer, Audience: []string{authAudience},
			SkipPaths: skip}
	}
	read := bearer(hs(t, claims("reader", "read-only")))
	writeOnly := bearer(hs(t, claims("producer", "write-only")))
	closed := []string{"/metrics", "/metrics/prometheus", "/api/v1/openapi.json"}
	probes := []string{"/health", "/healthz", "/live", "/ready"}
	get := func(name, path, authz string, status int, msg string) attack {
		return attack{name: name + " " + path, method: "GET", path: path, authz: authz, status: status, msg: msg}
	}

	t.Run("default skip list: open", func(t *testing.T) {
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: jwtOn(nil)})
		var table []attack
		for _, p := range append(closed, probes...) {
			table = append(table, get("no token", p, "", http.StatusOK, ""))
		}
		runAttacks(t, c, table)
	})
	t.Run("JWT_SKIP_PATHS=none", func(t *testing.T) {
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: jwtOn([]string{})})
		var table []attack
		for _, p := range closed {
			table = append(table, get("no token", p, "", http.StatusUnauthorized, "Authentication required"),
				get("write-only", p, writeOnly, http.StatusForbidden, "Insufficient permissions"),
				get("read-only", p, read, http.StatusOK, ""))
		}
		for _, p := range probes {
			table = append(table, get("no token", p, "", http.StatusOK, ""))
		}
		runAttacks(t, c, table)
	})
	t.Run("QUEEN_METRICS_AUTH", func(t *testing.T) {
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: jwtOn(nil), MetricsAuth: true})
		var table []attack
		for _, p := range closed[:2] {
			table = append(table, get("no token", p, "", http.StatusUnauthorized, "Authentication required"),
				get("write-only", p, writeOnly, http.StatusForbidden, "Insufficient permissions"),
				get("read-only", p, read, http.StatusOK, ""))
		}
		for _, p := range append(probes, "/api/v1/openapi.json") {
			table = append(table, get("no token", p, "", http.StatusOK, ""))
		}
		runAttacks(t, c, table)
	})
	t.Run("QUEEN_METRICS_AUTH without authentication refuses to start", func(t *testing.T) {
		if _, err := server.New(server.Config{MetricsAuth: true}, s.newStore(t)); err == nil ||
			!strings.Contains(err.Error(), "QUEEN_METRICS_AUTH") {
			t.Fatalf("server.New: %v", err)
		}
	})
	t.Run("tenancy: a tenant scrapes its own series only", func(t *testing.T) {
		cfg := metricsConfig()
		cfg.Auth, cfg.MetricsAuth, cfg.TenancyEnabled = jwtOn(nil), true, true
		c := s.serverWith(t, cfg)
		a := c.with("Authorization", bearer(hs(t, claims("alice", "admin", "tenant", tenantA))))
		b := c.with("Authorization", bearer(hs(t, claims("bob", "admin", "tenant", tenantB))))
		qa, qb := uniq("metrics-a"), uniq("metrics-b")
		a.pushN(t, qa, "", 2)
		b.pushN(t, qb, "", 3)
		ops := c.with("Authorization", bearer(hs(t, claims("ops", "read-only"))))
		all := ops.scrape(t)
		if v, ok := series(all, "queen_queue_depth", "tenant", tenantA, "queue", qa); !ok || v != 2 {
			t.Fatalf("operator: depth of A's queue %v %v", v, ok)
		}
		if v, ok := series(all, "queen_queue_depth", "tenant", tenantB, "queue", qb); !ok || v != 3 {
			t.Fatalf("operator: depth of B's queue %v %v", v, ok)
		}
		r := c.with("Authorization", bearer(hs(t, claims("alice-ro", "read-only", "tenant", tenantA)))).
			do(t, "GET", "/metrics/prometheus", nil)
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), tenantB) || strings.Contains(string(r.Body), qb) {
			t.Fatalf("tenant A's scrape shows tenant B:\n%s", r.Body)
		}
		if !strings.Contains(string(r.Body), qa) {
			t.Fatalf("tenant A's scrape lacks its queue %s:\n%s", qa, r.Body)
		}
		for _, line := range strings.Split(string(r.Body), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, `tenant="`+tenantA+`"`) {
				t.Fatalf("tenant A's scrape has a series of no tenant of its own: %s", line)
			}
		}
		runAttacks(t, c, []attack{
			get("tenant-bound", "/metrics", bearer(hs(t, claims("alice", "read-only", "tenant", tenantA))),
				http.StatusForbidden, operatorOnly),
			get("bad tenant claim", "/metrics/prometheus", bearer(hs(t, claims("eve", "read-only", "tenant", "acme"))),
				http.StatusForbidden, "invalid tenant claim (must be a UUID)"),
			get("tenantless", "/metrics", bearer(hs(t, claims("ops", "read-only"))), http.StatusOK, ""),
		})
	})
}

// testHosts: a rebinding Host is refused before any route (the broker
// listens on loopback, so only loopback names pass by default), while
// loopback names and addresses pass; QUEEN_ALLOWED_HOSTS replaces the rule.
func (s *suite) testHosts(t *testing.T) {
	const rebound = `host refused: Host "attacker.example:6632" is not a loopback name, and the broker listens on loopback (set QUEEN_ALLOWED_HOSTS)`
	c := s.server(t)
	q := uniq("rebind")
	for _, p := range []struct{ method, path string }{{"GET", "/api/v1/resources/queues"}, {"POST", "/api/v1/push"},
		{"GET", "/health"}} {
		r := c.with("Host", "attacker.example:6632").do(t, p.method, p.path, pushBody(q))
		if msg := wantPlainError(t, r, http.StatusForbidden, ""); msg != rebound {
			t.Fatalf("%s %s with a rebinding Host: %q", p.method, p.path, msg)
		}
	}
	c.popNone(t, queuePath(q))
	for _, h := range []string{"localhost:6632", "LOCALHOST", "app.localhost:1", "127.0.0.1", "127.0.0.2:80", "[::1]:6632"} {
		wantStatus(t, c.with("Host", h).do(t, "GET", "/api/v1/resources/queues", nil), http.StatusOK)
	}

	listed := s.serverWith(t, server.Config{Version: "0.0.0-apitest", AllowedHosts: []string{"queen.example", "*.corp.example"}})
	for h, status := range map[string]int{"queen.example:6632": 200, "Queen.Example": 200, "a.b.corp.example": 200,
		"corp.example": 403, "localhost": 403, "evil.example": 403} {
		r := listed.with("Host", h).do(t, "GET", "/api/v1/resources/queues", nil)
		if r.Status != status {
			t.Fatalf("QUEEN_ALLOWED_HOSTS, Host %q: %s, want %d", h, r, status)
		}
		if status == 403 && !strings.Contains(string(r.Body), "not allowed by QUEEN_ALLOWED_HOSTS") {
			t.Fatalf("Host %q: %s", h, r.Body)
		}
	}
	anyHost := s.serverWith(t, server.Config{Version: "0.0.0-apitest", AllowedHosts: []string{"*"}})
	wantStatus(t, anyHost.with("Host", "anything.example").do(t, "GET", "/api/v1/resources/queues", nil), http.StatusOK)
}

// testMaxPollTimeout: QUEEN_MAX_POLL_TIMEOUT_MS clamps a long poll that
// asks for longer: it answers 204 once the maximum has passed, on the
// queue pop and the ephemeral pop alike.
func (s *suite) testMaxPollTimeout(t *testing.T) {
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", MaxPollTimeout: 300 * time.Millisecond})
	eph := uniq("clamped-eph")
	c.ephCreate(t, fmt.Sprintf(`{"name":%q}`, eph))
	for _, p := range []string{queuePath(uniq("clamped")) + "?wait=true&timeout=600000",
		"/api/v1/ephemeral/" + eph + "/pop?wait=true&timeout=600000"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := c.send(ctx, "GET", p, nil)
		cancel()
		if err != nil {
			t.Fatalf("GET %s, clamped to 300 ms: %v (the ten-minute wait was not clamped)", p, err)
		}
		wantStatus(t, r, http.StatusNoContent)
	}
}
