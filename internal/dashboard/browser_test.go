package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/transfer/endpoint"
)

// The browser tests drive the dashboard in a real headless Chromium
// (Debian's chromium package) against a broker with data, and write a
// screenshot of every view to $QUEEN_DASHBOARD_SCREENSHOTS (default: a
// folder under the system's temporary directory, named in the log).
// Without a browser they skip, unless QUEEN_REQUIRE_BROWSER=1 (CI), where
// a missing browser is a failure.

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("QUEEN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("QUEEN_REQUIRE_BROWSER") == "1" {
		t.Fatal("QUEEN_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH: the browser tests need it (QUEEN_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// browser is one headless Chromium tab at 1280×800.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	shot string // the screenshot folder
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dir := os.Getenv("QUEEN_DASHBOARD_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "queen-dashboard-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: ctx, base: base, shot: dir}
}

// run runs actions with a deadline.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// open loads path and waits for sel to be visible.
func (b *browser) open(path, sel string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// text is the text of the first element matching sel once it is visible.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.run("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// waitText polls until the text of sel is want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	var got string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = b.text(sel); got == want {
			return
		}
	}
	b.t.Fatalf("%s shows %q, want %q", sel, got, want)
}

// points is how many points the chart panel sel holds once it has some.
func (b *browser) points(sel string) int {
	b.t.Helper()
	expr := `+(document.querySelector('` + sel + `') || {dataset: {}}).dataset.points || 0`
	n := 0
	for deadline := time.Now().Add(10 * time.Second); n == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n = eval[int](b, expr)
	}
	return n
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.run("click "+sel, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// confirm answers the confirmation dialog of a destructive action.
func (b *browser) confirm() { b.t.Helper(); b.click("#confirm-yes") }

func (b *browser) screenshot(name string) {
	b.t.Helper()
	b.run("settle", chromedp.Sleep(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: a PNG; less is a JPEG
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.shot, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// broker is the HTTP API of the broker under test, for seeding data and
// checking what the page shows.
type broker struct {
	t     *testing.T
	base  string
	token string
}

func (k *broker) do(method, path string, body any, out any) int {
	k.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, k.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if k.token != "" {
		req.Header.Set("Authorization", "Bearer "+k.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		k.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		k.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			k.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

type popped struct {
	Messages []struct {
		TransactionID string          `json:"transactionId"`
		PartitionID   string          `json:"partitionId"`
		Data          json.RawMessage `json:"data"`
	} `json:"messages"`
}

func (k *broker) pop(queue, group string) popped {
	k.t.Helper()
	var p popped
	k.do("GET", "/api/v1/pop/queue/"+queue+"?batch=100&autoAck=true&consumerGroup="+group, nil, &p)
	return p
}

func (k *broker) push(queue, partition string, n int) {
	k.t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "partition": partition, "payload": map[string]any{"n": i}}
	}
	k.do("POST", "/api/v1/push", map[string]any{"items": items}, nil)
}

func startBroker(t *testing.T, cfg server.Config) (string, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Version = "0.0.0-browser"
	return apitest.StartServer(t, st, cfg), st
}

// recordHistory writes the last half hour of queue's minutes (and the next
// two, which count once they are over), as the metrics sampler does: the
// last five at 20 pushes and 10 acks a second, before them a ramp.
func recordHistory(t *testing.T, st store.Store, queue string) {
	t.Helper()
	now := time.Now().Truncate(time.Minute)
	var p store.StatsRecordParams
	for i := -30; i <= 2; i++ {
		ops := store.QueueOps{PushMessages: 1200, PushRequests: 60, AckSuccess: 600, AckRequests: 60, PopMessages: 600,
			PopRequests: 60}
		if i < -5 {
			ops.PushMessages, ops.AckSuccess, ops.PopMessages = int64(60*(i+31)), int64(50*(i+31)), int64(50*(i+31))
		}
		p.Queues = append(p.Queues, store.QueueMinute{Hostname: "browser", WorkerID: "1", Tenant: store.DefaultTenant,
			Queue: queue, Minute: now.Add(time.Duration(i) * time.Minute), Ops: ops})
	}
	if err := st.StatsRecord(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserViews loads every view against a broker with data, checks
// the figures shown against the API, and repairs things from the UI:
// requeues a dead letter and pops it, seeks a group back and sees it
// consume again, switches maintenance on and off.
func TestBrowserViews(t *testing.T) {
	chromiumPath(t)
	base, st := startBroker(t, server.Config{})
	k := &broker{t: t, base: base}
	for _, q := range []string{"orders", "emails", "replay"} {
		k.do("POST", "/api/v1/configure", map[string]any{"queue": q, "options": map[string]any{"retryLimit": 1}}, nil)
	}
	for p := 0; p < 3; p++ {
		k.push("orders", "p"+strconv.Itoa(p), 4)
	}
	k.push("emails", "Default", 2)
	k.push("replay", "Default", 3)
	if got := len(k.pop("replay", "g1").Messages); got != 3 {
		t.Fatalf("g1 popped %d of replay, want 3", got)
	}
	// A dead letter: a message of emails moved to the DLQ.
	var list struct {
		Messages []struct {
			PartitionID   string `json:"partitionId"`
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	k.do("GET", "/api/v1/messages?queue=emails", nil, &list)
	dead := list.Messages[0]
	k.do("POST", "/api/v1/messages/"+dead.PartitionID+"/"+dead.TransactionID+"/dlq", nil, nil)
	// A trace.
	k.do("POST", "/api/v1/traces", map[string]any{"transactionId": dead.TransactionID, "partitionId": dead.PartitionID,
		"data": map[string]any{"step": "sent"}, "eventType": "info", "traceNames": []string{"order-42"}}, nil)

	recordHistory(t, st, "orders")
	b := newBrowser(t, base)

	t.Run("overview", func(t *testing.T) {
		b.t = t
		var ov struct {
			Queues     int `json:"queues"`
			Partitions int `json:"partitions"`
		}
		k.do("GET", "/api/v1/resources/overview", nil, &ov)
		start := time.Now()
		b.open("/", "#ov-queues")
		b.waitText("#ov-queues", strconv.Itoa(ov.Queues))
		// Logged for the record (timing is not asserted in unit tests).
		t.Logf("first figures %v after the navigation began; the page's own load: %.0f ms", time.Since(start).Round(time.Millisecond),
			eval[float64](b, `performance.getEntriesByType('navigation')[0].loadEventEnd`))
		b.waitText("#ov-partitions", strconv.Itoa(ov.Partitions))
		var ovm struct {
			Messages struct{ Pending, Processing, DeadLetter int }
		}
		k.do("GET", "/api/v1/resources/overview", nil, &ovm)
		b.waitText("#ov-pending", strconv.Itoa(ovm.Messages.Pending))
		b.waitText("#ov-processing", strconv.Itoa(ovm.Messages.Processing))
		b.waitText("#ov-dlq", strconv.Itoa(ovm.Messages.DeadLetter))
		b.waitText("#ov-engine", "sqlite")
		// The chart is full at once: the last hour's minutes from
		// /api/v1/status, the minute still being counted left out.
		var stt struct {
			Throughput []struct {
				Timestamp string
			}
		}
		k.do("GET", "/api/v1/status", nil, &stt)
		complete := 0
		for _, p := range stt.Throughput {
			if at, _ := time.Parse(time.RFC3339Nano, p.Timestamp); !at.Add(time.Minute).After(time.Now()) {
				complete++
			}
		}
		if n := b.points("#ov-chart"); n < complete-1 || n > complete || n < 30 {
			t.Errorf("the chart shows %d minutes on first render; the API has %d complete", n, complete)
		}
		b.waitText("#ov-in", "20/s")
		b.waitText("#ov-out", "10/s")
		b.screenshot("overview")
		// The dark theme, for the reviewer.
		b.run("dark theme", chromedp.SetValue(chromedp.CSS(`select[aria-label=theme]`), "dark"))
		eval[any](b, `document.querySelector('select[aria-label=theme]').dispatchEvent(new Event('change',{bubbles:true}))`)
		b.screenshot("overview-dark")
		eval[any](b, `(()=>{const s=document.querySelector('select[aria-label=theme]');s.value='';s.dispatchEvent(new Event('change',{bubbles:true}))})()`)
	})

	t.Run("queues", func(t *testing.T) {
		b.t = t
		b.open("/queues", "#queues")
		n := eval[int](b, `document.querySelectorAll('#queues tbody tr').length`)
		if n != 3 {
			t.Fatalf("the queues table has %d rows, want 3", n)
		}
		var q struct {
			Totals struct {
				Pending int `json:"pending"`
			} `json:"totals"`
			Pagination struct {
				Total int `json:"total"`
			} `json:"pagination"`
		}
		k.do("GET", "/api/v1/resources/queues/orders", nil, &q)
		depth := eval[string](b, `[...document.querySelectorAll('#queues tbody tr')].find(r=>r.textContent.startsWith('orders')).querySelector('[data-col=pending]').textContent`)
		if depth != strconv.Itoa(q.Totals.Pending) {
			t.Fatalf("orders depth shown %q, API %d", depth, q.Totals.Pending)
		}
		// The dead letters and the oldest unread message come from the
		// list's own figures.
		var list struct {
			Queues []struct {
				Name     string
				Messages struct{ DeadLetter int }
				Oldest   *string `json:"oldestUnreadAt"`
			}
		}
		k.do("GET", "/api/v1/resources/queues?limit=1000", nil, &list)
		for _, lq := range list.Queues {
			row := `[...document.querySelectorAll('#queues tbody tr')].find(r=>r.querySelector('[data-col=name]').textContent===` +
				strconv.Quote(lq.Name) + `)`
			if got := eval[string](b, row+`.querySelector('[data-col=deadLetter]').textContent`); got != strconv.Itoa(lq.Messages.DeadLetter) {
				t.Errorf("%s: DLQ shown %q, API %d", lq.Name, got, lq.Messages.DeadLetter)
			}
			got := eval[string](b, `(()=>{const e=`+row+`.querySelector('[data-col=oldest] time');return e?e.getAttribute('datetime'):''})()`)
			want := "" // replay: g1 read it all
			if lq.Oldest != nil {
				want = *lq.Oldest
			}
			if got != want || (lq.Name != "replay") != (want != "") {
				t.Errorf("%s: oldest unread shown at %q, API %v", lq.Name, got, lq.Oldest)
			}
		}
		b.screenshot("queues")
		b.open("/queues/orders", "#q-partitions")
		if n := b.points("#q-chart"); n < 30 {
			t.Errorf("the queue's chart shows %d minutes, want the recorded 30", n)
		}
		b.waitText("#q-partitions", strconv.Itoa(q.Pagination.Total))
		b.waitText("#q-pending", strconv.Itoa(q.Totals.Pending))
		b.screenshot("queue-detail")
	})

	t.Run("messages", func(t *testing.T) {
		b.t = t
		b.open("/messages?queue=orders", "#messages")
		n := eval[int](b, `document.querySelectorAll('#messages tbody tr').length`)
		if n != 12 {
			t.Fatalf("the messages table has %d rows, want 12", n)
		}
		b.click("#messages tbody tr button")
		b.run("payload", chromedp.WaitVisible(chromedp.CSS("#payload")))
		b.screenshot("messages")
	})

	t.Run("traces", func(t *testing.T) {
		b.t = t
		b.open("/traces?name=order-42", "#timeline")
		if s := b.text("#timeline"); !strings.Contains(s, "sent") {
			t.Fatalf("the timeline shows %q", s)
		}
		b.screenshot("traces")
	})

	t.Run("dlq requeue", func(t *testing.T) {
		b.t = t
		b.open("/dlq", "#dlq")
		b.click(`input[data-tx="` + dead.TransactionID + `"]`)
		b.screenshot("dlq")
		b.click("#dlq-requeue")
		b.confirm()
		b.run("emptied", chromedp.WaitVisible(chromedp.Search(`//div[contains(., "dead-letter queue is empty")]`)))
		// The requeued message pops (as a new message with the payload).
		seen := false
		for deadline := time.Now().Add(10 * time.Second); !seen && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			for _, m := range k.pop("emails", "after-requeue").Messages {
				if string(m.Data) == `{"n":0}` || string(m.Data) == `{"n":1}` {
					seen = true
				}
			}
		}
		var dl struct {
			Messages []any `json:"messages"`
		}
		k.do("GET", "/api/v1/dlq", nil, &dl)
		if !seen || len(dl.Messages) != 0 {
			t.Fatalf("after the requeue: popped %v, %d dead letters left", seen, len(dl.Messages))
		}
	})

	t.Run("groups seek", func(t *testing.T) {
		b.t = t
		b.open("/groups", "#groups")
		// Each group's lag and lagging partitions are the API's.
		var groups []struct {
			Name              string `json:"name"`
			QueueName         string `json:"queueName"`
			TotalLag          int    `json:"totalLag"`
			PartitionsWithLag int    `json:"partitionsWithLag"`
		}
		k.do("GET", "/api/v1/consumer-groups", nil, &groups)
		if n := eval[int](b, `document.querySelectorAll('#groups tbody tr').length`); n != len(groups) || n == 0 {
			t.Fatalf("the groups table has %d rows, the API %d groups", n, len(groups))
		}
		for _, g := range groups {
			row := `[...document.querySelectorAll('#groups tbody tr')].find(r=>r.querySelector('[data-col=name]').textContent===` +
				strconv.Quote(g.Name) + `&&r.querySelector('[data-col=queueName]').textContent===` + strconv.Quote(g.QueueName) + `)`
			lag := eval[string](b, row+`.querySelector('[data-col=totalLag]').textContent`)
			parts := eval[string](b, row+`.querySelector('[data-col=partitionsWithLag]').textContent`)
			if lag != strconv.Itoa(g.TotalLag) || parts != strconv.Itoa(g.PartitionsWithLag) {
				t.Errorf("group %s on %s shows lag %s over %s partitions, API %d over %d", g.Name, g.QueueName, lag, parts,
					g.TotalLag, g.PartitionsWithLag)
			}
		}
		b.screenshot("groups")
		if got := len(k.pop("replay", "g1").Messages); got != 0 {
			t.Fatalf("g1 pops %d before the seek, want 0", got)
		}
		b.open("/groups/g1", ".seek-time")
		// An hour back, in the browser's local time, as the picker takes it.
		eval[any](b, `(()=>{const i=document.querySelector('.seek-time');const d=new Date(Date.now()-3600e3);
			const p=(n)=>String(n).padStart(2,'0');
			i.value=d.getFullYear()+'-'+p(d.getMonth()+1)+'-'+p(d.getDate())+'T'+p(d.getHours())+':'+p(d.getMinutes())+':'+p(d.getSeconds());
			i.dispatchEvent(new Event('input',{bubbles:true}))})()`)
		b.click(".seek-time-go")
		b.confirm()
		got := 0
		for deadline := time.Now().Add(10 * time.Second); got < 3 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			got += len(k.pop("replay", "g1").Messages)
		}
		if got != 3 {
			t.Fatalf("after the seek g1 re-consumed %d messages, want 3", got)
		}
		b.screenshot("group-detail")
	})

	t.Run("maintenance", func(t *testing.T) {
		b.t = t
		var m struct {
			MaintenanceMode bool `json:"maintenanceMode"`
		}
		b.open("/system", "#maint-toggle")
		b.waitText("#maint", "off")
		b.click("#maint-toggle")
		b.confirm()
		b.waitText("#maint", "on")
		k.do("GET", "/api/v1/system/maintenance", nil, &m)
		if !m.MaintenanceMode {
			t.Fatal("the UI switched maintenance on; the API says off")
		}
		b.screenshot("system")
		b.click("#maint-toggle")
		b.confirm()
		b.waitText("#maint", "off")
		k.do("GET", "/api/v1/system/maintenance", nil, &m)
		if m.MaintenanceMode {
			t.Fatal("the UI switched maintenance off; the API says on")
		}
	})

	t.Run("migration", func(t *testing.T) {
		b.t = t
		b.open("/system", "#migration")
		typeIn := func(id, v string) {
			t.Helper()
			eval[any](b, `(()=>{const i=document.querySelector('#`+id+`');i.value=`+strconv.Quote(v)+`;i.dispatchEvent(new Event('input',{bubbles:true}))})()`)
		}
		// Nothing listens on port 1: the test says why, without the password.
		typeIn("mig-host", "127.0.0.1")
		typeIn("mig-port", "1")
		typeIn("mig-database", "target")
		typeIn("mig-user", "queen")
		typeIn("mig-password", "s3cret-pw")
		b.click("#mig-test")
		if s := b.text("#mig-conn"); !strings.HasPrefix(s, "Connection failed") || strings.Contains(s, "s3cret-pw") {
			t.Fatalf("a refused connection shows %q", s)
		}
		b.screenshot("system-migration")
		// With a PostgreSQL to reach (CI's), the test succeeds and shows its version.
		u, err := url.Parse(os.Getenv("QUEEN_TEST_DATABASE_URL"))
		if err != nil || u.Host == "" {
			t.Log("QUEEN_TEST_DATABASE_URL unset: the successful connection test is not run")
			return
		}
		pw, _ := u.User.Password()
		port := u.Port()
		if port == "" {
			port = "5432"
		}
		typeIn("mig-host", u.Hostname())
		typeIn("mig-port", port)
		typeIn("mig-database", strings.TrimPrefix(u.Path, "/"))
		typeIn("mig-user", u.User.Username())
		typeIn("mig-password", pw)
		b.click("#mig-test")
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			s := b.text("#mig-conn")
			if strings.HasPrefix(s, "Connection successful") && strings.Contains(s, "PostgreSQL") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the connection test against the test database shows %q", s)
			}
		}
	})

	t.Run("phone width", func(t *testing.T) {
		b.t = t
		b.run("resize", chromedp.EmulateViewport(390, 844))
		b.open("/queues", "#queues")
		overflow := eval[bool](b, `document.documentElement.scrollWidth > innerWidth + 1`)
		if overflow {
			t.Error("at a phone's width the page scrolls sideways")
		}
		// The menu is one row of links above the view, not a band that
		// takes the grid's free height and pushes the view down.
		if h := eval[float64](b, `document.querySelector('nav.side').getBoundingClientRect().height`); h > 80 {
			t.Errorf("at a phone's width the menu is %.0f px tall, want one row (at most 80 px)", h)
		}
		b.screenshot("queues-phone")
		b.run("resize back", chromedp.EmulateViewport(1280, 800))
	})
}

// TestBrowserSignIn: with API tokens on, the dashboard asks for a token,
// refuses a wrong one, and shows who signed in with a right one.
func TestBrowserSignIn(t *testing.T) {
	chromiumPath(t)
	toks, err := auth.ParseTokens("tok-admin-123:admin,tok-read-456:read-only")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := startBroker(t, server.Config{Auth: auth.Config{Tokens: toks}})
	k := &broker{t: t, base: base, token: "tok-admin-123"}
	k.push("orders", "Default", 1)
	b := newBrowser(t, base)
	b.open("/", "#signin")
	b.screenshot("sign-in")
	b.run("type a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "nope"))
	b.click("#signin-go")
	if s := b.text("#signin-error"); s == "" {
		t.Fatal("a wrong token shows no error")
	}
	eval[any](b, `(()=>{const t=document.querySelector('#token');t.value='';t.dispatchEvent(new Event('input',{bubbles:true}))})()`)
	b.run("type the read-only token", chromedp.SendKeys(chromedp.CSS("#token"), "tok-read-456"))
	b.click("#signin-go")
	b.waitText("#ov-queues", "1")
	if s := b.text("#who"); !strings.Contains(s, "api-token:2") || !strings.Contains(s, "read-only") {
		t.Fatalf("who: %q", s)
	}
	// A read-only token sees no destructive action.
	b.open("/queues", "#queues")
	n := eval[int](b, `document.querySelectorAll('[data-delete]').length`)
	if n != 0 {
		t.Fatalf("a read-only token sees %d delete buttons", n)
	}
	b.waitText("header.top .muted", "1 queue")
	b.screenshot("signed-in-read-only")
	// Without a token the page's API calls are refused.
	req, _ := http.NewRequest("GET", base+"/api/v1/resources/overview", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("overview without a token: %d", resp.StatusCode)
	}
}

// TestBrowserMigration: from the system view, an admin tests the target,
// starts the copy of an embedded broker's data into a fresh schema of the
// test PostgreSQL, follows it to complete, validates the counts and resets.
func TestBrowserMigration(t *testing.T) {
	chromiumPath(t)
	pgURL, schema := pgtest.URL(t), pgtest.Schema(t, "dash_")
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	base, _ := startBroker(t, server.Config{MigrationOpen: endpoint.OpenPostgres, SpoolDir: t.TempDir()})
	k := &broker{t: t, base: base}
	for p := 0; p < 3; p++ {
		k.push("moving", "p"+strconv.Itoa(p), 10)
	}
	if got := len(k.pop("moving", "g1").Messages); got == 0 {
		t.Fatal("g1 popped nothing")
	}
	b := newBrowser(t, base)
	b.open("/system", "#mig-start")
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	for id, v := range map[string]string{"mig-host": u.Hostname(), "mig-port": port, "mig-database": strings.TrimPrefix(u.Path, "/"),
		"mig-user": u.User.Username(), "mig-password": pw, "mig-schema": schema} {
		eval[any](b, `(()=>{const i=document.querySelector('#`+id+`');i.value=`+strconv.Quote(v)+`;i.dispatchEvent(new Event('input',{bubbles:true}))})()`)
	}
	b.waitText("#mig-status", "idle")
	b.click("#mig-test")
	if s := b.text("#mig-conn"); !strings.HasPrefix(s, "Connection successful") {
		t.Fatalf("connection test: %q", s)
	}
	b.click("#mig-start")
	b.confirm()
	b.waitText("#mig-status", "complete")
	var st struct {
		Status string `json:"status"`
	}
	k.do("GET", "/api/v1/migration/status", nil, &st)
	if st.Status != "complete" {
		t.Fatalf("the UI shows complete; the API says %q", st.Status)
	}
	// The copy leaves push maintenance on (pushes wait in the spool until
	// this broker moves); the view says so without a reload.
	b.waitText("#maint", "on")
	b.click("#mig-validate")
	if s := b.text("#mig-valid"); !strings.Contains(s, "Every count matches.") {
		t.Fatalf("validate shows %q", s)
	}
	rows := eval[int](b, `document.querySelectorAll('#mig-tables tbody tr').length`)
	if rows == 0 {
		t.Fatal("validate shows no table")
	}
	b.screenshot("system-migration-complete")
	b.click("#mig-reset")
	b.confirm()
	b.waitText("#mig-status", "idle")
}
