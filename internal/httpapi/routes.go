package httpapi

import (
	"net/http"
	"path"
	"strings"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/auth"
)

// Access is the level a route requires. The levels are a role set, not a
// ladder: a write-only token may push but may not pop, ack or read, and a
// read-only token may read but may not push or pop (popping takes a lease and
// moves a cursor). Roles lists who satisfies each level.
type Access uint8

// The five access levels.
const (
	// AccessPublic routes are served to anyone; a token is never examined.
	AccessPublic Access = iota + 1
	// AccessRead routes read state without changing it.
	AccessRead
	// AccessWriteOnly routes only produce messages.
	AccessWriteOnly
	// AccessReadWrite routes consume: pop, ack, extend leases, run
	// transactions, configure queues.
	AccessReadWrite
	// AccessAdmin routes operate the broker: maintenance modes, deletion.
	AccessAdmin
)

// Role is a role a token carries (the JWT role names, before any renaming
// by configuration).
type Role = auth.Role

// The four roles.
const (
	RoleAdmin     = auth.RoleAdmin
	RoleReadOnly  = auth.RoleReadOnly
	RoleReadWrite = auth.RoleReadWrite
	RoleWriteOnly = auth.RoleWriteOnly
)

// String returns the level's name: public, read, write-only, read-write or
// admin.
func (a Access) String() string {
	switch a {
	case AccessPublic:
		return "public"
	case AccessRead:
		return "read"
	case AccessWriteOnly:
		return "write-only"
	case AccessReadWrite:
		return "read-write"
	case AccessAdmin:
		return "admin"
	}
	return "invalid"
}

// Roles returns the roles that satisfy the level; nil for AccessPublic,
// which needs none.
func (a Access) Roles() []Role {
	switch a {
	case AccessRead:
		return []Role{RoleReadOnly, RoleReadWrite, RoleAdmin}
	case AccessWriteOnly:
		return []Role{RoleWriteOnly, RoleReadWrite, RoleAdmin}
	case AccessReadWrite:
		return []Role{RoleReadWrite, RoleAdmin}
	case AccessAdmin:
		return []Role{RoleAdmin}
	}
	return nil
}

// Admits reports whether a token carrying roles may call a route of this
// level.
func (a Access) Admits(roles ...Role) bool {
	return a.admits(auth.SetOf(roles...))
}

// admits is Admits for a role set: one AND.
func (a Access) admits(roles auth.RoleSet) bool {
	if a == AccessPublic {
		return true
	}
	return int(a) < len(accessRoles) && roles&accessRoles[a] != 0
}

// accessRoles holds, per level, the set of roles that satisfy it.
var accessRoles = func() (t [AccessAdmin + 1]auth.RoleSet) {
	for a := range t {
		t[a] = auth.SetOf(Access(a).Roles()...)
	}
	return t
}()

// Scope says whether a route acts for a tenant.
type Scope uint8

// The two scopes.
const (
	// ScopeTenant routes act for the request's tenant (from the token's
	// tenant claim or the x-queen-tenant header; the default tenant while
	// tenancy is off) and see only that tenant's queues. It is the zero
	// value, so that a route that declares nothing fails closed: with
	// tenancy on it needs a tenant.
	ScopeTenant Scope = iota
	// ScopeProcess routes act on the broker process or the whole cell
	// (probes, metrics, maintenance modes, the spool): they resolve no
	// tenant and never read the x-queen-tenant header. Their rows say so
	// with ProcessWide().
	ScopeProcess
)

// String returns the scope's name: tenant or process.
func (s Scope) String() string {
	if s == ScopeProcess {
		return "process"
	}
	return "tenant"
}

