package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/store"
)

// The key/value, timer and ephemeral routes (kv.go, timers.go,
// ephemeral.go) share three answers the message plane never gives, and
// their pages carry the sentence that tells them apart: 429 = you are going
// too fast, retry after N seconds; 403 = you are not allowed, do not retry;
// 503 = we are not able right now, retry later.

// feature names one of the three surfaces.
type feature uint8

const (
	featureKV feature = iota + 1
	featureTimers
	featureEphemeral
)

// unavailableRetryAfter is the Retry-After of a 503, in seconds.
const unavailableRetryAfter = 5

// errRateLimited is the 429's body; its Retry-After varies.
const msgRateLimited = "rate limit exceeded"

func (f feature) name() string {
	switch f {
	case featureKV:
		return "kv"
	case featureTimers:
		return "timers"
	}
	return "ephemeral"
}

// enabled reports whether the feature is configured and on.
func (a *api) enabled(f feature) bool {
	switch f {
	case featureKV:
		return a.kv != nil && a.kv.Enabled()
	case featureTimers:
		return a.timers != nil && a.timers.Enabled()
	}
	return a.ephemeral != nil && a.ephemeral.Enabled()
}

// disabledError is the 403 of a feature turned off.
func disabledError(f feature) error {
	msg := "ephemeral queues disabled"
	switch f {
	case featureKV:
		msg = "kv disabled for tenant"
	case featureTimers:
		msg = "timers disabled"
	}
	return &httpError{status: http.StatusForbidden, msg: msg}
}

// unavailableError is the 503 of a feature the store cannot serve now.
func unavailableError(f feature, why string) error {
	return &httpError{status: http.StatusServiceUnavailable, msg: f.name() + " unavailable: " + why,
		retryAfter: unavailableRetryAfter}
}

// gated wraps the handler of a feature route: 403 when the feature is off,
// 503 in push maintenance or while the database is known to be down, and
// the handler's store outages answered as the feature's 503 (both with
// Retry-After). The handler debits the tenant's bucket itself (take), once
// it knows the request's cost and before it changes anything.
func (a *api) gated(f feature, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !a.enabled(f) {
			return disabledError(f)
		}
		if why := a.broker.Unable(); why != "" {
			return unavailableError(f, why)
		}
		err := h(w, r)
		switch {
		case err == nil:
		case errors.Is(err, store.ErrClosed):
			return unavailableError(f, "shutting down")
		case errors.Is(err, store.ErrUnavailable):
			return unavailableError(f, "database unavailable")
		}
		return err
	}
}

// take debits cost tokens (one per request, or one per item of a batch)
// from the bucket of the request's tenant; 429 with Retry-After when the
// bucket cannot pay, and then nothing is debited.
func (a *api) take(r *http.Request, cost int) error {
	if a.limiter == nil {
		return nil
	}
	ok, wait := a.limiter.Take(store.TenantOrDefault(caller(r).Tenant), cost)
	if ok {
		return nil
	}
	return &httpError{status: http.StatusTooManyRequests, msg: msgRateLimited,
		retryAfter: ratelimit.RetryAfterSeconds(wait)}
}

// retryAfterHeader sets Retry-After to n seconds.
func retryAfterHeader(w http.ResponseWriter, n int) {
	w.Header().Set("Retry-After", strconv.Itoa(n))
}
