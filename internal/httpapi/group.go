package httpapi

import (
	"errors"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Route groups are how routes reach the table. A group brings its rows,
// the handlers and their dependencies, and what its contract adds: a
// feature gate, an error envelope. The API's own groups live in this
// package, one file each; a feature in another package contributes its
// group through Config.Groups without editing anything here.

// Group is a set of routes. Its rows are added to the table in order,
// after the API's own groups.
type Group interface {
	Routes() []Route
}

// FallbackGroup is a group that also answers requests no row of the table
// matches, before Queen's no_such_route 404: a dashboard's client-side
// routes, say. Groups are asked in order; the first that takes the request
// answers it through the adapter like any route (admission, metrics and
// error mapping included). Paths that are not clean and OPTIONS requests
// never reach a fallback.
type FallbackGroup interface {
	Group
	// Fallback returns the route that answers r, or false to leave r to
	// the next group and, in the end, to the 404.
	Fallback(r *http.Request) (Route, bool)
}

// DocumentedGroup is a group whose routes belong in the OpenAPI document:
// the document served at /api/v1/openapi.json merges its fragment (paths,
// and components only it uses) as it merges the API's own.
type DocumentedGroup interface {
	Group
	OpenAPI() []byte
}

// Handler handles one request. It either writes the whole answer and
// returns nil, or writes nothing and returns the error the adapter
// answers: an *api.Error with its status and text, or any other error,
// which the adapter maps (a store outage to 503, anything unknown to 500
// with the detail in the log).
type Handler func(w http.ResponseWriter, r *http.Request) error

// Route is one row of the table: what the router, the admission check, the
// metrics and the OpenAPI test read (RouteInfo), and the handler.
type Route struct {
	RouteInfo
	Handler Handler
}

// row builds one row of the table, tenant-scoped, answered in Queen's
// envelope and behind no gate.
func row(access Access, method, pattern, name string, h Handler) Route {
	return Route{RouteInfo{Access: access, Method: method, Name: name, Pattern: pattern}, h}
}

// ProcessWide marks a row as acting on the broker process or the whole
// cell rather than for a tenant (see ScopeProcess).
func (rt Route) ProcessWide() Route {
	rt.Scope = ScopeProcess
	return rt
}

// Operator marks a row as an operator route: process-wide, and refused to
// tenant-bound tokens while tenancy is on (see RouteInfo.OperatorOnly).
func (rt Route) Operator() Route {
	rt.Scope, rt.OperatorOnly = ScopeProcess, true
	return rt
}

// SkipListed marks a public row that JWT_SKIP_PATHS governs (see
// RouteInfo.SkipListed).
func (rt Route) SkipListed() Route {
	rt.RouteInfo.SkipListed = true
	return rt
}

// MetricsRoute marks a public row of metrics, which QUEEN_METRICS_AUTH
// closes (see RouteInfo.Metrics).
func (rt Route) MetricsRoute() Route {
	rt.RouteInfo.SkipListed, rt.Metrics = true, true
	return rt
}

// Behind puts the rows behind g (nil: none) and answers their handlers'
// errors in env (nil: Queen's).
func Behind(g *Gate, env *Envelope, rows ...Route) []Route {
	for i := range rows {
		rows[i].Gate, rows[i].Envelope = g, env
	}
	return rows
}

// Envelope is the shape of a route's error bodies. Queen's is
// {"error":"…"}; a route whose contract answers its errors otherwise (a
// transaction's 400 is the transaction's own envelope, a key/value
// conflict names the operation and the key's value) has its own. An
// envelope shapes the errors of its routes' handlers and gates; refusals
// at the door (authentication, access level, tenant, a body announced
// over the cap) are answered in Queen's, the same on every route.
type Envelope struct {
	// Name names the shape, for tests and the table's readers.
	Name string
	// Write writes the answer of e with status e.Status; the adapter has
	// set the headers the error calls for (Retry-After, WWW-Authenticate).
	Write func(w http.ResponseWriter, e *api.Error)
}

// QueenEnvelope is Queen's error body, {"error":"…"}, with the code only
// on the 404 of a route that does not exist (as Queen sends it). A route
// without an envelope of its own answers in it.
var QueenEnvelope = &Envelope{Name: "queen", Write: func(w http.ResponseWriter, e *api.Error) {
	body := api.ErrorBody{Error: e.Message}
	if e.Code == api.CodeNoSuchRoute {
		body.Code = string(e.Code)
	}
	WriteJSON(w, e.Status, body)
}}

// Gate turns a feature's routes on and off. A request to a route behind a
// closed gate is refused before its handler runs: 403 when configuration
// turned the feature off (do not retry), 503 with Retry-After when it
// cannot be served now. The handler's store outages are answered as the
// feature's 503 too.
type Gate struct {
	// Name names the feature in its 503 ("kv unavailable: …").
	Name string
	// Enabled reports whether the feature is on.
	Enabled func() bool
	// Disabled is the 403's text ("kv disabled for tenant").
	Disabled string
	// Unable says why the feature cannot be served now (push maintenance,
	// the database down); "" when it can. nil: always able.
	Unable func() string
}

// unavailableRetryAfter is the Retry-After of a gate's 503, in seconds.
const unavailableRetryAfter = 5

// check refuses a request the gate does not let through.
func (g *Gate) check() error {
	if !g.Enabled() {
		return api.ErrFeatureDisabled.With(g.Disabled)
	}
	if g.Unable != nil {
		if why := g.Unable(); why != "" {
			return g.unavailable(why)
		}
	}
	return nil
}

// outcome answers the handler's store outages as the feature's 503.
func (g *Gate) outcome(err error) error {
	var e *api.Error
	switch {
	case err == nil, errors.As(err, &e):
		return err
	case errors.Is(err, store.ErrClosed):
		return g.unavailable("shutting down").WithCause(err)
	case errors.Is(err, store.ErrUnavailable):
		return g.unavailable("database unavailable").WithCause(err)
	}
	return err
}

func (g *Gate) unavailable(why string) *api.Error {
	return api.ErrFeatureUnavailable.With(g.Name + " unavailable: " + why).WithRetryAfter(unavailableRetryAfter)
}