// RouteInfo describes one route of the API.
type RouteInfo struct {
	// Access is the level a caller needs.
	Access Access
	// Envelope shapes the errors of the route's handler; nil is Queen's
	// (QueenEnvelope).
	Envelope *Envelope
	// Gate is the feature gate the route is behind; nil: none.
	Gate *Gate
	// Method is the HTTP method (GET routes also answer HEAD).
	Method string
	// Name is the route's stable name: the route label of its metrics and
	// access-log lines, and its operationId in the OpenAPI document.
	Name string
	// Pattern is the path as a net/http ServeMux pattern, e.g.
	// /api/v1/lease/{leaseId}/extend.
	Pattern string
	// Scope says whether the route acts for a tenant; tenant-scoped unless
	// the row says ProcessWide().
	Scope Scope
	// OperatorOnly marks a process-wide route that acts on or reads the whole
	// cell (maintenance modes, the spool, cell-wide analytics): with tenancy
	// on, a token bound to a tenant is refused it (403), whatever its role.
	// Rows say so with Operator(), which implies ProcessWide().
	OperatorOnly bool
	// SkipListed marks a public route that authentication can close: it is
	// public while JWT_SKIP_PATHS names its path, and needs the read level
	// otherwise (the default list names it). Rows say so with SkipListed().
	SkipListed bool
	// Metrics marks the metrics routes, which QUEEN_METRICS_AUTH puts
	// behind the read level whatever JWT_SKIP_PATHS says. Rows say so with
	// MetricsRoute(), which implies SkipListed().
	Metrics bool

	// noSkip is set by the adapter on a route QUEEN_METRICS_AUTH closed:
	// a token is required even where JWT_SKIP_PATHS names the path.
	noSkip bool
}

// noSuchRouteName names everything the table does not match, a known path
// with the wrong method included, in metrics and access logs.
const noSuchRouteName = "no_such_route"

// Routes describes every route of the API's own groups, then those of
// groups, in table order. The auth middleware and the OpenAPI test read
// it; it never changes at run time.
func Routes(groups ...Group) []RouteInfo {
	a := &adapter{}
	var out []RouteInfo
	for _, g := range append(a.groups(Config{}), groups...) {
		for _, rt := range g.Routes() {
			out = append(out, rt.RouteInfo)
		}
	}
	return out
}

// router serves the route table. Everything the table does not match falls
// to the groups' fallbacks, then to Queen's 404, a known path with the
// wrong method included: the ServeMux alone would answer that with 405,
// Queen answers this 404.
func (a *adapter) router() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range a.table {
		mux.Handle(rt.Method+" "+rt.Pattern, a.serve(rt))
	}
	// Anything the table does not know needs read-write access, like
	// Queen's: without it a client learns nothing of what exists.
	unknown := RouteInfo{Access: AccessReadWrite, Name: noSuchRouteName, Scope: ScopeProcess}
	notFound := a.serve(Route{unknown, noSuchRoute})
	mux.Handle("/", a.fallback(notFound))
	dotted := a.serve(Route{unknown, dottedPath})
	var preflight http.Handler
	if a.cors != nil {
		preflight = a.serve(Route{RouteInfo{Access: AccessPublic, Name: corsPreflightName, Scope: ScopeProcess},
			a.cors.preflight})
	}
	refused := a.serve(Route{RouteInfo{Access: AccessPublic, Name: crossSiteName, Scope: ScopeProcess},
		a.cors.refuseCrossSite})
	hostRefused := a.serve(Route{RouteInfo{Access: AccessPublic, Name: hostRefusedName, Scope: ScopeProcess},
		a.hosts.refuseHost})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.hosts.refused(r.Host) != "" { // DNS rebinding: before anything else
			hostRefused.ServeHTTP(w, r)
			return
		}
		if a.cors != nil && a.cors.handle(w, r) {
			preflight.ServeHTTP(w, r)
			return
		}
		if crossSite(a.cors, r) != "" { // a page forging a request: before any route, auth included
			refused.ServeHTTP(w, r)
			return
		}
		// ServeMux answers a path that is not clean (a "." or ".." segment,
		// a double slash) with a redirect to its cleaned form, which for
		// /api/v1/pop/queue/.. is another route. Names are never "." or
		// "..", and no route has an empty segment: answer, never redirect.
		if p := r.URL.Path; p != "/" && path.Clean(p) != p {
			if hasDotSegment(p) {
				dotted.ServeHTTP(w, r)
			} else {
				notFound.ServeHTTP(w, r)
			}
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// fallback asks the groups' fallbacks for a route, in order, and answers
// with notFound when none takes the request.
func (a *adapter) fallback(notFound http.Handler) http.Handler {
	if len(a.fallbacks) == 0 {
		return notFound
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, g := range a.fallbacks {
			if rt, ok := g.Fallback(r); ok {
				a.serveOne(&rt, a.guarded(&rt.RouteInfo), w, r)
				return
			}
		}
		notFound.ServeHTTP(w, r)
	})
}

func noSuchRoute(w http.ResponseWriter, r *http.Request) error { return api.ErrNoSuchRoute }

func dottedPath(w http.ResponseWriter, r *http.Request) error {
	return badRequest(`bad path: a name cannot be "." or ".."`)
}

// hasDotSegment reports whether p has a "." or ".." segment.
func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
