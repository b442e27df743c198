package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/ephemeral"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/timers"
)

// httpError is an error a handler answers with its own status and text:
// decoding errors ("bad body: …", "bad query: …") and the documented
// pre-flight texts.
type httpError struct {
	code       string // the body's "code" key, only on the no-such-route 404
	msg        string
	retryAfter int // seconds; > 0 sets Retry-After (429 and 503 of features.go)
	status     int
}

func (e *httpError) Error() string { return e.msg }

func badRequest(msg string) error {
	return &httpError{status: http.StatusBadRequest, msg: msg}
}

// errNoSuchRoute is Queen's fallback answer for anything the table does not
// match.
var errNoSuchRoute = &httpError{status: http.StatusNotFound, msg: "Not Found", code: "no_such_route"}

// preflightError marks an error of the transaction route: when it maps to
// 400 it is answered in the transaction envelope instead of {"error": …}.
type preflightError struct {
	err error
}

func (e *preflightError) Error() string { return e.err.Error() }
func (e *preflightError) Unwrap() error { return e.err }

// The texts of errors whose detail stays in the log.
const (
	msgClosed      = "the broker is shutting down; try again shortly"
	msgInvalid     = "the database refused a value of this request (a name or payload it cannot store)"
	msgNotFound    = "not found"
	msgUnavailable = "database unavailable; try again shortly"
)

// errorStatus is the one mapping from an error to the status and the text a
// client sees. Only errors meant for the client carry their own text; for the
// others the text is a fixed sentence and err's detail (driver messages,
// addresses) goes to the log under the request id, which a 500 names.
func errorStatus(err error, requestID string) (status int, msg string) {
	var he *httpError
	var invalid *broker.InvalidError
	var tooBig *http.MaxBytesError
	var denied *auth.Error
	var conflict *store.KVConflictError
	var kvLimit *kv.LimitError
	var kvInvalid *kv.InvalidError
	var timerInvalid *timers.InvalidError
	var ephInvalid *ephemeral.InvalidError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg
	case errors.As(err, &conflict):
		return http.StatusConflict, conflict.Reason
	case errors.As(err, &kvLimit):
		return http.StatusRequestEntityTooLarge, kvLimit.Msg
	case errors.As(err, &kvInvalid):
		return http.StatusBadRequest, kvInvalid.Msg
	case errors.As(err, &timerInvalid):
		return http.StatusBadRequest, timerInvalid.Msg
	case errors.As(err, &ephInvalid):
		return http.StatusBadRequest, ephInvalid.Msg
	case errors.Is(err, store.ErrTimerFired), errors.Is(err, store.ErrEphemeralExists):
		return http.StatusConflict, err.Error()
	case errors.As(err, &denied):
		// One of Queen's fixed texts; what failed goes to the log.
		return http.StatusUnauthorized, denied.Message()
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"request body too large: the limit is %d bytes (QUEEN_MAX_BODY_BYTES)", tooBig.Limit)
	case errors.As(err, &invalid):
		return http.StatusBadRequest, invalid.Msg
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, msgInvalid
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, msgNotFound
	case errors.Is(err, store.ErrClosed):
		return http.StatusServiceUnavailable, msgClosed
	case errors.Is(err, store.ErrUnavailable):
		return http.StatusServiceUnavailable, msgUnavailable
	}
	return http.StatusInternalServerError, "internal error; the broker's log has the details under request id " + requestID
}

// errorJSON is the broker's error body.
type errorJSON struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// writeError answers err: the one place that writes an error body.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, rt route, err error) {
	ctx := r.Context()
	id := RequestID(ctx)
	status, msg := errorStatus(err, id)
	if level, ok := errorLogLevel(ctx, status, msg); ok && a.log.Enabled(ctx, level) {
		a.log.LogAttrs(ctx, level, "request failed", slog.String("method", r.Method),
			slog.String("route", rt.Name), slog.Int("status", status), slog.String("requestId", id),
			slog.Any("err", err))
	}
	var pf *preflightError
	if status == http.StatusBadRequest && errors.As(err, &pf) {
		writeJSON(w, status, txJSON{TransactionID: broker.NewTransactionID(), Error: &msg, Results: []txItemJSON{}})
		return
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="queen"`)
	}
	if status == http.StatusRequestTimeout {
		// The rest of a trickled body is not worth reading: drop the
		// connection after the answer.
		w.Header().Set("Connection", "close")
	}
	var conflict *store.KVConflictError
	if errors.As(err, &conflict) {
		writeJSON(w, status, kvConflictBody(conflict))
		return
	}
	body := errorJSON{Error: msg}
	var he *httpError
	if errors.As(err, &he) {
		body.Code = he.code
		if he.retryAfter > 0 {
			retryAfterHeader(w, he.retryAfter)
		}
	}
	writeJSON(w, status, body)
}

// errorLogLevel is the level an answered error is logged at; false when the
// client's text says it all. A 500 is an error, or debug when the client has
// gone away and will not read it; a 503 is a warning; a value the database
// refused is info; a 401 is debug (its fixed text hides what failed, the log
// says it, and a scan of bad tokens must not flood the log).
func errorLogLevel(ctx context.Context, status int, msg string) (slog.Level, bool) {
	switch {
	case status == http.StatusUnauthorized:
		return slog.LevelDebug, true
	case status == http.StatusInternalServerError && ctx.Err() != nil:
		return slog.LevelDebug, true
	case status == http.StatusInternalServerError:
		return slog.LevelError, true
	case status == http.StatusServiceUnavailable:
		return slog.LevelWarn, true
	case msg == msgInvalid:
		return slog.LevelInfo, true
	}
	return 0, false
}
