package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Errors a client sees are *api.Error values: a code of the catalogue, its
// status and the text. Handlers return them (badRequest, the features'
// rules, the gates), the store's sentinels are mapped to them here, and
// anything else is a 500 whose detail stays in the log.

func badRequest(msg string) error { return api.ErrBadRequest.With(msg) }

// bodyTooLarge is the 413 of a body over the cap.
func bodyTooLarge(limit int64) *api.Error {
	return api.ErrBodyTooLarge.Withf("request body too large: the limit is %d bytes (QUEEN_MAX_BODY_BYTES)", limit)
}

// storeErrors maps the store's sentinel errors to what a client is told;
// their own texts (and what wraps them: driver messages, addresses) go to
// the log under the request id.
var storeErrors = []struct {
	err    error
	answer *api.Error
}{
	{store.ErrTimerFired, api.ErrTimerFired},
	{store.ErrEphemeralExists, api.ErrEphemeralExists},
	{store.ErrInvalid, api.ErrValueRefused},
	{store.ErrNotFound, api.ErrNotFound},
	{store.ErrClosed, api.ErrShuttingDown},
	{store.ErrUnavailable, api.ErrUnavailable},
}

// errorStatus is the one mapping from an error to what a client sees: the
// *api.Error the error is or wraps, else the answer to a store sentinel it
// wraps, else a 500 naming the request id, under which the log has the
// detail.
func errorStatus(err error, requestID string) *api.Error {
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	for _, s := range storeErrors {
		if errors.Is(err, s.err) {
			return s.answer
		}
	}
	return api.ErrInternal.With("internal error; the broker's log has the details under request id " + requestID)
}

// writeError answers err in env (nil: Queen's envelope): the one place that
// writes an error.
func (a *adapter) writeError(w http.ResponseWriter, r *http.Request, rt *Route, err error, env *Envelope) {
	ctx := r.Context()
	id := RequestID(ctx)
	e := errorStatus(err, id)
	if level, ok := errorLogLevel(ctx, e); ok && a.log.Enabled(ctx, level) {
		a.log.LogAttrs(ctx, level, "request failed", slog.String("method", r.Method),
			slog.String("route", rt.Name), slog.Int("status", e.Status), slog.String("requestId", id),
			slog.Any("err", err))
	}
	switch h := w.Header(); {
	case e.Status == http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="queen"`)
	case e.Status == http.StatusRequestTimeout:
		// The rest of a trickled body is not worth reading: drop the
		// connection after the answer.
		h.Set("Connection", "close")
	case e.RetryAfter > 0:
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if env == nil {
		env = QueenEnvelope
	}
	env.Write(w, e)
}

// errorLogLevel is the level an answered error is logged at; false when the
// client's text says it all. A 500 is an error, or debug when the client has
// gone away and will not read it; a 503 is a warning; a value the database
// refused is info; a 401 is debug (its fixed text hides what failed, the log
// says it, and a scan of bad tokens must not flood the log).
func errorLogLevel(ctx context.Context, e *api.Error) (slog.Level, bool) {
	switch {
	case e.Status == http.StatusUnauthorized:
		return slog.LevelDebug, true
	case e.Status == http.StatusInternalServerError && ctx.Err() != nil:
		return slog.LevelDebug, true
	case e.Status == http.StatusInternalServerError:
		return slog.LevelError, true
	case e.Status == http.StatusServiceUnavailable:
		return slog.LevelWarn, true
	case e.Code == api.CodeValueRefused:
		return slog.LevelInfo, true
	}
	return 0, false
}

// WriteJSON writes v as the JSON body with status: how every route
// answers, a group of another package's included.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	writeJSON(w, status, v)
}
