package apitest

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
)

// testConventions covers the rules every route follows (seed 000, spec §0–1).
func (s *suite) testConventions(t *testing.T) {
	t.Run("JSON body is parsed whatever the Content-Type", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("ct")
		body := `{"items":[{"queue":"` + q + `","payload":{"x":1}}]}`
		for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded"} {
			r := c.do(t, "POST", "/api/v1/push", rawBody{data: body, contentType: ct})
			var res []pushResult
			wantJSON(t, r, http.StatusCreated, &res)
			if len(res) != 1 || res[0].Status != "queued" {
				t.Fatalf("push with Content-Type %q: %s", ct, r.Body)
			}
		}
		p := c.popOK(t, queuePath(q)+"?batch=10")
		if len(p.Messages) != 3 {
			t.Fatalf("pop: %d messages, want 3", len(p.Messages))
		}
	})

	t.Run("unparseable body is 400 bad body", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		cases := []struct{ path, body string }{
			{"/api/v1/push", `{`},
			{"/api/v1/push", `not json`},
			{"/api/v1/push", ``},
			{"/api/v1/push", `{"items":[]} trailing`},
			{"/api/v1/ack", `{"transactionId":`},
			{"/api/v1/ack/batch", `[`},
			{"/api/v1/configure", `{queue:"x"}`},
		}
		for _, tc := range cases {
			r := c.do(t, "POST", tc.path, tc.body)
			wantPlainError(t, r, http.StatusBadRequest, "bad body: ")
		}
	})

	t.Run("mistyped push body is 400 bad body", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("typed")
		for _, body := range []string{
			`{"items":[{"queue":5,"payload":1}]}`,
			`{"items":{"queue":"` + q + `","payload":1}}`,
			`{"items":"x"}`,
			`{"items":[{"queue":"` + q + `","payload":1,"partition":7}]}`,
			`{"items":[{"queue":"` + q + `","payload":1,"transactionId":7}]}`,
			`{"items":[{"queue":"` + q + `","payload":1}, 3]}`,
			`{}`,
			`[]`,
		} {
			r := c.do(t, "POST", "/api/v1/push", body)
			wantPlainError(t, r, http.StatusBadRequest, "bad body: ")
		}
		// Nothing of a rejected request was written.
		c.popNone(t, queuePath(q))
	})

	t.Run("push item without payload is 400 bad body and writes nothing", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("nopayload")
		r := c.do(t, "POST", "/api/v1/push", map[string]any{"items": []map[string]any{
			{"queue": q, "payload": 1},
			{"queue": q},
		}})
		wantPlainError(t, r, http.StatusBadRequest, "bad body: ")
		c.popNone(t, queuePath(q))
	})

	t.Run("payload null is accepted and unknown fields are ignored", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("null")
		r := c.do(t, "POST", "/api/v1/push", `{"items":[{"queue":"`+q+`","payload":null,"frobnicate":true}],"bufferMs":5}`)
		var res []pushResult
		wantJSON(t, r, http.StatusCreated, &res)
		if len(res) != 1 || res[0].Status != "queued" {
			t.Fatalf("push of a null payload: %s", r.Body)
		}
		p := c.popOK(t, queuePath(q))
		if !jsonEqual(p.Messages[0].Data, []byte("null")) {
			t.Fatalf("pop: data %s, want null", p.Messages[0].Data)
		}
	})

	t.Run("typed query parameters reject the whole request with 400 bad query", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("query")
		c.pushN(t, q, "", 1)
		for _, qs := range []string{
			"batch=abc", "batch=1.5", "wait=1", "wait=yes", "wait=TRUE", "autoAck=1",
			"timeout=x", "partitions=x", "batch=10&wait=1",
		} {
			r := c.do(t, "GET", queuePath(q)+"?"+qs, nil)
			wantPlainError(t, r, http.StatusBadRequest, "bad query: ")
			r = c.do(t, "GET", partitionPath(q, "Default")+"?"+qs, nil)
			wantPlainError(t, r, http.StatusBadRequest, "bad query: ")
			r = c.do(t, "GET", "/api/v1/pop?namespace="+q+"&"+qs, nil)
			wantPlainError(t, r, http.StatusBadRequest, "bad query: ")
		}
		// None of the rejected pops took the message's lease.
		p := c.popOK(t, queuePath(q)+"?wait=false&autoAck=false&foo=bar")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("pop after rejected queries: payloads %v, want [0]", got)
		}
	})

	t.Run("body larger than MaxBodyBytes is 413", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{MaxBodyBytes: 1024, Version: "0.0.0-apitest"})
		q := uniq("big")
		small := `{"items":[{"queue":"` + q + `","payload":"` + strings.Repeat("s", 500) + `"}]}`
		big := `{"items":[{"queue":"` + q + `","payload":"` + strings.Repeat("b", 4000) + `"}]}`

		r := c.do(t, "POST", "/api/v1/push", small)
		wantStatus(t, r, http.StatusCreated)

		for _, body := range []any{big, chunkedBody{data: big}} {
			r = c.do(t, "POST", "/api/v1/push", body)
			wantStatus(t, r, http.StatusRequestEntityTooLarge)
			// The text names the limit and the setting that raises it.
			want := map[string]any{"error": "request body too large: the limit is 1024 bytes (QUEEN_MAX_BODY_BYTES)"}
			var m map[string]any
			if err := json.Unmarshal(r.Body, &m); err != nil || !reflect.DeepEqual(m, want) {
				t.Fatalf("%s: body %q, want %v", r.what, r.Body, want)
			}
		}
		r = c.do(t, "POST", "/api/v1/ack/batch", `{"acknowledgments":[],"pad":"`+strings.Repeat("p", 2000)+`"}`)
		wantStatus(t, r, http.StatusRequestEntityTooLarge)

		p := c.popOK(t, queuePath(q)+"?batch=10")
		if len(p.Messages) != 1 {
			t.Fatalf("pop: %d messages, want only the small one", len(p.Messages))
		}
	})

	t.Run("unknown routes and wrong methods are 404 no_such_route", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		want := map[string]any{"error": "Not Found", "code": "no_such_route"}
		for _, rt := range []struct{ method, path string }{
			{"GET", "/api/v1/nope"},
			{"POST", "/nope"},
			{"GET", "/api/v1/push"},
			{"DELETE", "/api/v1/ack"},
			{"GET", "/api/v1/ack/batch"},
			{"PUT", queuePath("q")},
			{"POST", queuePath("q")},
			{"GET", "/api/v1/transaction"},
			{"GET", "/api/v1/configure"},
			{"GET", "/api/v2/push"},
			{"POST", "/api/v1/lease/x"},
		} {
			r := c.do(t, rt.method, rt.path, nil)
			var m map[string]any
			wantJSON(t, r, http.StatusNotFound, &m)
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("%s: body %s, want exactly {\"error\":\"Not Found\",\"code\":\"no_such_route\"}", r.what, r.Body)
			}
		}
	})

	t.Run("every 204 has no body and no Content-Length", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("nc")
		c.configure(t, q, nil, "namespace", q+"-ns")
		for _, path := range []string{
			queuePath(uniq("unknown")),
			queuePath(q),
			partitionPath(q, "Default"),
			partitionPath(q, "nope"),
			queuePath(q) + "?consumerGroup=g1&batch=5",
			queuePath(q) + "?wait=true&timeout=100",
			"/api/v1/pop?namespace=" + q + "-ns",
		} {
			wantNoContent(t, c.do(t, "GET", path, nil))
		}
	})

	t.Run("raw socket: 204 has no Content-Length, no body, and the connection stays usable", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		q := uniq("empty-q")

		if _, err := conn.Write([]byte("GET " + queuePath(q) + " HTTP/1.1\r\nHost: localhost\r\n\r\n")); err != nil {
			t.Fatalf("write: %v", err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var head []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("read response head: %v (so far %q)", err, head)
			}
			if line == "\r\n" {
				break
			}
			head = append(head, line)
		}
		if len(head) == 0 || head[0] != "HTTP/1.1 204 No Content\r\n" {
			t.Fatalf("status line %q, want \"HTTP/1.1 204 No Content\"; head %q", head, head)
		}
		for _, h := range head[1:] {
			name, _, _ := strings.Cut(h, ":")
			if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
				t.Fatalf("204 carries %q; head %q", strings.TrimSpace(h), head)
			}
			if strings.EqualFold(strings.TrimSpace(name), "Transfer-Encoding") {
				t.Fatalf("204 carries %q; head %q", strings.TrimSpace(h), head)
			}
		}
		// Nothing may follow the blank line.
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 64)
		n, err := br.Read(buf)
		if n > 0 {
			t.Fatalf("204 followed by %d body bytes %q", n, buf[:n])
		}
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("after the 204 the connection ended (%v); want it kept alive", err)
		}

		// The same connection serves a second request.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")); err != nil {
			t.Fatalf("write second request: %v", err)
		}
		req, _ := http.NewRequest("GET", "/health", nil)
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("read second response: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("second request on the connection: status %d, want 200", resp.StatusCode)
		}
	})

	t.Run("every response carries X-Request-Id, the client's when it sent a usable one", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("reqid")
		seen := map[string]bool{}
		for _, rt := range []struct{ method, path, body string }{
			{"POST", "/api/v1/push", `{"items":[{"queue":"` + q + `","payload":1}]}`},
			{"GET", queuePath(q), ""},
			{"GET", queuePath(q), ""}, // 204
			{"POST", "/api/v1/push", `{`},
			{"GET", "/api/v1/nope", ""},
			{"GET", "/health", ""},
		} {
			var body any
			if rt.body != "" {
				body = rt.body
			}
			r := c.do(t, rt.method, rt.path, body)
			id := r.Header.Get("X-Request-Id")
			wantUUIDv7(t, r.what+" X-Request-Id", id)
			if seen[id] {
				t.Fatalf("%s: X-Request-Id %q was already used", r.what, id)
			}
			seen[id] = true
		}

		for sent, echoed := range map[string]bool{
			"client-7f3a":             true,
			strings.Repeat("a", 128):  true,
			strings.Repeat("a", 129):  false,
			"two words":               false,
			"0197f2b2-aaaa-7bbb-8ccc": true,
		} {
			req, _ := http.NewRequest("GET", c.base+"/health", nil)
			req.Header.Set("X-Request-Id", sent)
			resp, err := c.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("X-Request-Id")
			if echoed && got != sent {
				t.Fatalf("sent X-Request-Id %q, got %q back, want it echoed", sent, got)
			}
			if !echoed {
				wantUUIDv7(t, "X-Request-Id minted in place of "+sent, got)
			}
		}
	})

	t.Run("per-item verdicts come back in request order", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		qa, qb := uniq("order-a"), uniq("order-b")
		res := c.push(t,
			item(qb, 1, "transactionId", "tx-b1"),
			item(qa, 2, "transactionId", "tx-a1"),
			item(qb, 3, "transactionId", "tx-b2"),
		)
		for i, want := range []struct{ q, tx string }{{qb, "tx-b1"}, {qa, "tx-a1"}, {qb, "tx-b2"}} {
			if res[i].QueueName != want.q || res[i].TransactionID != want.tx {
				t.Fatalf("push element %d: %+v, want queueName %q transaction_id %q", i, res[i], want.q, want.tx)
			}
		}
		p := c.popOK(t, queuePath(qb)+"?batch=10")
		acks := []map[string]any{
			ackOf(p.Messages[0], "completed"),
			{"transactionId": "nope", "partitionId": p.Messages[0].PartitionID},
			ackOf(p.Messages[1], "completed"),
		}
		got := c.ackBatch(t, "", acks...) // checkAcks asserts index and transactionId order
		wantAck(t, "ack 0", got[0], true, false, "")
		wantAck(t, "ack 1 (unknown transactionId)", got[1], false, true, "unresolvable")
		wantAck(t, "ack 2", got[2], true, false, "")
	})

	t.Run("health", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		var m map[string]any
		wantJSON(t, c.do(t, "GET", "/health", nil), http.StatusOK, &m)
		wantHasKeys(t, "/health", m, "status", "database", "engine", "version")
		if m["status"] != "healthy" || m["database"] != "connected" {
			t.Fatalf("/health: %v, want status healthy and database connected", m)
		}
		if e, _ := m["engine"].(string); e == "" || e != c.engine {
			t.Fatalf("/health: engine %v, want %q (the store's engine)", m["engine"], c.engine)
		}
		if v, _ := m["version"].(string); v == "" {
			t.Fatalf("/health: version %v, want a non-empty string", m["version"])
		}
		if _, ok := m["error"]; ok {
			t.Fatalf("/health: has an error key: %v", m)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		c.pushN(t, uniq("metrics"), "", 3)
		var m map[string]any
		wantJSON(t, c.do(t, "GET", "/metrics", nil), http.StatusOK, &m)

		r := c.do(t, "GET", "/metrics/prometheus", nil)
		wantStatus(t, r, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Fatalf("/metrics/prometheus: Content-Type %q, want text/plain; version=0.0.4", ct)
		}
		if !regexp.MustCompile(`(?m)^(# TYPE )?queen_[a-zA-Z0-9_]+`).Match(r.Body) {
			t.Fatalf("/metrics/prometheus: no queen_ metric family in\n%s", r.Body)
		}
	})
}
