package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/delivery"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/testbroker"
)

// serve runs a whole broker (ingress and delivery included) over a fresh
// embedded store and returns its base URL and store.
func serve(t *testing.T, maxHops int) (string, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.Attempts = 1
	return testbroker.Serve(t, server.Config{Delivery: cfg, Ingress: ingress.Config{Node: "cell", MaxHops: maxHops}}, st), st
}

func call(t *testing.T, method, url string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// openQueue opens a queue's ingress and returns an API key of it.
func openQueue(t *testing.T, base, queue string, settings map[string]any) string {
	t.Helper()
	if code, out := call(t, "PUT", base+"/api/v1/ingress/queues/"+queue, settings); code != 200 {
		t.Fatalf("open %s: %d %v", queue, code, out)
	}
	code, out := call(t, "POST", base+"/api/v1/ingress/queues/"+queue+"/keys", nil)
	if code != 201 {
		t.Fatalf("key of %s: %d %v", queue, code, out)
	}
	return out["apiKey"].(string)
}

func createTarget(t *testing.T, base string, target map[string]any) map[string]any {
	t.Helper()
	code, out := call(t, "POST", base+"/api/v1/delivery/targets", target)
	if code != 201 {
		t.Fatalf("create target %v: %d %v", target, code, out)
	}
	return out
}

func waitDLQ(t *testing.T, st store.Store, queue string) store.DeadLetter {
	t.Helper()
	var got []store.DeadLetter
	waitFor(t, 30*time.Second, "a dead letter in "+queue, func() bool {
		var err error
		got, err = st.DLQList(context.Background(), dlqOf(queue))
		return err == nil && len(got) > 0
	})
	return got[0]
}

// TestLoops: a target that posts back into its own queue's ingress is
// refused as a cycle; a ring of queues is stopped by the hop budget. The
// refused deliveries end in the DLQ with the ingress's code.
func TestLoops(t *testing.T) {
	base, st := serve(t, 2)
	self := openQueue(t, base, "self", nil)
	createTarget(t, base, map[string]any{"queue": "self", "url": base + "/ingress/v1/self",
		"headers": map[string]string{"X-Api-Key": self}})
	if code, out := call(t, "POST", base+"/ingress/v1/self", `{"n":1}`, "X-Api-Key", self); code != 202 {
		t.Fatalf("first event: %d %v", code, out)
	}
	if d := waitDLQ(t, st, "self"); !strings.Contains(d.Error, "loop_detected") {
		t.Fatalf("self loop's dead letter: %q", d.Error)
	}

	keys := map[string]string{}
	for _, q := range []string{"r0", "r1", "r2"} {
		keys[q] = openQueue(t, base, q, nil)
	}
	for i, q := range []string{"r0", "r1", "r2"} {
		next := []string{"r1", "r2", "r0"}[i]
		createTarget(t, base, map[string]any{"queue": q, "url": base + "/ingress/v1/" + next,
			"headers": map[string]string{"X-Api-Key": keys[next]}})
	}
	if code, out := call(t, "POST", base+"/ingress/v1/r0", `{"n":2}`, "X-Api-Key", keys["r0"]); code != 202 {
		t.Fatalf("ring event: %d %v", code, out)
	}
	// r0 → r1 carries one hop, r1 → r2 would carry two: the budget.
	if d := waitDLQ(t, st, "r1"); !strings.Contains(d.Error, "max_hops_exceeded") {
		t.Fatalf("ring's dead letter: %q", d.Error)
	}
	for _, q := range []string{"r0", "r2"} {
		if d, _ := st.DLQList(context.Background(), dlqOf(q)); len(d) != 0 {
			t.Fatalf("%s has dead letters: %+v", q, d)
		}
	}
}

// TestHeaders: auth per target (bearer, basic, OAuth2 client credentials),
// the GroupKey and forwarded headers snapshotted at accept, the broker's own
// headers, static headers winning a collision, and the attempts route.
func TestHeaders(t *testing.T) {
	base, _ := serve(t, 0)
	var mu sync.Mutex
	got := map[string]http.Header{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" {
			w.WriteHeader(400)
			return
		}
		id, secret, _ := r.BasicAuth()
		if id != "cid" || secret != "csecret" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok-123","token_type":"bearer","expires_in":3600}`)
	}))
	t.Cleanup(tokens.Close)

	// A forwarded name of the never-forward list is refused at save.
	if code, _ := call(t, "PUT", base+"/api/v1/ingress/queues/h", map[string]any{"forward": []map[string]string{
		{"from": "header", "name": "X-Trace", "as": "Authorization"}}}); code != 400 {
		t.Fatalf("forward as Authorization: %d", code)
	}
	key := openQueue(t, base, "h", map[string]any{"partitionField": "customer", "forward": []map[string]string{
		{"from": "header", "name": "X-Trace", "as": "X-Trace-Id"},
		{"from": "query", "name": "src", "as": "X-Source"},
		{"from": "body", "name": "customer", "as": "X-Team"}}})
	bearer := createTarget(t, base, map[string]any{"queue": "h", "url": rcv.URL + "/bearer", "sign": true,
		"auth": map[string]any{"mode": "bearer", "token": "b-tok"}, "groupKeyHeader": "X-Group",
		"headers": map[string]string{"X-Team": "static wins"}})
	if bearer["signingSecret"] == "" || bearer["auth"].(map[string]any)["token"] != nil {
		t.Fatalf("bearer target: %v", bearer)
	}
	createTarget(t, base, map[string]any{"queue": "h", "url": rcv.URL + "/basic",
		"auth": map[string]any{"mode": "basic", "username": "u", "password": "p"}})
	createTarget(t, base, map[string]any{"queue": "h", "url": rcv.URL + "/oauth",
		"auth": map[string]any{"mode": "oauth2", "clientId": "cid", "clientSecret": "csecret", "tokenUrl": tokens.URL}})
	if code, out := call(t, "GET", base+"/api/v1/delivery/targets/"+bearer["id"].(string), nil); code != 200 ||
		out["signingSecret"] != nil || out["auth"].(map[string]any)["token"] != nil {
		t.Fatalf("a target answered with a secret: %d %v", code, out)
	}
	code, acc := call(t, "POST", base+"/ingress/v1/h?src=web", `{"customer":"c42"}`, "X-Api-Key", key,
		"X-Trace", "tr-1", "X-Queuey-Path", "up:stream", "Idempotency-Key", "evt-1")
	if code != 202 {
		t.Fatalf("event: %d %v", code, acc)
	}
	waitFor(t, 30*time.Second, "three deliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	b := got["/bearer"]
	for name, want := range map[string]string{"Authorization": "Bearer b-tok", "X-Group": "c42", "X-Trace-Id": "tr-1",
		"X-Source": "web", "X-Team": "static wins", "Idempotency-Key": "evt-1", "X-Queuey-Event-Id": acc["eventId"].(string),
		"X-Queuey-Path": "up:stream,cell:h", "Content-Type": "application/json"} {
		if b.Get(name) != want {
			t.Errorf("bearer target's %s: %q, want %q", name, b.Get(name), want)
		}
	}
	if b.Get("X-Queuey-Signature") == "" || b.Get("X-Queuey-Key-Id") != bearer["signingKeyId"] {
		t.Errorf("bearer target not signed: %v", b)
	}
	if got["/basic"].Get("Authorization") != "Basic dTpw" || got["/basic"].Get("X-Team") != "c42" ||
		got["/basic"].Get("X-Queuey-Signature") != "" {
		t.Errorf("basic target: %v", got["/basic"])
	}
	if got["/oauth"].Get("Authorization") != "Bearer tok-123" {
		t.Errorf("oauth2 target: %v", got["/oauth"])
	}
	var atts map[string]any
	waitFor(t, 10*time.Second, "the attempts recorded", func() bool {
		var code int
		code, atts = call(t, "GET", base+"/api/v1/delivery/attempts/h/"+acc["eventId"].(string), nil)
		l, _ := atts["deliveries"].([]any)
		return code == 200 && len(l) == 3
	})
	d := atts["deliveries"].([]any)[0].(map[string]any)
	a := d["attempts"].([]any)[0].(map[string]any)
	if d["outcome"] != delivery.OutcomeDelivered || a["code"] != 200.0 || a["status"] != "delivered" {
		t.Fatalf("attempts: %v", atts)
	}
}
