package httpapi

import (
	"net/http"
	"slices"
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
