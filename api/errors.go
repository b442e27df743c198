package api

import (
	"fmt"
	"strings"
)

// Statuses are plain numbers here: the package stays free of net/http, so
// that the broker's rule packages, which speak these errors, import no HTTP.

// Code names a kind of error. Codes are stable: a client matches them
// (errors.Is), while the texts that go with them may name the value at
// fault and change wording.
type Code string

// Error is an error answer: a code, the HTTP status it is answered with,
// the text the client reads and, for 429 and some 503s, how long to wait
// before trying again. The broker answers every error with one; a client
// rebuilds one from an answer with ErrorFor. errors.Is matches two Errors
// by code, so errors.Is(err, api.ErrNotFound) holds for every 404 of a
// missing entity, whatever its text.
type Error struct {
	// Code is the kind of error.
	Code Code
	// Status is the HTTP status the error is answered with.
	Status int
	// Message is the text of the answer's "error" key.
	Message string
	// RetryAfter is the Retry-After of the answer in seconds; 0 when the
	// answer has none.
	RetryAfter int

	cause error // what went wrong below, for logs and the server's envelopes
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unwrap returns the error that caused e, if the server recorded one.
func (e *Error) Unwrap() error { return e.cause }

// With returns a copy of e with another message.
func (e *Error) With(message string) *Error {
	c := *e
	c.Message = message
	return &c
}

// Withf returns a copy of e with the message fmt.Sprintf(format, args...).
func (e *Error) Withf(format string, args ...any) *Error {
	return e.With(fmt.Sprintf(format, args...))
}

// WithRetryAfter returns a copy of e that asks the client to wait seconds
// before trying again.
func (e *Error) WithRetryAfter(seconds int) *Error {
	c := *e
	c.RetryAfter = seconds
	return &c
}

// WithCause returns a copy of e that records cause, which Unwrap returns.
// The cause stays with the server: it is logged, never sent.
func (e *Error) WithCause(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// ErrorBody is the body of an error answer: {"error": "…"}. Only the 404 of
// a route that does not exist carries a code (Queen's "no_such_route").
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// The codes of the catalogue, in the order of their HTTP status.
const (
	CodeBadRequest         Code = "bad_request"
	CodeValueRefused       Code = "value_refused"
	CodeTenantRequired     Code = "tenant_required"
	CodeTenantHeader       Code = "tenant_header_invalid"
	CodeUnauthorized       Code = "unauthorized"
	CodeForbidden          Code = "forbidden"
	CodeTenantClaim        Code = "tenant_claim_invalid"
	CodeTenantMismatch     Code = "tenant_mismatch"
	CodeFeatureDisabled    Code = "feature_disabled"
	CodeNotFound           Code = "not_found"
	CodeMessageNotFound    Code = "message_not_found"
	CodeNoSuchRoute        Code = "no_such_route"
	CodeBodyTooSlow        Code = "body_too_slow"
	CodeConflict           Code = "conflict"
	CodeKVConflict         Code = "kv_conflict"
	CodeTimerFired         Code = "timer_fired"
	CodeEphemeralExists    Code = "ephemeral_exists"
	CodeNotDeadLettered    Code = "not_dead_lettered"
	CodeAlreadyDeadLetter  Code = "already_dead_lettered"
	CodeStreamMismatch     Code = "stream_config_mismatch"
	CodeBodyTooLarge       Code = "body_too_large"
	CodeLimitExceeded      Code = "limit_exceeded"
	CodeRateLimited        Code = "rate_limited"
	CodeInternal           Code = "internal"
	CodeUnavailable        Code = "unavailable"
	CodeShuttingDown       Code = "shutting_down"
	CodeFeatureUnavailable Code = "feature_unavailable"
	CodeBusy               Code = "busy"
)

// The catalogue: one Error per code, with its status and its usual text.
// Rows whose text varies (the 400s of a decoder name the field at fault)
// carry a generic one; the broker answers them With a precise message.
var (
	// ErrBadRequest is a request the broker refuses because of its content:
	// a body that does not decode ("bad body: …"), a query parameter out of
	// range ("bad query: …"), a name that is not one, a rule of a feature.
	ErrBadRequest = row(CodeBadRequest, 400, "bad request")
	// ErrValueRefused is a value the database refused to store; the
	// detail stays in the broker's log.
	ErrValueRefused = row(CodeValueRefused, 400,
		"the database refused a value of this request (a name or payload it cannot store)")
	// ErrTenantRequired is a tenant-scoped request, with tenancy on, that
	// names no tenant (neither the token's claim nor the header).
	ErrTenantRequired = row(CodeTenantRequired, 400, "tenant required")
	// ErrTenantHeader is an x-queen-tenant header that is not a UUID.
	ErrTenantHeader = row(CodeTenantHeader, 400, "invalid x-queen-tenant header (must be a UUID)")
	// ErrUnauthorized is a missing or invalid token; its text is one of
	// Queen's fixed ones ("Authentication required", "Token has expired" …).
	ErrUnauthorized = row(CodeUnauthorized, 401, "Authentication required")
	// ErrForbidden is a token without a role of the route's access level.
	ErrForbidden = row(CodeForbidden, 403, "Insufficient permissions")
	// ErrTenantClaim is a token whose tenant claim is not a UUID.
	ErrTenantClaim = row(CodeTenantClaim, 403, "invalid tenant claim (must be a UUID)")
	// ErrTenantMismatch is a token and a header naming different tenants.
	ErrTenantMismatch = row(CodeTenantMismatch, 403, "tenant mismatch")
	// ErrFeatureDisabled is a route of a feature turned off by
	// configuration (key/value state, timers, ephemeral queues): do not
	// retry.
	ErrFeatureDisabled = row(CodeFeatureDisabled, 403, "feature disabled")
	// ErrNotFound is an entity that does not exist; the text names it
	// (TextQueueNotFound …), or is "not found".
	ErrNotFound = row(CodeNotFound, 404, "not found")
	// ErrMessageNotFound is a message the control plane cannot find.
	ErrMessageNotFound = row(CodeMessageNotFound, 404, TextMessageNotFound)
	// ErrNoSuchRoute is Queen's answer to a path and method no route
	// serves; its body carries the code.
	ErrNoSuchRoute = row(CodeNoSuchRoute, 404, "Not Found")
	// ErrBodyTooSlow is a request body that stopped arriving, or arrived
	// too slowly; the connection is closed after the answer.
	ErrBodyTooSlow = row(CodeBodyTooSlow, 408,
		"request body too slow: it must keep arriving (QUEEN_HTTP_READ_TIMEOUT_MS, QUEEN_HTTP_BODY_MIN_RATE)")
	// ErrConflict is a request that conflicts with the state it meets.
	ErrConflict = row(CodeConflict, 409, "conflict")
	// ErrKVConflict is a key/value batch rolled back by one operation; its
	// body also names the operation and the key's current value
	// (KVConflict).
	ErrKVConflict = row(CodeKVConflict, 409, KVReasonExpectation)
	// ErrTimerFired is the cancellation of a timer that has fired.
	ErrTimerFired = row(CodeTimerFired, 409, TextTimerFired)
	// ErrEphemeralExists is the creation of an ephemeral queue whose name a
	// live queue has.
	ErrEphemeralExists = row(CodeEphemeralExists, 409, TextEphemeralExists)
	// ErrNotDeadLettered is the requeue of a message that has no dead
	// letter.
	ErrNotDeadLettered = row(CodeNotDeadLettered, 409, TextNotDeadLettered)
	// ErrAlreadyDeadLettered is the move to the dead-letter queue of a
	// message the group has already dead-lettered.
	ErrAlreadyDeadLettered = row(CodeAlreadyDeadLetter, 409, TextAlreadyDeadLettered)
	// ErrStreamMismatch is the registration of a stream query under a name
	// registered with another configuration; its body is
	// StreamsMismatch.
	ErrStreamMismatch = row(CodeStreamMismatch, 409, "config hash mismatch")
	// ErrBodyTooLarge is a request body over QUEEN_MAX_BODY_BYTES.
	ErrBodyTooLarge = row(CodeBodyTooLarge, 413, "request body too large")
	// ErrLimitExceeded is a request over a configured limit of its feature
	// (operations of a key/value batch, bytes of a value, items of an
	// ephemeral push).
	ErrLimitExceeded = row(CodeLimitExceeded, 413, "over a limit")
	// ErrRateLimited is a tenant whose token bucket is empty: retry after
	// RetryAfter seconds.
	ErrRateLimited = row(CodeRateLimited, 429, "rate limit exceeded")
	// ErrInternal is a failure of the broker; its log has the details
	// under the request id the text names.
	ErrInternal = row(CodeInternal, 500, "internal error")
	// ErrUnavailable is a database that cannot be reached now.
	ErrUnavailable = row(CodeUnavailable, 503, "database unavailable; try again shortly")
	// ErrShuttingDown is a request that reached a broker as it stops.
	ErrShuttingDown = row(CodeShuttingDown, 503,
		"the broker is shutting down; try again shortly")
	// ErrFeatureUnavailable is a feature route the broker cannot serve now
	// (push maintenance, the database down): retry after RetryAfter
	// seconds.
	ErrFeatureUnavailable = row(CodeFeatureUnavailable, 503, "unavailable")
	// ErrBusy is a further concurrent request on a connection (an HTTP/2
	// stream) while QUEEN_HTTP_MAX_IN_FLIGHT requests are being handled:
	// retry after RetryAfter seconds.
	ErrBusy = row(CodeBusy, 503,
		"too many requests in flight (QUEEN_HTTP_MAX_IN_FLIGHT); try again shortly")
)

// catalogue lists every row, in the order of the codes.
var catalogue = []*Error{
	ErrBadRequest, ErrValueRefused, ErrTenantRequired, ErrTenantHeader, ErrUnauthorized, ErrForbidden,
	ErrTenantClaim, ErrTenantMismatch, ErrFeatureDisabled, ErrNotFound, ErrMessageNotFound, ErrNoSuchRoute,
	ErrBodyTooSlow, ErrConflict, ErrKVConflict, ErrTimerFired, ErrEphemeralExists, ErrNotDeadLettered,
	ErrAlreadyDeadLettered, ErrStreamMismatch, ErrBodyTooLarge, ErrLimitExceeded, ErrRateLimited, ErrInternal,
	ErrUnavailable, ErrShuttingDown, ErrFeatureUnavailable, ErrBusy,
}

func row(code Code, status int, text string) *Error {
	return &Error{Code: code, Status: status, Message: text}
}

// Catalogue returns a copy of every row of the catalogue: code, status and
// usual text, like nats-server's errors.json.
func Catalogue() []Error {
	out := make([]Error, len(catalogue))
	for i, e := range catalogue {
		out[i] = *e
	}
	return out
}

// byStatus is the row a status means when the text matches no row with a
// fixed text.
var byStatus = map[int]*Error{
	400: ErrBadRequest,
	401: ErrUnauthorized,
	403: ErrForbidden,
	404: ErrNotFound,
	408: ErrBodyTooSlow,
	409: ErrConflict,
	413: ErrLimitExceeded,
	429: ErrRateLimited,
	500: ErrInternal,
	503: ErrUnavailable,
}

// ErrorFor returns the Error of an answer with status, the text of its
// "error" key and its "code" (usually ""): the row whose code or fixed text
// matches, else the row the status and the text's form mean, else a row of
// its own with code "http_<status>".
func ErrorFor(status int, message, code string) *Error {
	for _, e := range catalogue {
		if e.Status == status && (Code(code) == e.Code || message == e.Message) {
			return e.With(message)
		}
	}
	switch {
	case status == 403 && strings.HasSuffix(message, " disabled") ||
		status == 403 && strings.HasSuffix(message, " disabled for tenant"):
		return ErrFeatureDisabled.With(message)
	case status == 404 && strings.HasSuffix(message, " not found"):
		return ErrNotFound.With(message)
	case status == 413 && strings.HasPrefix(message, "request body too large"):
		return ErrBodyTooLarge.With(message)
	case status == 503 && strings.Contains(message, " unavailable: "):
		return ErrFeatureUnavailable.With(message)
	}
	if e, ok := byStatus[status]; ok {
		return e.With(message)
	}
	return &Error{Code: Code(fmt.Sprintf("http_%d", status)), Status: status, Message: message}
}
