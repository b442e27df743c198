package delivery_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/delivery"
	"github.com/queen-go/queen/internal/httpapi"
)

// TestOpenAPIFragment: the fragment documents exactly the routes served,
// with their names and access, and the merged document is valid.
func TestOpenAPIFragment(t *testing.T) {
	st := engines[0].open(t)(t)
	svc, err := delivery.New(st, broker.New(st, broker.Config{}), delivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Groups: []httpapi.Group{svc}}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := openapi3.NewLoader().LoadFromIoReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("merged document: %v", err)
	}
	documented := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		if strings.HasPrefix(path, "/api/v1/delivery/") {
			for method, op := range item.Operations() {
				documented[method+" "+path] = op
			}
		}
	}
	for _, rt := range svc.Routes() {
		key := rt.Method + " " + rt.Pattern
		op, ok := documented[key]
		if !ok {
			t.Errorf("%s is served but not documented", key)
			continue
		}
		delete(documented, key)
		if access, _ := op.Extensions["x-queen-access"].(string); op.OperationID != rt.Name || access != rt.Access.String() {
			t.Errorf("%s: operationId %q access %q; route %q %q", key, op.OperationID, access, rt.Name, rt.Access)
		}
	}
	for key := range documented {
		t.Errorf("%s is documented but not served", key)
	}
}
