package deploy_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prometheusOwn are series Prometheus writes itself for each target.
var prometheusOwn = map[string]bool{"up": true}

// TestMonitoringNamesExportedFamilies scrapes a running broker and checks
// that every alert and every dashboard panel reads families it exports: a
// renamed metric would otherwise leave a panel empty and an alert silent.
func TestMonitoringNamesExportedFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the broker")
	}
	exprs := alertExprs(t, "prometheus/queen-alerts.yml")
	if len(exprs) == 0 {
		t.Fatal("no alert expressions found")
	}
	exprs = append(exprs, dashboardExprs(t, "grafana/queen.json")...)

	families := scrape(t)
	var missing []string
	for _, e := range exprs {
		for _, name := range metricNames(e) {
			if !families[name] && !prometheusOwn[name] {
				missing = append(missing, name+" in "+e)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("families the broker does not export:\n  %s", strings.Join(missing, "\n  "))
	}
}

// TestMetricNames pins the expression scanner the test above relies on.
func TestMetricNames(t *testing.T) {
	got := metricNames(`histogram_quantile(0.99, sum by (le, route) (rate(queen_http_request_duration_seconds_bucket{job="queen",x=~"a|b"}[$__rate_interval]))) > 0.5 and on (instance) up == 0`)
	want := []string{"queen_http_request_duration_seconds", "up"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("metricNames = %v, want %v", got, want)
	}
}

func alertExprs(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exprs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if e, ok := strings.CutPrefix(line, "expr:"); ok {
			exprs = append(exprs, strings.TrimSpace(e))
		}
	}
	return exprs
}

func dashboardExprs(t *testing.T, path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Query any
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				// label_values(family, label)
				if inner, ok := strings.CutPrefix(s, "label_values("); ok {
					exprs = append(exprs, strings.SplitN(inner, ",", 2)[0])
				}
			}
		}
	}
	return exprs
}

var (
	matchers   = regexp.MustCompile(`\{[^}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\]]*\]`)
	grouping   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
)

// metricNames lists the families an expression reads (histogram series
// named by their family), sorted.
func metricNames(expr string) []string {
	s := matchers.ReplaceAllString(expr, "")
	s = ranges.ReplaceAllString(s, "")
	s = grouping.ReplaceAllString(s, "")
	seen := map[string]bool{}
	for _, m := range identifier.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || keywords[strings.ToLower(m)] {
			continue // a function or an operator
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			m = strings.TrimSuffix(m, suffix)
		}
		seen[m] = true
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// scrape builds and starts the broker on the embedded engine, gives it a
// queue, and returns the families of /metrics/prometheus once the queue
// gauges are there.
func scrape(t *testing.T) map[string]bool {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "queen")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/queen").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--bind-addr", "127.0.0.1", "--port", strconv.Itoa(port))
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://127.0.0.1:" + strconv.Itoa(port)

	deadline := time.Now().Add(60 * time.Second)
	pushed := false
	for time.Now().Before(deadline) {
		if !pushed {
			resp, err := http.Post(base+"/api/v1/push", "application/json",
				strings.NewReader(`{"items":[{"queue":"orders","payload":{"n":1}}]}`))
			if err == nil {
				resp.Body.Close()
				pushed = resp.StatusCode == http.StatusCreated
			}
		}
		if pushed {
			fams := families(base + "/metrics/prometheus")
			if fams["queen_queue_depth"] && fams["queen_dlq_depth_by_queue"] {
				return fams
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the broker did not export its queue gauges within 60 s; logs:\n%s", logs.String())
	return nil
}

func families(url string) map[string]bool {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	fams := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			fams[f[2]] = true
		}
	}
	return fams
}
