package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRoutesAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	keys := map[string]bool{}
	for _, rt := range Routes() {
		key := rt.Method + " " + rt.Pattern
		if keys[key] {
			t.Errorf("%s is declared twice", key)
		}
		keys[key] = true
		if rt.Name == "" || names[rt.Name] || rt.Name == noSuchRouteName {
			t.Errorf("%s: name %q is empty, taken or reserved", key, rt.Name)
		}
		names[rt.Name] = true
		if rt.Access.String() == "invalid" {
			t.Errorf("%s: no access level", key)
		}
		if !strings.HasPrefix(rt.Pattern, "/") {
			t.Errorf("%s: pattern is not a path", key)
		}
	}
}

// TestRouteAccess pins the access level of every route the contract names.
func TestRouteAccess(t *testing.T) {
	want := map[string]Access{
		"GET /health":                   AccessPublic,
		"GET /metrics":                  AccessPublic,
		"GET /metrics/prometheus":       AccessPublic,
		"POST /api/v1/push":             AccessWriteOnly,
		"GET /api/v1/pop":               AccessReadWrite,
		"GET /api/v1/pop/queue/{queue}": AccessReadWrite,
		"GET /api/v1/pop/queue/{queue}/partition/{partition}": AccessReadWrite,
		"POST /api/v1/ack":                        AccessReadWrite,
		"POST /api/v1/ack/batch":                  AccessReadWrite,
		"POST /api/v1/lease/{leaseId}/extend":     AccessReadWrite,
		"POST /api/v1/transaction":                AccessReadWrite,
		"POST /api/v1/configure":                  AccessReadWrite,
		"DELETE /api/v1/resources/queues/{queue}": AccessAdmin,
		"GET /api/v1/system/maintenance":          AccessAdmin,
		"POST /api/v1/system/maintenance":         AccessAdmin,
		"GET /api/v1/system/maintenance/pop":      AccessAdmin,
		"POST /api/v1/system/maintenance/pop":     AccessAdmin,
	}
	for _, rt := range Routes() {
		key := rt.Method + " " + rt.Pattern
		w, ok := want[key]
		if !ok {
			continue // a route the contract does not pin
		}
		delete(want, key)
		if rt.Access != w {
			t.Errorf("%s: access %v, want %v", key, rt.Access, w)
		}
	}
	for key := range want {
		t.Errorf("%s is not in the route table", key)
	}
}

// TestAccessIsARoleSet: write-only is not a weaker read-write, read-only
// cannot pop, and admin passes everything.
func TestAccessIsARoleSet(t *testing.T) {
	for _, tc := range []struct {
		access Access
		role   Role
		want   bool
	}{
		{AccessWriteOnly, RoleWriteOnly, true},
		{AccessWriteOnly, RoleReadWrite, true},
		{AccessWriteOnly, RoleAdmin, true},
		{AccessWriteOnly, RoleReadOnly, false},
		{AccessRead, RoleWriteOnly, false},
		{AccessRead, RoleReadOnly, true},
		{AccessReadWrite, RoleWriteOnly, false},
		{AccessReadWrite, RoleReadOnly, false},
		{AccessReadWrite, RoleReadWrite, true},
		{AccessAdmin, RoleReadWrite, false},
		{AccessAdmin, RoleAdmin, true},
	} {
		if got := tc.access.Admits(tc.role); got != tc.want {
			t.Errorf("%v admits %s: %v, want %v", tc.access, tc.role, got, tc.want)
		}
	}
	if !AccessPublic.Admits() {
		t.Error("public does not admit a caller without roles")
	}
	if AccessWriteOnly.Admits() {
		t.Error("write-only admits a caller without roles")
	}
	if !AccessReadWrite.Admits(RoleWriteOnly, RoleReadWrite) {
		t.Error("read-write does not admit a token with write-only and read-write")
	}
}

// TestRouteScope: every /api/v1 (and /streams/v1) route acts for a tenant,
// except the process-level ones the contract leaves unscoped (maintenance
// and the rest of system/*, migration, the spool's status, process and
// database metrics, the stats refresh, this API's description); every
// route outside those prefixes is process-wide. A route added without
// ProcessWide() is tenant-scoped, which this test accepts for API routes
// and refuses for the process-level ones.
func TestRouteScope(t *testing.T) {
	processLevel := []string{
		"/api/v1/system/", "/api/v1/migration", "/api/v1/status/buffers", "/api/v1/analytics/system-metrics",
		"/api/v1/analytics/worker-metrics", "/api/v1/analytics/postgres-stats", "/api/v1/stats/refresh",
		"/api/v1/openapi.json",
	}
	for _, rt := range Routes() {
		want := ScopeProcess
		if strings.HasPrefix(rt.Pattern, "/api/v1/") || strings.HasPrefix(rt.Pattern, "/streams/v1/") {
			want = ScopeTenant
			for _, p := range processLevel {
				if strings.HasPrefix(rt.Pattern, p) {
					want = ScopeProcess
				}
			}
		}
		if rt.Scope != want {
			t.Errorf("%s %s: scope %v, want %v", rt.Method, rt.Pattern, rt.Scope, want)
		}
	}
}

func TestBearer(t *testing.T) {
	for header, want := range map[string]string{
		"":                 "",
		"Bearer":           "",
		"Bearer   ":        "",
		"Bearer abc":       "abc",
		"bearer abc":       "abc",
		"BEARER\tabc ":     "abc",
		"abc":              "abc",
		"  abc  ":          "abc",
		"Bearerabc":        "Bearerabc",
		"Basic dXNlcjpwdw": "Basic dXNlcjpwdw",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if header != "" {
			r.Header.Set("Authorization", strings.ReplaceAll(header, "\\t", "\t"))
		}
		if got := bearer(r); got != want {
			t.Errorf("Authorization %q: token %q, want %q", header, got, want)
		}
	}
}

// TestGatesAndEnvelopes pins which rows are behind a feature gate and
// which answer their errors in an envelope of their own.
func TestGatesAndEnvelopes(t *testing.T) {
	for _, rt := range Routes() {
		key := rt.Method + " " + rt.Pattern
		gate := ""
		for _, f := range []string{"kv", "timers", "ephemeral"} {
			if rt.Pattern == "/api/v1/"+f || strings.HasPrefix(rt.Pattern, "/api/v1/"+f+"/") {
				gate = f
			}
		}
		gotGate := ""
		if rt.Gate != nil {
			gotGate = rt.Gate.Name
		}
		if gotGate != gate {
			t.Errorf("%s: behind the gate %q, want %q", key, gotGate, gate)
		}
		env := "queen"
		switch {
		case gate == "kv":
			env = "kv"
		case rt.Name == "transaction":
			env = "transaction"
		}
		gotEnv := "queen"
		if rt.Envelope != nil {
			gotEnv = rt.Envelope.Name
		}
		if gotEnv != env {
			t.Errorf("%s: envelope %q, want %q", key, gotEnv, env)
		}
	}
}
