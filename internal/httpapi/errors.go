package httpapi

import (
	"errors"
	"net/http"

	"github.com/queen-go/queen/internal/broker"
)

// httpError is an error a handler answers with its own status and text:
// decoding errors ("bad body: …", "bad query: …") and the documented
// pre-flight texts.
type httpError struct {
	code   string // the body's "code" key, only on the no-such-route 404
	msg    string
	status int
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

// errorStatus is the one mapping from an error to the status and the text a
// client sees.
func errorStatus(err error) (status int, msg string) {
	var he *httpError
	var invalid *broker.InvalidError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "request body too large"
	case errors.As(err, &invalid):
		return http.StatusBadRequest, invalid.Msg
	}
	return http.StatusInternalServerError, err.Error()
}

// errorJSON is the broker's error body.
type errorJSON struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// writeError answers err: the one place that writes an error body.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, rt route, err error) {
	status, msg := errorStatus(err)
	if status >= http.StatusInternalServerError {
		a.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", rt.Name,
			"requestId", RequestID(r.Context()), "err", err)
	}
	var pf *preflightError
	if status == http.StatusBadRequest && errors.As(err, &pf) {
		writeJSON(w, status, txJSON{TransactionID: broker.NewTransactionID(), Error: &msg, Results: []txItemJSON{}})
		return
	}
	body := errorJSON{Error: msg}
	var he *httpError
	if errors.As(err, &he) {
		body.Code = he.code
	}
	writeJSON(w, status, body)
}
