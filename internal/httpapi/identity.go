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

// loginExternal says how to sign in when authentication is on.
const loginExternal = "This broker verifies bearer tokens but has no login of its own. " +
	"Sign in to the dashboard by pasting a JWT or an API token when it asks for one, " +
	"or go through the identity provider or authenticating proxy (queen-proxy) in front of the broker, " +
	"which sends the token in the Authorization header of every request."

// loginPage is the page /auth/login serves with authentication on.
const loginPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>queen: sign in</title></head>
<body><h1>Sign in</h1><p>` + loginExternal + `</p>
<p><a href="/">Open the dashboard</a> and paste your token there; it is kept in the tab's session storage only.</p>
</body></html>
`

// authLogin says where logging in happens. With authentication off there
// is nothing to log in to: a redirect to the dashboard at /. With it on,
// a short page that says how to sign in (JSON instead for a client that
// asks for JSON and not for HTML).
func (g *identityRoutes) authLogin(w http.ResponseWriter, r *http.Request) error {
	if g.a.auth == nil {
		w.Header().Set("Location", "/")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusFound)
		return nil
	}
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html") {
		writeJSON(w, http.StatusOK, api.Login{AuthEnabled: true, Login: "external", Message: loginExternal})
		return nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(loginPage))
	return nil
}

// authLogout answers 204: the broker keeps no session, so there is nothing
// to clear; a proxy in front of it clears its own.
func authLogout(w http.ResponseWriter, r *http.Request) error {
	noContent(w)
	return nil
}
