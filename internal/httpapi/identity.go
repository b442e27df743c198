package httpapi

import (
	"net/http"
	"strings"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/store"
)

// identityRoutes answer the dashboard's questions about the caller. They are
// public so that they can answer the auth question themselves: /auth/me
// returns 401 from its own handler, /auth/login says where logging in
// happens, /auth/logout has nothing to clear (the broker keeps no session).
type identityRoutes struct {
	a *adapter // the verifier, tenancy and the tenant rules
}

func (g *identityRoutes) Routes() []Route {
	return []Route{
		row(AccessPublic, "GET", "/auth/me", "auth_me", g.authMe).ProcessWide(),
		row(AccessPublic, "GET", "/auth/login", "auth_login", g.authLogin).ProcessWide(),
		row(AccessPublic, "POST", "/auth/logout", "auth_logout", authLogout).ProcessWide(),
	}
}

// levels lists every access level in order.
var levels = [...]Access{AccessPublic, AccessRead, AccessWriteOnly, AccessReadWrite, AccessAdmin}

// authMe answers who the token is: its subject, roles, the access levels
// they satisfy and its tenant. With authentication on, a request without a
// valid token is a 401 with the reason; with it off, everybody is an
// anonymous admin.
func (g *identityRoutes) authMe(w http.ResponseWriter, r *http.Request) error {
	a := g.a
	out := api.Me{AuthEnabled: a.auth != nil, TenancyEnabled: a.tenancy}
	id := auth.Identity{Roles: auth.SetOf(RoleAdmin)}
	if a.auth != nil {
		token := bearer(r)
		if token == "" {
			return denied(auth.ErrMissing)
		}
		var err error
		if id, err = a.auth.Verify(r.Context(), token); err != nil {
			return denied(err)
		}
		out.Authenticated, out.Method = true, id.Method
		out.Sub, out.Username = nullable(id.Subject), nullable(id.Username)
	}
	for _, role := range id.Roles.Roles() {
		out.Roles = append(out.Roles, string(role))
	}
	if out.Roles == nil {
		out.Roles = []string{}
	}
	if len(out.Roles) > 0 {
		out.Role = out.Roles[0] // the broadest
	}
	for _, l := range levels {
		if l.admits(id.Roles) {
			out.Levels = append(out.Levels, l.String())
		}
	}
	tenant := store.DefaultTenant
	if a.tenancy {
		tenant, _ = a.tenant(r, &id) // "" when it cannot be resolved
	}
	out.Tenant = nullable(tenant)
	writeJSON(w, http.StatusOK, out)
	return nil
}

const (
	loginExternal = "This broker verifies bearer tokens but has no login of its own. " +
		"The dashboard's login goes through your identity provider or an authenticating proxy (queen-proxy), " +
		"which sends the token in the Authorization header of every request."
	loginOff = "Authentication is off on this broker: every route is open and there is nothing to log in to."
)

// authLogin says where logging in happens: with a browser's Accept, as a
// short page; otherwise as JSON. It never redirects.
func (g *identityRoutes) authLogin(w http.ResponseWriter, r *http.Request) error {
	out := api.Login{AuthEnabled: g.a.auth != nil, Login: "external", Message: loginExternal}
	if g.a.auth == nil {
		out.Login, out.Message = "none", loginOff
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>queen: log in</title></head>
<body><h1>Log in</h1><p>` + out.Message + `</p></body></html>
`))
	return nil
}

// authLogout answers 204: the broker keeps no session, so there is nothing
// to clear; a proxy in front of it clears its own.
func authLogout(w http.ResponseWriter, r *http.Request) error {
	noContent(w)
	return nil
}
