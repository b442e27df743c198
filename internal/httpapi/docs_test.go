package httpapi

import (
	"os"
	"strings"
	"testing"
)

// TestAccessDocsMatchTheTable: docs/api.md's public row and its list of
// operator routes name every public and every operator route of the
// table, so that the docs cannot drift from what the adapter enforces.
// A route is named by its pattern or, in the docs' shorthand, by its last
// two segments (`/analytics/worker-metrics`).
func TestAccessDocsMatchTheTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	section := func(start, end string) string {
		i := strings.Index(doc, start)
		if i < 0 {
			t.Fatalf("docs/api.md has no %q", start)
		}
		j := strings.Index(doc[i:], end)
		if j < 0 {
			t.Fatalf("docs/api.md: no %q after %q", end, start)
		}
		return doc[i : i+j]
	}
	public := section("| `public` | `GET /health`", "\n")
	operator := section("**Operator routes**", "\n\n")
	named := func(text, pattern string) bool {
		segs := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
		short := pattern
		if len(segs) > 2 {
			short = "/" + strings.Join(segs[len(segs)-2:], "/")
		}
		return strings.Contains(text, "`"+pattern+"`") || strings.Contains(text, " "+pattern+"`") ||
			strings.Contains(text, "`"+short+"`") || strings.Contains(text, " "+short+"`")
	}
	for _, rt := range Routes() {
		if rt.Access == AccessPublic && !named(public, rt.Pattern) {
			t.Errorf("%s %s is public, and docs/api.md's public row does not name it", rt.Method, rt.Pattern)
		}
		if rt.OperatorOnly && !named(operator, rt.Pattern) {
			t.Errorf("%s %s is an operator route, and docs/api.md's operator routes do not name it", rt.Method, rt.Pattern)
		}
	}
}
