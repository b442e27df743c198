package httpapi_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// openAPIFixture is a broker over a fresh embedded store, for the tests
// that drive routes through their documented answers and validate every
// exchange against openapi.json.
type openAPIFixture struct {
	t      *testing.T
	doc    *openapi3.T
	router routers.Router
	st     *sqlite.Store
	b      *broker.Broker
}

func newOpenAPIFixture(t *testing.T, bcfg broker.Config) *openAPIFixture {
	t.Helper()
	doc := fetchOpenAPI(t)
	doc.Servers = nil // match requests to any host
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := broker.New(st, bcfg)
	t.Cleanup(b.Stop)
	return &openAPIFixture{t: t, doc: doc, router: router, st: st, b: b}
}

// serve serves the API of cfg, validated, and returns a client of it. The
// fixture's broker and the test version are filled in when cfg has none.
func (f *openAPIFixture) serve(cfg httpapi.Config) *caller {
	if cfg.Broker == nil {
		cfg.Broker = f.b
	}
	if cfg.Version == "" {
		cfg.Version = "0.0.0-openapi"
	}
	srv := httptest.NewServer(validating(f.t, f.doc, f.router, httpapi.New(cfg)))
	f.t.Cleanup(srv.Close)
	return &caller{t: f.t, base: srv.URL}
}
