package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/store"
)

// The key/value, timer and ephemeral routes (kv.go, timers.go,
// ephemeral.go) share three answers the message plane never gives, and
// their pages carry the sentence that tells them apart: 429 = you are going
// too fast, retry after N seconds; 403 = you are not allowed, do not retry;
// 503 = we are not able right now, retry later. The 403 and the 503 are
// their groups' gates; the 429 is the tenant's bucket.

// featureGate is the gate of a feature of the broker: closed while
// configuration turns it off, and while the broker cannot serve (push
// maintenance, the database known to be down).
func featureGate(name, disabled string, enabled func() bool, b *broker.Broker) *Gate {
	return &Gate{Name: name, Disabled: disabled, Enabled: enabled, Unable: func() string { return b.Unable() }}
}

// bucket debits the tenants' token buckets of the feature routes.
type bucket struct {
	limiter *ratelimit.Limiter // nil: no limit
	authOn  bool               // authentication is on: buckets follow the credential
}

// key names the bucket a request pays from: its tenant; but with
// authentication on, a token bound to no tenant pays from its own bucket
// whatever x-queen-tenant names, so that rotating the header does not
// refill the bucket (and overrides, keyed by tenant, do not apply to it).
func (b bucket) key(r *http.Request) string {
	if b.authOn {
		if e, ok := r.Context().Value(exchangeKey{}).(*exchange); ok && e.tokenTenant == "" {
			return "credential:" + e.caller.Subject
		}
	}
	return store.TenantOrDefault(caller(r).Tenant)
}

// take debits cost tokens (one per request, or one per item of a batch)
// from the bucket of the request's tenant; 429 with Retry-After when the
// bucket cannot pay, and then nothing is debited. A handler takes once it
// knows the request's cost and before it changes anything.
func (b bucket) take(r *http.Request, cost int) error {
	if b.limiter == nil {
		return nil
	}
	ok, wait := b.limiter.Take(b.key(r), cost)
	if ok {
		return nil
	}
	return api.ErrRateLimited.WithRetryAfter(ratelimit.RetryAfterSeconds(wait))
}
