package httpapi

import (
	_ "embed"
	"net/http"
)

// openapiJSON is the OpenAPI 3.1 description of every route, maintained by
// hand next to the route table; TestOpenAPIMatchesRoutes fails when the two
// disagree.
//
//go:embed openapi.json
var openapiJSON []byte

// openapi serves the OpenAPI document.
func (a *api) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiJSON)
	return nil
}
