package httpapi

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiDoc is docs/api.md, read once per test.
func apiDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docSection is the text of doc from start up to end (excluded).
func docSection(t *testing.T, doc, start, end string) string {
	t.Helper()
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

// routeSpan is a code span of the docs' prose that names routes:
// `GET /api/v1/dlq`, `GET/POST /api/v1/system/maintenance`, a bare path
// (`/migration/start`), which takes the methods of the span before it, or
// bare methods (`POST`), which name nothing.
var routeSpan = regexp.MustCompile("`((?:GET|POST|PUT|DELETE)(?:/(?:GET|POST|PUT|DELETE))*)?( ?)(/[^`]*)?`")

// namedRoutes resolves the routes a piece of the docs' prose names. A path
// may be shortened to its last segments (`/maintenance/pop`) when that
// names one path of the table; a path span before any method names every
// method of its path. A span that names no route of the table, or several,
// is an error: the docs name what exists.
func namedRoutes(t *testing.T, where, text string, table []RouteInfo) []RouteInfo {
	t.Helper()
	var out []RouteInfo
	var methods []string
	for _, m := range routeSpan.FindAllStringSubmatch(text, -1) {
		if m[1] != "" {
			methods = strings.Split(m[1], "/")
		}
		path := m[3]
		if path == "" || (m[1] != "" && m[2] == "") {
			continue // bare methods, or not a route (`GET/POST` glued to text)
		}
		var hits []RouteInfo
		patterns := map[string]bool{}
		for _, rt := range table {
			if rt.Pattern != path && !strings.HasSuffix(rt.Pattern, path) {
				continue
			}
			if methods != nil && !slices.Contains(methods, rt.Method) {
				continue
			}
			hits = append(hits, rt)
			patterns[rt.Pattern] = true
		}
		if len(patterns) > 1 {
			// A shorthand that ends several paths is taken only when one of
			// them is the path itself.
			var exact []RouteInfo
			for _, rt := range hits {
				if rt.Pattern == path {
					exact = append(exact, rt)
				}
			}
			hits = exact
		}
		if len(hits) == 0 {
			t.Errorf("docs/api.md's %s names %v %s, which is no route of the table (or several)", where, methods, path)
			continue
		}
		out = append(out, hits...)
	}
	return out
}

func routeKey(rt RouteInfo) string { return rt.Method + " " + rt.Pattern }

// TestAccessDocsMatchTheTable: the table "Who may call what" of
// docs/api.md gives every route of the table its access level, and the
// level is the one the adapter enforces. A row names routes; a route no row
// names is `read` if it is a GET and `read-write` otherwise, as the rows of
// those two levels say. So a route added at a level other than its method's
// default must be named in the docs, and a route named at a level it does
// not have fails too.
func TestAccessDocsMatchTheTable(t *testing.T) {
	doc := apiDoc(t)
	table := Routes()
	rows := docSection(t, doc, "| Level | Routes |\n|---|---|\n", "\n\n")
	named := map[string]string{} // route → level of the row naming it
	levels := 0
	for _, line := range strings.Split(rows, "\n")[2:] {
		cells := strings.Split(line, "|")
		if len(cells) != 4 {
			t.Fatalf("docs/api.md's access table: row %q is not | level | routes |", line)
		}
		level := strings.Trim(strings.TrimSpace(cells[1]), "`")
		levels++
		for _, rt := range namedRoutes(t, "row "+level, cells[2], table) {
			if prev, ok := named[routeKey(rt)]; ok && prev != level {
				t.Errorf("docs/api.md's access table names %s in the rows %s and %s", routeKey(rt), prev, level)
			}
			named[routeKey(rt)] = level
		}
	}
	if want := int(AccessAdmin - AccessPublic + 1); levels != want {
		t.Errorf("docs/api.md's access table has %d rows, want one per level (%d)", levels, want)
	}
	for _, rt := range table {
		want, ok := named[routeKey(rt)]
		if !ok {
			want = AccessReadWrite.String()
			if rt.Method == "GET" {
				want = AccessRead.String()
			}
		}
		if got := rt.Access.String(); got != want {
			how := "by its row"
			if !ok {
				how = "as an unnamed " + rt.Method
			}
			t.Errorf("%s is %s, and docs/api.md's access table makes it %s (%s)", routeKey(rt), got, want, how)
		}
	}
}

// TestOperatorDocsMatchTheTable: docs/api.md's list of operator routes
// names every operator route of the table, and only those.
func TestOperatorDocsMatchTheTable(t *testing.T) {
	doc := apiDoc(t)
	table := Routes()
	list := docSection(t, doc, "**Operator routes**", ". With tenancy on")
	named := map[string]bool{}
	for _, rt := range namedRoutes(t, "operator routes", list, table) {
		named[routeKey(rt)] = true
		if !rt.OperatorOnly {
			t.Errorf("docs/api.md lists %s as an operator route, and it is not one", routeKey(rt))
		}
	}
	for _, rt := range table {
		if rt.OperatorOnly && !named[routeKey(rt)] {
			t.Errorf("%s is an operator route, and docs/api.md's operator routes do not name it", routeKey(rt))
		}
	}
}

// TestRouteTableDocsMatchTheTable: docs/api.md's table of routes has one
// row per route of the table, with its method, path, name and access level,
// and no other row.
func TestRouteTableDocsMatchTheTable(t *testing.T) {
	doc := apiDoc(t)
	rows := docSection(t, doc, "| Method | Path | Name | Access | Success |\n|---|---|---|---|---|\n", "\n\n")
	row := regexp.MustCompile("^\\| ([A-Z]+) \\| `([^`]+)` \\| `([^`]+)` \\| ([a-z-]+) \\| [^|]+ \\|$")
	documented := map[string]string{}
	for _, line := range strings.Split(rows, "\n")[2:] {
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/api.md's route table: row %q is not | method | `path` | `name` | level | success |", line)
			continue
		}
		key := m[1] + " " + m[2]
		if _, dup := documented[key]; dup {
			t.Errorf("docs/api.md's route table lists %s twice", key)
		}
		documented[key] = m[3] + " " + m[4]
	}
	for _, rt := range Routes() {
		want := rt.Name + " " + rt.Access.String()
		got, ok := documented[routeKey(rt)]
		switch {
		case !ok:
			t.Errorf("docs/api.md's route table has no row for %s (%s)", routeKey(rt), want)
		case got != want:
			t.Errorf("docs/api.md's route table says %s is %s, the table says %s", routeKey(rt), got, want)
		}
		delete(documented, routeKey(rt))
	}
	for key, what := range documented {
		t.Errorf("docs/api.md's route table lists %s (%s), which is no route", key, what)
	}
}
