package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/httpapi"
)

// hooks is a route group as another package would contribute one, using
// nothing but httpapi's exported API: a route with its own authentication
// (a shared secret instead of a bearer token) answering 202, behind a
// gate, with an envelope of its own ({"error":{"code","message"}}); a
// fallback that serves a page for GET and HEAD paths outside /api (as a
// dashboard serves its client-side routes); and an OpenAPI fragment.
type hooks struct {
	on atomic.Bool
}

var hooksEnvelope = &httpapi.Envelope{Name: "hooks", Write: func(w http.ResponseWriter, e *api.Error) {
	var body struct {
		Error struct {
			Code    api.Code `json:"code"`
			Message string   `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = e.Code, e.Message
	httpapi.WriteJSON(w, e.Status, body)
}}

func (h *hooks) Routes() []httpapi.Route {
	gate := &httpapi.Gate{Name: "hooks", Disabled: "hooks disabled", Enabled: h.on.Load}
	receive := httpapi.Route{RouteInfo: httpapi.RouteInfo{Access: httpapi.AccessPublic, Method: "POST",
		Pattern: "/hooks/{name}", Name: "hook_receive"}, Handler: h.receive}
	return httpapi.Behind(gate, hooksEnvelope, receive.ProcessWide())
}

func (h *hooks) receive(w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get("X-Hook-Secret") != "s3cret" {
		return api.ErrUnauthorized.With("bad signature")
	}
	httpapi.WriteJSON(w, http.StatusAccepted, map[string]string{"accepted": r.PathValue("name")})
	return nil
}

func (h *hooks) Fallback(r *http.Request) (httpapi.Route, bool) {
	if (r.Method != "GET" && r.Method != "HEAD") || strings.HasPrefix(r.URL.Path, "/api/") {
		return httpapi.Route{}, false
	}
	return httpapi.Route{RouteInfo: httpapi.RouteInfo{Access: httpapi.AccessPublic, Method: r.Method,
		Name: "page", Scope: httpapi.ScopeProcess}, Handler: func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>page</title>"))
		return nil
	}}, true
}

func (h *hooks) OpenAPI() []byte {
	return []byte(`{"paths":{"/hooks/{name}":{"post":{"operationId":"hook_receive","x-queen-access":"public",
		"responses":{"202":{"description":"accepted"}}}}}}`)
}

var _ httpapi.FallbackGroup = (*hooks)(nil)
var _ httpapi.DocumentedGroup = (*hooks)(nil)

// TestGroupFromAnotherPackage plugs a group in through Config.Groups and
// checks that the adapter serves it as one of its own: its gate, its
// envelope, its fallback before Queen's no_such_route, its fragment in the
// OpenAPI document, its rows in the table.
func TestGroupFromAnotherPackage(t *testing.T) {
	h := &hooks{}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Groups: []httpapi.Group{h}}))
	defer srv.Close()
	do := func(method, path, secret string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{}`))
		if secret != "" {
			req.Header.Set("X-Hook-Secret", secret)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, res.Body)
		return res.StatusCode, res.Header, b.String()
	}

	if code, _, body := do("POST", "/hooks/orders", "s3cret"); code != 403 ||
		body != `{"error":{"code":"feature_disabled","message":"hooks disabled"}}` {
		t.Errorf("gate closed: %d %s", code, body)
	}
	h.on.Store(true)
	if code, _, body := do("POST", "/hooks/orders", "s3cret"); code != 202 || body != `{"accepted":"orders"}` {
		t.Errorf("accepted: %d %s", code, body)
	}
	if code, hdr, body := do("POST", "/hooks/orders", "wrong"); code != 401 ||
		body != `{"error":{"code":"unauthorized","message":"bad signature"}}` || hdr.Get("X-Request-Id") == "" {
		t.Errorf("own authentication: %d %s %v", code, body, hdr)
	}
	if code, hdr, body := do("GET", "/dashboard/queues/orders", ""); code != 200 || !strings.Contains(body, "<title>page") ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Errorf("fallback GET: %d %s", code, body)
	}
	if code, _, body := do("HEAD", "/dashboard", ""); code != 200 || body != "" {
		t.Errorf("fallback HEAD: %d %q", code, body)
	}
	for _, tc := range [][2]string{{"GET", "/api/v1/nope"}, {"POST", "/dashboard"}, {"DELETE", "/hooks/orders"}} {
		if code, _, body := do(tc[0], tc[1], ""); code != 404 || !strings.Contains(body, `"code":"no_such_route"`) {
			t.Errorf("%s %s: %d %s, want Queen's no_such_route", tc[0], tc[1], code, body)
		}
	}
	_, _, doc := do("GET", "/api/v1/openapi.json", "")
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil || d.Paths["/hooks/{name}"]["post"].OperationID != "hook_receive" ||
		d.Paths["/api/v1/push"]["post"].OperationID != "push" {
		t.Errorf("the served document lacks the group's fragment or the API's own paths (%v)", err)
	}
	found := false
	for _, rt := range httpapi.Routes(h) {
		if rt.Name == "hook_receive" {
			found = rt.Envelope == hooksEnvelope && rt.Gate != nil && rt.Scope == httpapi.ScopeProcess
		}
	}
	if !found {
		t.Error("Routes(h) does not describe the group's row with its envelope, gate and scope")
	}
}
