package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
)

// TestOpenAPIDescribesAccessAnswers is TestOpenAPIDescribesAnswers for the
// identity routes and the probes, with authentication off and on.
func TestOpenAPIDescribesAccessAnswers(t *testing.T) {
	// /auth/login's page is a string like /metrics/prometheus's text.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	f := newOpenAPIFixture(t, broker.Config{})
	v, err := auth.New(auth.Config{JWTEnabled: true, Secret: "k"})
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "ann", "roles": []string{"read-only"}}).
		SignedString([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []httpapi.Config{
		{Exposed: func() bool { return true }, TenancyEnabled: true},
		{Auth: v},
	} {
		c := f.serve(cfg)
		if cfg.Auth != nil {
			c.want(401, "GET", "/auth/me", "")
			c.wantWith(200, "GET", "/auth/me", "Authorization", "Bearer "+token)
			c.wantWith(401, "GET", "/auth/me", "Authorization", "Bearer nope")
		} else {
			c.want(200, "GET", "/auth/me", "")
			c.wantWith(200, "GET", "/auth/me", "X-Queen-Tenant", "0192f0a0-aaaa-7000-8000-00000000000a")
		}
		if cfg.Auth != nil {
			c.want(200, "GET", "/auth/login", "")
			c.wantWith(200, "GET", "/auth/login", "Accept", "text/html")
			c.wantWith(200, "GET", "/auth/login", "Accept", "application/json")
		} else {
			c.wantWith(302, "GET", "/auth/login", "Accept", "text/html")
		}
		c.want(204, "POST", "/auth/logout", "")
		c.want(200, "GET", "/healthz", "")
		c.want(200, "GET", "/live", "")
		c.want(200, "GET", "/health", "")
	}
}

// wantWith is want for a GET with one request header.
func (c *caller) wantWith(status int, method, path, key, value string) []byte {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set(key, value)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		c.t.Fatalf("%s %s with %s: status %d, want %d", method, path, key, resp.StatusCode, status)
	}
	return nil
}
