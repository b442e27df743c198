package apitest

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/ephemeral"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/timers"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// testFeatureGates covers the answers only the key/value, timer and
// ephemeral routes give: 429 from the per-tenant token bucket (a refusal
// debits nothing; the message plane never answers 429), 403 when a
// feature is off, 503 in push maintenance.
func (s *suite) testFeatureGates(t *testing.T) {
	t.Run("TokenBucketFollowsTheCredential", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true,
			Auth:      auth.Config{Tokens: apiTokens(t, "tok-ops-5f2e:admin")},
			RateLimit: ratelimit.Config{Default: ratelimit.Limit{Rate: 1, Burst: 3}, Now: clock.Now}})
		ops := c.with("Authorization", "Bearer tok-ops-5f2e")
		tenants := []string{tenantA, tenantB, "0192f0a0-cccc-7000-8000-00000000000c", "0192f0a0-dddd-7000-8000-00000000000d"}
		for i, tn := range tenants {
			r := ops.with("X-Queen-Tenant", tn).do(t, "GET", "/api/v1/kv/ns/k", nil)
			if i < 3 {
				wantStatus(t, r, http.StatusNotFound)
			} else {
				// A fresh tenant in the header is no fresh bucket.
				wantPlainError(t, r, http.StatusTooManyRequests, "rate limit exceeded")
			}
		}
	})
	t.Run("TokenBucket", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true,
			RateLimit: ratelimit.Config{Default: ratelimit.Limit{Rate: 1, Burst: 3}, Now: clock.Now,
				Overrides: map[string]ratelimit.Limit{tenantB: {Rate: 100, Burst: 100}}}})
		a := c.with("X-Queen-Tenant", tenantA)
		get := func(cl *client) *response { return cl.do(t, "GET", "/api/v1/kv/ns/k", nil) }
		for i := 0; i < 3; i++ {
			wantStatus(t, get(a), http.StatusNotFound) // within the burst
		}
		r := get(a)
		wantPlainError(t, r, http.StatusTooManyRequests, "rate limit exceeded")
		if ra := r.Header.Get("Retry-After"); ra != "1" {
			t.Fatalf("Retry-After %q, want 1", ra)
		}
		// Refusals debit nothing: after one second exactly one token is back,
		// however many requests were refused meanwhile.
		for i := 0; i < 20; i++ {
			wantStatus(t, get(a), http.StatusTooManyRequests)
			wantStatus(t, a.do(t, "POST", "/api/v1/ephemeral/push", `{"items":[{"queue":"x","payload":1}]}`), http.StatusTooManyRequests)
		}
		clock.Add(time.Second)
		// A batch costs one token per operation: two ops do not fit in one
		// token, and the refusal leaves the token for a single op.
		two := map[string]any{"ops": []map[string]any{kvOp("get", "ns", "a"), kvOp("get", "ns", "b")}}
		r = a.do(t, "POST", "/api/v1/kv", two)
		wantPlainError(t, r, http.StatusTooManyRequests, "rate limit exceeded")
		if ra := r.Header.Get("Retry-After"); ra != "1" {
			t.Fatalf("Retry-After of a two-op batch with one token: %q, want 1", ra)
		}
		wantStatus(t, get(a), http.StatusNotFound)
		wantStatus(t, get(a), http.StatusTooManyRequests)
		// Another tenant has its own bucket (here an override).
		b := c.with("X-Queen-Tenant", tenantB)
		for i := 0; i < 10; i++ {
			wantStatus(t, get(b), http.StatusNotFound)
		}
		// The message plane never answers 429.
		q := uniq("no-429")
		for i := 0; i < 10; i++ {
			a.push(t, item(q, i))
		}
		if p := a.popOK(t, queuePath(q)+"?batch=20"); len(p.Messages) != 10 {
			t.Fatalf("pop: %d messages", len(p.Messages))
		}
	})

	t.Run("FeaturesOff", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", KV: kv.Config{Disabled: true},
			Timers: timers.Config{Disabled: true}, Ephemeral: ephemeral.Config{Disabled: true}})
		for _, tc := range []struct{ method, path, body, msg string }{
			{"POST", "/api/v1/kv", `{"ops":[]}`, "kv disabled for tenant"},
			{"GET", "/api/v1/kv/ns/k", "", "kv disabled for tenant"},
			{"GET", "/api/v1/kv/ns", "", "kv disabled for tenant"},
			{"POST", "/api/v1/timers", `{"items":[]}`, "timers disabled"},
			{"GET", "/api/v1/timers/x", "", "timers disabled"},
			{"POST", "/api/v1/ephemeral", `{}`, "ephemeral queues disabled"},
			{"GET", "/api/v1/ephemeral/q/pop", "", "ephemeral queues disabled"},
			{"POST", "/api/v1/transaction", `{"operations":[{"type":"kv","op":"set","namespace":"n","key":"k","value":1}]}`,
				"kv disabled for tenant"},
		} {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := c.do(t, tc.method, tc.path, body)
			if msg := wantPlainError(t, r, http.StatusForbidden, ""); msg != tc.msg {
				t.Errorf("%s %s: %q, want %q", tc.method, tc.path, msg, tc.msg)
			}
		}
	})

	t.Run("MaintenanceIs503", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", SpoolDir: t.TempDir()})
		wantStatus(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":true}`), http.StatusOK)
		for _, tc := range []struct{ method, path, body, msg string }{
			{"POST", "/api/v1/kv", `{"ops":[{"op":"get","namespace":"n","key":"k"}]}`, "kv unavailable: maintenance mode"},
			{"POST", "/api/v1/timers", `{"items":[{"queue":"q","payload":1,"delaySeconds":1}]}`, "timers unavailable: maintenance mode"},
			{"GET", "/api/v1/ephemeral", "", "ephemeral unavailable: maintenance mode"},
		} {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := c.do(t, tc.method, tc.path, body)
			if msg := wantPlainError(t, r, http.StatusServiceUnavailable, ""); msg != tc.msg {
				t.Errorf("%s %s: %q, want %q", tc.method, tc.path, msg, tc.msg)
			}
			if ra := r.Header.Get("Retry-After"); ra != "5" {
				t.Errorf("%s %s: Retry-After %q, want 5", tc.method, tc.path, ra)
			}
		}
		wantStatus(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":false}`), http.StatusOK)
		wantStatus(t, c.do(t, "GET", "/api/v1/ephemeral", nil), http.StatusOK)
	})
}
