package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
)

// requestIDHeader carries a request's id both ways. The key is in canonical
// form, so the header map is used directly.
const requestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client's request id; a longer one is replaced.
const maxRequestIDLen = 128

// exchange is the adapter's state of one request: the response writer that
// records status and size, and the request id. One allocation per request
// holds all of it; the request context carries a pointer to it.
type exchange struct {
	http.ResponseWriter
	bytes    int64
	caller   broker.Caller // who the request acts for, set by admit
	id       string
	idHeader [1]string // backs the X-Request-Id header value
	status   int
	rt       *Route    // the route served
	start    time.Time // when the request was read
	parked   bool      // the answer comes from a parked poll, which calls finish

	// The verified token's tenant claim, for process-wide routes that
	// filter by it (the metrics); set by admit.
	tokenTenant        string
	tokenTenantInvalid bool
}

func (e *exchange) WriteHeader(code int) {
	if e.status == 0 {
		e.status = code
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *exchange) Write(b []byte) (int, error) {
	if e.status == 0 {
		e.status = http.StatusOK
	}
	n, err := e.ResponseWriter.Write(b)
	e.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *exchange) Unwrap() http.ResponseWriter { return e.ResponseWriter }

type exchangeKey struct{}

// RequestID returns the id of the request ctx belongs to, or "" outside a
// request served by this package.
func RequestID(ctx context.Context) string {
	if e, ok := ctx.Value(exchangeKey{}).(*exchange); ok {
		return e.id
	}
	return ""
}

// requestID returns the client's X-Request-Id when it is short and printable
// ASCII, and a fresh UUIDv7 otherwise.
func requestID(r *http.Request) string {
	if v := r.Header[requestIDHeader]; len(v) > 0 && validRequestID(v[0]) {
		return v[0]
	}
	return uuid.Must(uuid.NewV7()).String()
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// serve adapts a route's handler to net/http: it sets the request id,
// admits the caller (authentication, access level, tenant), caps the body,
// runs the handler behind the route's gate, answers the error it returns in
// the route's envelope, and counts the request under the route's name. Its
// cost is per request, never per item.
func (a *adapter) serve(rt Route) http.Handler {
	guarded := a.guarded(&rt.RouteInfo)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.serveOne(&rt, guarded, w, r)
	})
}

// guarded says whether a request to rt goes through admit. Decided once
// per route: with authentication off, a process-wide route pays nothing
// for access control, and a tenant-scoped one one header lookup.
func (a *adapter) guarded(rt *RouteInfo) bool {
	return (a.auth != nil && rt.Access != AccessPublic) || rt.Scope == ScopeTenant
}

// serveOne serves one request to rt (see serve).
func (a *adapter) serveOne(rt *Route, guarded bool, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	e := &exchange{ResponseWriter: w, id: requestID(r), rt: rt, start: start}
	e.idHeader[0] = e.id
	w.Header()[requestIDHeader] = e.idHeader[:]
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, e))
	defer a.recoverHandler(e, r, rt)

	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(start.Add(a.writeTimeout))
	var err error
	if guarded {
		err = a.admit(e, r, &rt.RouteInfo)
	}
	var envelope *Envelope // the door's refusals are Queen's on every route
	switch {
	case err != nil:
		// Refused before anything else: an unauthenticated client
		// learns nothing of the route.
	case r.Method == http.MethodHead && rt.Access != AccessPublic:
		// ServeMux lets HEAD match a GET route; a HEAD must never
		// pop, so only public routes answer it.
		err = api.ErrNoSuchRoute
	case r.ContentLength > a.maxBody:
		// Refused before the handler runs, unread.
		err = bodyTooLarge(a.maxBody)
	default:
		if r.Body != nil && r.Body != http.NoBody {
			// The connection's own writer: MaxBytesReader tells it to
			// close the connection after the answer.
			r.Body = http.MaxBytesReader(w, &slowBody{body: r.Body, rc: rc, start: start,
				idle: a.readTimeout, minRate: a.minRate}, a.maxBody)
		}
		envelope = rt.Envelope
		if g := rt.Gate; g != nil {
			if err = g.check(); err == nil {
				err = g.outcome(rt.Handler(e, r))
			}
		} else {
			err = rt.Handler(e, r)
		}
	}
	if err != nil {
		a.writeError(e, r, rt, err, envelope)
	}
	if !e.parked {
		a.finish(r.Context(), e, r.Method)
	}
}

// errHandlerPanic is the error a handler that panicked answers: a 500, its
// detail in the log.
var errHandlerPanic = errors.New("panic in a handler (the log has its stack)")

// recoverHandler turns a handler's panic into a 500 with the request id in
// the log, where net/http alone would drop the connection without an answer
// and log no request id. An answer already begun cannot be taken back: the
// connection is then aborted, as net/http does.
func (a *adapter) recoverHandler(e *exchange, r *http.Request, rt *Route) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler { // net/http's own sentinel, passed on as is
		panic(v)
	}
	a.log.Error("panic recovered in a handler", "requestId", e.id, "route", rt.Name, "method", r.Method,
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if e.parked {
		return // the parked poll owns the connection now
	}
	if e.status != 0 {
		a.finish(r.Context(), e, r.Method)
		panic(http.ErrAbortHandler)
	}
	a.writeError(e, r, rt, errHandlerPanic, rt.Envelope)
	a.finish(r.Context(), e, r.Method)
}

// finish counts an answered request and logs it at debug level.
func (a *adapter) finish(ctx context.Context, e *exchange, method string) {
	if e.status == 0 {
		e.status = http.StatusOK
	}
	d := time.Since(e.start)
	name := e.rt.Name
	a.metrics.Request(name, statusCode(e.status), d)
	if a.log.Enabled(ctx, slog.LevelDebug) {
		a.log.LogAttrs(ctx, slog.LevelDebug, "request",
			slog.String("method", method),
			slog.String("route", name),
			slog.Int("status", e.status),
			slog.Duration("duration", d),
			slog.Int64("bytes", e.bytes),
			slog.String("requestId", e.id))
	}
}

// statusCodes holds the decimal text of every status code, so that counting
// a request does not format one.
var statusCodes = func() (s [600]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

func statusCode(code int) string {
	if code >= 0 && code < len(statusCodes) {
		return statusCodes[code]
	}
	return strconv.Itoa(code)
}
