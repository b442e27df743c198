package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// loadOpenAPI loads and validates the embedded document as OpenAPI 3.1.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	if !json.Valid(openapiJSON) {
		t.Fatal("openapi.json is not valid JSON")
	}
	var head struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(openapiJSON, &head); err != nil || head.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: openapi is %q, want 3.1.0 (%v)", head.OpenAPI, err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(openapiJSON)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.1 document: %v", err)
	}
	return doc
}

// TestOpenAPIMatchesRoutes fails when the route table and the document
// disagree: a route missing from either side, another method, another name
// (operationId) or another access level (x-queen-access).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			documented[method+" "+path] = op
		}
	}
	for _, rt := range Routes() {
		key := rt.Method + " " + rt.Pattern
		op, ok := documented[key]
		if !ok {
			t.Errorf("%s (%s) is served but not in openapi.json", key, rt.Name)
			continue
		}
		delete(documented, key)
		if op.OperationID != rt.Name {
			t.Errorf("%s: operationId %q, route name %q", key, op.OperationID, rt.Name)
		}
		if access, _ := op.Extensions["x-queen-access"].(string); access != rt.Access.String() {
			t.Errorf("%s: x-queen-access %q, route access %q", key, access, rt.Access)
		}
	}
	for key := range documented {
		t.Errorf("%s is in openapi.json but not served", key)
	}
}

// TestOpenAPIErrorResponses: every operation that reaches the broker
// documents the errors any of them can answer (500, 503), and every
// operation with a body the 413.
func TestOpenAPIErrorResponses(t *testing.T) {
	doc := loadOpenAPI(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if access, _ := op.Extensions["x-queen-access"].(string); access != "public" {
				for _, code := range []string{"500", "503"} {
					if op.Responses.Value(code) == nil {
						t.Errorf("%s %s: no %s response", method, path, code)
					}
				}
			}
			if op.RequestBody != nil && op.Responses.Value("413") == nil {
				t.Errorf("%s %s: takes a body but documents no 413", method, path)
			}
		}
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	rec := httptest.NewRecorder()
	New(Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Body.String() != string(openapiJSON) {
		t.Fatalf("GET /api/v1/openapi.json: %d %q, %d bytes; want 200 application/json and the document",
			rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
}
