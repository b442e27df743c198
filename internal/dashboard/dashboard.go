// Package dashboard serves the web dashboard at /: a single-page
// application whose files are embedded in the binary (no build step, no
// CDN), plugged into the API as a route group of its own.
//
// Every asset is served under /assets/<hash>/, where hash is a digest of
// every embedded file: the URLs of one build never change content, so
// they are cached as immutable, and a new build gets new URLs. The page
// itself (index.html, with the asset prefix written in) is never cached.
// Any GET or HEAD path outside /api/ that no route matches answers the
// page, so that the application's own routes (/queues/orders) survive a
// reload; everything else keeps Queen's JSON no_such_route 404.
package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/queen-go/queen/internal/httpapi"
)

//go:embed web
var web embed.FS

// Config configures the dashboard.
type Config struct {
	// Disabled turns the dashboard off (QUEEN_DASHBOARD_ENABLED=false):
	// / and the assets answer Queen's no_such_route 404 like any path no
	// route matches.
	Disabled bool
}

// Dashboard is the route group of the dashboard.
type Dashboard struct {
	disabled bool
	prefix   string            // "/assets/<hash>/"
	files    map[string]*asset // by path below prefix
	index    *asset
	favicon  *asset
}

// asset is one file as served: its body, its gzip form when that is
// smaller, its type.
type asset struct {
	body, gz []byte
	ctype    string
	etag     string
}

// New returns the dashboard's group, its assets read and compressed once.
func New(cfg Config) *Dashboard {
	d, err := newFrom(web, "web", cfg)
	if err != nil {
		panic("dashboard: embedded files: " + err.Error()) // a broken build
	}
	return d
}

func newFrom(fsys fs.FS, root string, cfg Config) (*Dashboard, error) {
	d := &Dashboard{disabled: cfg.Disabled, files: map[string]*asset{}}
	raw := map[string][]byte{}
	var names []string
	err := fs.WalkDir(fsys, root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, root+"/")
		raw[name] = b
		names = append(names, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(raw[n])
	}
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	d.prefix = "/assets/" + sum + "/"
	for _, n := range names {
		if n == "index.html" {
			continue
		}
		d.files[n] = newAsset(n, raw[n], sum)
	}
	page := bytes.ReplaceAll(raw["index.html"], []byte("{{assets}}"), []byte(d.prefix))
	d.index = newAsset("index.html", page, sum)
	d.favicon = d.files["favicon.svg"]
	return d, nil
}

func newAsset(name string, b []byte, build string) *asset {
	a := &asset{body: b, ctype: mime.TypeByExtension(path.Ext(name))}
	switch path.Ext(name) { // the platform's table may lack these
	case ".js":
		a.ctype = "text/javascript; charset=utf-8"
	case ".css":
		a.ctype = "text/css; charset=utf-8"
	case ".html":
		a.ctype = "text/html; charset=utf-8"
	case ".svg":
		a.ctype = "image/svg+xml"
	}
	if a.ctype == "" {
		a.ctype = "application/octet-stream"
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	if buf.Len() < len(b) {
		a.gz = buf.Bytes()
	}
	sum := sha256.Sum256(b)
	a.etag = `"` + build + "-" + hex.EncodeToString(sum[:6]) + `"`
	return a
}

// Prefix is the path the assets of this build are served under.
func (d *Dashboard) Prefix() string { return d.prefix }

// Routes returns no rows: the page and its assets are the router's
// fallback (see Fallback), not routes of the API.
func (d *Dashboard) Routes() []httpapi.Route { return nil }

// contentSecurityPolicy allows the page nothing but its own origin: no
// inline script, no inline style sheet, no frames, no other hosts.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// reserved are the prefixes of paths that never answer the page: the
// API's, so that a mistyped route fails loudly with a JSON 404.
var reserved = []string{"/api/", "/streams/", "/health", "/metrics", "/ws/"}

// Fallback answers GET and HEAD requests no route matched: an asset, the
// favicon, or the page.
func (d *Dashboard) Fallback(r *http.Request) (httpapi.Route, bool) {
	if d.disabled || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return httpapi.Route{}, false
	}
	p := r.URL.Path
	for _, pre := range reserved {
		if strings.HasPrefix(p, pre) {
			return httpapi.Route{}, false
		}
	}
	route := func(name string, h httpapi.Handler) (httpapi.Route, bool) {
		return httpapi.Route{RouteInfo: httpapi.RouteInfo{Access: httpapi.AccessPublic, Method: r.Method,
			Name: name, Scope: httpapi.ScopeProcess}, Handler: h}, true
	}
	switch {
	case strings.HasPrefix(p, "/assets/"):
		a := d.files[strings.TrimPrefix(p, d.prefix)]
		if !strings.HasPrefix(p, d.prefix) || a == nil {
			return route("dashboard_asset", notFound)
		}
		return route("dashboard_asset", func(w http.ResponseWriter, r *http.Request) error {
			serve(w, r, a, "public, max-age=31536000, immutable")
			return nil
		})
	case strings.HasPrefix(p, "/favicon"):
		return route("dashboard_asset", func(w http.ResponseWriter, r *http.Request) error {
			serve(w, r, d.favicon, "public, max-age=3600")
			return nil
		})
	}
	return route("dashboard", func(w http.ResponseWriter, r *http.Request) error {
		serve(w, r, d.index, "no-cache, no-store, must-revalidate")
		return nil
	})
}

// notFound is Queen's answer for an asset that does not exist: a text
// 404 (an old page asking for the assets of another build gets it too).
func notFound(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("Not Found"))
	return nil
}

func serve(w http.ResponseWriter, r *http.Request, a *asset, cache string) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", cache)
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("ETag", a.etag)
	h.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(name) == "gzip" && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

var (
	_ httpapi.FallbackGroup = (*Dashboard)(nil)
)
