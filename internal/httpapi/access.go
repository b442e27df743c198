package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/auth"
)

// The headers access control reads; the keys are in canonical form, so the
// header map is read directly.
const (
	authorizationHeader = "Authorization"
	tenantHeader        = "X-Queen-Tenant"
)

// denied is the 401 of a token auth refuses: one of Queen's fixed texts,
// with what failed kept for the log.
func denied(err error) error {
	var ae *auth.Error
	if errors.As(err, &ae) {
		return api.ErrUnauthorized.With(ae.Message()).WithCause(err)
	}
	return err
}

// admit decides whether the request may reach rt and who it acts for, in
// the contract's order: authentication off, a path in JWT_SKIP_PATHS or a
// public route let it through with no identity; otherwise a missing or
// invalid token is a 401 and a token without a role of the route's level a
// 403. A tenant-scoped route then resolves the tenant. What it learns goes
// into e.caller, which caller(r) returns to handlers.
func (a *adapter) admit(e *exchange, r *http.Request, rt *RouteInfo) error {
	var id auth.Identity
	if a.auth != nil && rt.Access != AccessPublic && (rt.noSkip || !a.auth.Skips(r.URL.Path)) {
		token := bearer(r)
		if token == "" {
			return denied(auth.ErrMissing)
		}
		var err error
		if id, err = a.auth.Verify(r.Context(), token); err != nil {
			return denied(err)
		}
		if !rt.Access.admits(id.Roles) {
			return api.ErrForbidden
		}
		e.caller.Subject = id.Subject
		e.tokenTenant, e.tokenTenantInvalid = id.Tenant, id.TenantInvalid
		if rt.OperatorOnly && a.tenancy && (id.Tenant != "" || id.TenantInvalid) {
			return errOperatorOnly
		}
	}
	if rt.Scope == ScopeTenant {
		tenant, err := a.tenant(r, &id)
		if err != nil {
			return err
		}
		e.caller.Tenant = tenant
	}
	return nil
}

// closeRoutes makes the public routes that authentication can close into
// read-level ones (see RouteInfo.SkipListed and RouteInfo.Metrics): a
// route JWT_SKIP_PATHS does not name, and with metricsAuth the metrics
// routes whatever the list says. Without authentication nothing is closed.
func (a *adapter) closeRoutes(metricsAuth bool) {
	if a.auth == nil {
		return
	}
	for i := range a.table {
		rt := &a.table[i].RouteInfo
		if rt.Access != AccessPublic || !rt.SkipListed {
			continue
		}
		switch {
		case rt.Metrics && metricsAuth:
			rt.Access, rt.noSkip = AccessRead, true
		case !a.auth.Skips(rt.Pattern):
			rt.Access = AccessRead
		}
	}
}

// errOperatorOnly is the 403 of an operator route called with a
// tenant-bound token while tenancy is on: such a route acts on every tenant
// of the cell, so only a tenantless token may call it.
var errOperatorOnly = api.ErrForbidden.With("Insufficient permissions: this route acts on the whole cell " +
	"and needs a token without a tenant")

// bearer returns the request's token: the Authorization header's value
// after a "Bearer " prefix in any case, or the whole value, since Queen
// accepts a bare token too. "" when there is none.
func bearer(r *http.Request) string {
	v := r.Header[authorizationHeader]
	if len(v) == 0 {
		return ""
	}
	h := strings.TrimSpace(v[0])
	if len(h) >= 6 && strings.EqualFold(h[:6], "Bearer") && (len(h) == 6 || h[6] == ' ' || h[6] == '\t') {
		return strings.TrimSpace(h[6:])
	}
	return h
}

// tenant resolves the tenant a tenant-scoped request acts for. The
// x-queen-tenant header must be a UUID whether tenancy is on or not. With
// tenancy off the answer is "" (the default tenant). With it on: the
// token's tenant, else the header's, else 400; a token and a header that
// name different tenants are a 403.
func (a *adapter) tenant(r *http.Request, id *auth.Identity) (string, error) {
	var header string
	if v := r.Header[tenantHeader]; len(v) > 0 {
		if s := strings.TrimSpace(v[0]); s != "" {
			u, err := uuid.Parse(s)
			if err != nil {
				return "", api.ErrTenantHeader
			}
			header = u.String()
		}
	}
	if !a.tenancy {
		return "", nil
	}
	switch {
	case id.TenantInvalid:
		return "", api.ErrTenantClaim
	case id.Tenant != "" && header != "" && id.Tenant != header:
		return "", api.ErrTenantMismatch
	case id.Tenant != "":
		return id.Tenant, nil
	case header != "":
		return header, nil
	}
	return "", api.ErrTenantRequired
}
