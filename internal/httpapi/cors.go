package httpapi

import (
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/queen-go/queen/api"
)

// corsPreflightName names the preflight answer in metrics and access logs.
const corsPreflightName = "cors_preflight"

// The preflight answer's headers (seed 003's, plus the two headers of this
// API a browser client sends).
const (
	corsAllowMethods = "GET, POST, PUT, DELETE, OPTIONS"
	corsAllowHeaders = "Content-Type, Authorization, X-Queen-Tenant, X-Request-Id"
	corsMaxAge       = "86400"
)

// cors answers cross-origin requests from the origins CORS_ALLOW_ORIGIN
// lists. It exists only when CORS is on.
type cors struct {
	anyOrigin bool     // "*" was listed
	origins   []string // exact origins otherwise
}

// newCORS returns nil, CORS off, when no origin is allowed.
func newCORS(origins []string) *cors {
	if len(origins) == 0 {
		return nil
	}
	return &cors{anyOrigin: slices.Contains(origins, "*"), origins: origins}
}

// allowed returns the Access-Control-Allow-Origin value for origin: "*",
// origin itself when it is listed, or "" when it is not.
func (c *cors) allowed(origin string) string {
	switch {
	case c.anyOrigin:
		return "*"
	case origin != "" && slices.Contains(c.origins, origin):
		return origin
	}
	return ""
}

// handle adds the CORS headers to the answer of r, before any other layer
// runs, and reports whether r is a preflight (any OPTIONS request), which
// the caller answers with preflight: public, since a browser sends no
// credentials with it.
func (c *cors) handle(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	var origin string
	if v := r.Header["Origin"]; len(v) > 0 {
		origin = v[0]
	}
	if allow := c.allowed(origin); allow != "" {
		h.Set("Access-Control-Allow-Origin", allow)
		if r.Method != http.MethodOptions {
			h.Set("Access-Control-Expose-Headers", requestIDHeader)
		}
	}
	if !c.anyOrigin {
		// The answer depends on the Origin: caches must keep one per origin.
		h.Add("Vary", "Origin")
	}
	return r.Method == http.MethodOptions
}

// preflight answers an OPTIONS request: 204 with the methods and headers
// browsers may use, cacheable for a day.
func (c *cors) preflight(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	noContent(w)
	return nil
}

// crossSiteName names the refusal of a forged browser request in metrics
// and access logs.
const crossSiteName = "cross_site_refused"

// refuseCrossSite answers a request crossSite refuses: 403 in Queen's
// envelope, saying why.
func (c *cors) refuseCrossSite(w http.ResponseWriter, r *http.Request) error {
	return api.ErrForbidden.With(crossSite(c, r))
}

// crossSite reports why a browser request that may change state is refused
// ("" when it is not): a request that carries an Origin (every browser
// sends one on a cross-origin POST, PUT or DELETE, and on same-origin ones
// too) whose origin is neither the broker's own (its host is the request's
// Host) nor allowed by CORS_ALLOW_ORIGIN; or, from any origin, a body
// declared as something other than JSON, which is what a page sends to
// avoid a preflight (text/plain, a form). curl and the SDKs send no Origin
// and are never refused; an absent Content-Type stays accepted.
func crossSite(c *cors, r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	v := r.Header["Origin"]
	if len(v) == 0 {
		return ""
	}
	origin := v[0]
	if !sameOrigin(origin, r.Host) && (c == nil || c.allowed(origin) == "") {
		return "cross-origin request refused: Origin " + strconv.Quote(origin) +
			" is neither this broker's nor allowed by CORS_ALLOW_ORIGIN"
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return "browser request refused: Content-Type " + strconv.Quote(ct) +
				" is not JSON (send application/json)"
		}
	}
	return ""
}

// sameOrigin reports whether origin (scheme://host[:port]) names host, the
// request's Host header.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
