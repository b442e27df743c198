package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/dashboard"
	"github.com/queen-go/queen/internal/httpapi"
)

func serve(t *testing.T, cfg dashboard.Config) (*httptest.Server, *dashboard.Dashboard) {
	t.Helper()
	d := dashboard.New(cfg)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Groups: []httpapi.Group{d}}))
	t.Cleanup(srv.Close)
	return srv, d
}

func do(t *testing.T, method, url string, h ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestRouting checks the fallback's rules: the page for / and for the
// application's own paths, the assets under the build's prefix, and
// Queen's JSON 404 for /api/ paths and for methods other than GET and HEAD.
func TestRouting(t *testing.T) {
	srv, d := serve(t, dashboard.Config{})
	for _, p := range []string{"/", "/queues", "/queues/orders", "/dlq?queue=a", "/groups/g1"} {
		resp, body := do(t, "GET", srv.URL+p)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!bytes.Contains(body, []byte(d.Prefix()+"app.js")) {
			t.Fatalf("GET %s: %d %s %q", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Fatalf("GET %s: Cache-Control %q", p, cc)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe") {
			t.Fatalf("GET %s: CSP %q", p, csp)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/nope"}, {"GET", "/api/"}, {"POST", "/"}, {"DELETE", "/queues"}, {"PUT", "/assets/x"},
	} {
		resp, body := do(t, c.method, srv.URL+c.path)
		if resp.StatusCode != 404 || !bytes.Contains(body, []byte(`"code":"no_such_route"`)) {
			t.Fatalf("%s %s: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	resp, body := do(t, "HEAD", srv.URL+"/")
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Content-Length") == "" {
		t.Fatalf("HEAD /: %d %q", resp.StatusCode, body)
	}
}

// TestAssets fetches every asset the page names: immutable, typed,
// gzipped for a client that accepts it, 304 on a matching ETag; an asset
// of another build or none at all is a text 404.
func TestAssets(t *testing.T) {
	srv, d := serve(t, dashboard.Config{})
	_, page := do(t, "GET", srv.URL+"/")
	refs := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllSubmatch(page, -1)
	if len(refs) < 4 {
		t.Fatalf("the page names %d assets: %s", len(refs), page)
	}
	refs = append(refs, [][]byte{nil, []byte(d.Prefix() + "vendor/preact-htm.js")})
	for _, m := range refs {
		url := srv.URL + string(m[1])
		resp, raw := do(t, "GET", url)
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Fatalf("GET %s: %d %q", m[1], resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
		ct := resp.Header.Get("Content-Type")
		switch {
		case strings.HasSuffix(url, ".js") && !strings.HasPrefix(ct, "text/javascript"),
			strings.HasSuffix(url, ".css") && !strings.HasPrefix(ct, "text/css"),
			strings.HasSuffix(url, ".svg") && ct != "image/svg+xml":
			t.Fatalf("GET %s: Content-Type %q", m[1], ct)
		}
		resp, gz := do(t, "GET", url, "Accept-Encoding", "gzip, br")
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				t.Fatal(err)
			}
			unz, _ := io.ReadAll(zr)
			if !bytes.Equal(unz, raw) {
				t.Fatalf("GET %s: the gzip body is not the file", m[1])
			}
		} else if len(raw) > 1000 {
			t.Fatalf("GET %s: %d bytes not compressed", m[1], len(raw))
		}
		if resp, _ := do(t, "GET", url, "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != 304 {
			t.Fatalf("GET %s with its ETag: %d", m[1], resp.StatusCode)
		}
	}
	for _, p := range []string{"/assets/0123456789ab/app.js", d.Prefix() + "nope.js"} {
		resp, body := do(t, "GET", srv.URL+p)
		if resp.StatusCode != 404 || string(body) != "Not Found" {
			t.Fatalf("GET %s: %d %q", p, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, "GET", srv.URL+"/favicon.ico"); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("GET /favicon.ico: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestDisabled: with the dashboard off, / is a path no route matches.
func TestDisabled(t *testing.T) {
	srv, d := serve(t, dashboard.Config{Disabled: true})
	for _, p := range []string{"/", "/queues", d.Prefix() + "app.js"} {
		resp, body := do(t, "GET", srv.URL+p)
		if resp.StatusCode != 404 || !bytes.Contains(body, []byte(`no_such_route`)) {
			t.Fatalf("GET %s with the dashboard off: %d %s", p, resp.StatusCode, body)
		}
	}
}
