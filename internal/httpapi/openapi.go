package httpapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
)

// The OpenAPI 3.1 description of every route is maintained by hand next to
// the route table, one fragment per group of routes: openapi/base.json holds
// the document's head and the shared components, and every other fragment
// adds its paths (and the components only it uses). A feature adds its own
// fragment instead of editing a shared file. TestOpenAPIMatchesRoutes fails
// when the merged document and the route table disagree.
//
//go:embed openapi/*.json
var openapiFS embed.FS

// openapiJSON is the merged document, built once.
var openapiJSON = mustMergeOpenAPI(openapiFS)

// openapi serves the OpenAPI document: the API's, with the fragments of the
// documented groups of other packages.
func (g *operationRoutes) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(g.a.openapi)
	return nil
}

func mustMergeOpenAPI(fsys fs.FS, extra ...[]byte) []byte {
	doc, err := mergeOpenAPI(fsys, extra...)
	if err != nil {
		panic(err) // the API's fragments are embedded: a test catches this first
	}
	return doc
}

// mergeOpenAPI merges base.json, the other fragments in name order, then
// the extra ones in order: paths and components are united (a path+method
// or a component defined twice is an error), tags are appended.
func mergeOpenAPI(fsys fs.FS, extra ...[]byte) ([]byte, error) {
	names, err := fs.Glob(fsys, "openapi/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var doc map[string]any
	raw, err := fs.ReadFile(fsys, "openapi/base.json")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("openapi/base.json: %w", err)
	}
	paths := map[string]any{}
	doc["paths"] = paths
	components, _ := doc["components"].(map[string]any)
	var frags [][]byte
	var fragNames []string
	for _, name := range names {
		if name == "openapi/base.json" {
			continue
		}
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		frags, fragNames = append(frags, raw), append(fragNames, name)
	}
	for i, raw := range extra {
		frags, fragNames = append(frags, raw), append(fragNames, fmt.Sprintf("group fragment %d", i))
	}
	for i, raw := range frags {
		name := fragNames[i]
		var frag struct {
			Paths      map[string]map[string]any `json:"paths"`
			Components map[string]map[string]any `json:"components"`
			Tags       []any                     `json:"tags"`
		}
		if err := json.Unmarshal(raw, &frag); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for path, ops := range frag.Paths {
			have, _ := paths[path].(map[string]any)
			if have == nil {
				have = map[string]any{}
				paths[path] = have
			}
			for method, op := range ops {
				if _, dup := have[method]; dup {
					return nil, fmt.Errorf("%s: %s %s is described twice", name, method, path)
				}
				have[method] = op
			}
		}
		for kind, items := range frag.Components {
			have, _ := components[kind].(map[string]any)
			if have == nil {
				have = map[string]any{}
				components[kind] = have
			}
			for key, v := range items {
				if _, dup := have[key]; dup {
					return nil, fmt.Errorf("%s: components.%s.%s is defined twice", name, kind, key)
				}
				have[key] = v
			}
		}
		if len(frag.Tags) > 0 {
			tags, _ := doc["tags"].([]any)
			doc["tags"] = append(tags, frag.Tags...)
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}
