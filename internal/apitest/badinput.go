package apitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
)

// badCase is one request an attacker or an unlucky client might send, and
// the answer it must get: a status and, for errors, the start of the
// {"error"} text.
type badCase struct {
	name   string
	method string
	path   string
	body   any // nil, a string (sent as JSON), or a rawBody
	status int
	prefix string // of the error text; "" when the answer is not an error
}

// jstr is s as a JSON string literal (escapes and all).
func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pushWith is a push body whose single item has field set to the JSON text
// value (the other required fields valid).
func pushWith(queue, field, value string) string {
	item := map[string]string{"queue": jstr(queue), "payload": "1"}
	item[field] = value
	var b strings.Builder
	b.WriteString(`{"items":[{`)
	first := true
	for _, k := range []string{"queue", "partition", "transactionId", "traceId", "namespace", "task", "payload"} {
		v, ok := item[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(jstr(k) + ":" + v)
	}
	b.WriteString("}]}")
	return b.String()
}

// ackWith is an ack body with field set to the JSON text value.
func ackWith(field, value string) string {
	a := map[string]string{"transactionId": jstr("t-1"), "partitionId": jstr("0192f0a0-0000-7000-8000-000000000001"),
		"status": jstr("completed")}
	a[field] = value
	parts := make([]string, 0, len(a))
	for _, k := range []string{"transactionId", "partitionId", "leaseId", "consumerGroup", "status", "error"} {
		if v, ok := a[k]; ok {
			parts = append(parts, jstr(k)+":"+v)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// badInputCases builds the table. q is a queue name unique to the test.
func badInputCases(q string) []badCase {
	const (
		bad  = http.StatusBadRequest
		push = "/api/v1/push"
	)
	long := func(n int) string { return strings.Repeat("n", n) }
	var cs []badCase
	add := func(c badCase) { cs = append(cs, c) }

	// Every name field of a push item, each way a name can be wrong.
	badNames := []struct{ what, value, prefix string }{
		{"NUL", jstr("a\x00b"), "bad body: items[0]."},
		{"bell", jstr("a\x07b"), "bad body: items[0]."},
		{"newline", jstr("a\nb"), "bad body: items[0]."},
		{"DEL", jstr("a\x7fb"), "bad body: items[0]."},
		{"C1 control", jstr("a\u0085b"), "bad body: items[0]."},
		{"dot", jstr("."), "bad body: items[0]."},
		{"dot dot", jstr(".."), "bad body: items[0]."},
		{"256 bytes", jstr(long(256)), "bad body: items[0]."},
		{"3 KB", jstr(long(3000)), "bad body: items[0]."},
		{"10 KB", jstr(long(10000)), "bad body: items[0]."},
		{"a number", "42", "bad body: items[0]."},
		{"an object", `{"x":1}`, "bad body: items[0]."},
	}
	for _, field := range []string{"queue", "partition", "transactionId"} {
		for _, b := range badNames {
			add(badCase{name: "push " + field + " " + b.what, method: "POST", path: push,
				body: pushWith(q, field, b.value), status: bad, prefix: b.prefix + field})
		}
	}
	for _, field := range []string{"namespace", "task"} {
		for _, b := range badNames[:8] {
			add(badCase{name: "push " + field + " " + b.what, method: "POST", path: push,
				body: pushWith(q, field, b.value), status: bad, prefix: b.prefix + field})
		}
	}
	for _, b := range []struct{ what, value string }{
		{"NUL", jstr("a\x00")}, {"256 bytes", jstr(long(256))}, {"a number", "7"}, {"bell", jstr("\x07")},
	} {
		add(badCase{name: "push traceId " + b.what, method: "POST", path: push,
			body: pushWith(q, "traceId", b.value), status: bad, prefix: "bad body: items[0].traceId"})
	}
	// Names at the limit are fine; multi-byte characters count in bytes.
	add(badCase{name: "push queue of 255 bytes", method: "POST", path: push,
		body: pushWith(q[:5]+long(250), "payload", "1"), status: http.StatusCreated})
	add(badCase{name: "push queue of 85 three-byte characters", method: "POST", path: push,
		body: pushWith(strings.Repeat("€", 85), "payload", "1"), status: http.StatusCreated})
	add(badCase{name: "push queue of 86 three-byte characters", method: "POST", path: push,
		body: pushWith(strings.Repeat("€", 86), "payload", "1"), status: bad, prefix: "bad body: items[0].queue"})
	add(badCase{name: "push partition of 255 bytes", method: "POST", path: push,
		body: pushWith(q, "partition", jstr(long(255))), status: http.StatusCreated})
	add(badCase{name: "push transactionId of 255 bytes", method: "POST", path: push,
		body: pushWith(q, "transactionId", jstr(long(255))), status: http.StatusCreated})
	add(badCase{name: "push empty queue", method: "POST", path: push,
		body: pushWith("", "payload", "1"), status: bad, prefix: "bad body: items[0].queue is empty"})

	// Bodies that are not what a push is.
	for _, b := range []struct{ what, body, prefix string }{
		{"invalid UTF-8 in the payload", `{"items":[{"queue":"` + q + `","payload":"a` + "\xff" + `b"}]}`, "bad body: not valid UTF-8"},
		{"invalid UTF-8 in the queue", `{"items":[{"queue":"a` + "\xfe" + `","payload":1}]}`, "bad body: not valid UTF-8"},
		{"overlong UTF-8", `{"items":[{"queue":"a` + "\xc0\xaf" + `","payload":1}]}`, "bad body: not valid UTF-8"},
		{"UTF-8 encoded surrogate", `{"items":[{"queue":"` + q + `","payload":"` + "\xed\xa0\x80" + `"}]}`, "bad body: not valid UTF-8"},
		{"truncated UTF-8", `{"items":[{"queue":"` + q + `","payload":"` + "\xe2\x82" + `"}]}`, "bad body: not valid UTF-8"},
		{"payload missing", `{"items":[{"queue":"` + q + `"}]}`, "bad body: items[0].payload is missing"},
		{"payload not JSON", `{"items":[{"queue":"` + q + `","payload":nope}]}`, "bad body: "},
		{"NaN", `{"items":[{"queue":"` + q + `","payload":NaN}]}`, "bad body: "},
		{"Infinity", `{"items":[{"queue":"` + q + `","payload":Infinity}]}`, "bad body: "},
		{"items an object", `{"items":{"queue":"` + q + `"}}`, "bad body: items"},
		{"items a string", `{"items":"x"}`, "bad body: items"},
		{"items missing", `{}`, "bad body: items is missing"},
		{"items null", `{"items":null}`, "bad body: items is missing"},
		{"body null", `null`, "bad body: items is missing"},
		{"body an array", `[]`, "bad body: "},
		{"body a number", `42`, "bad body: "},
		{"body empty", ``, "bad body: "},
		{"body whitespace", "  \n\t ", "bad body: "},
		{"trailing garbage", `{"items":[]}x`, "bad body: "},
		{"unterminated", `{"items":[{"queue":"` + q, "bad body: "},
		{"single quotes", `{'items':[]}`, "bad body: "},
		{"a BOM", "\ufeff{\"items\":[]}", "bad body: "},
		{"100,000-deep arrays", `{"items":[{"queue":"` + q + `","payload":` + strings.Repeat("[", 100000) +
			strings.Repeat("]", 100000) + `}]}`, "bad body: "},
		{"100,000-deep objects", strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000), "bad body: "},
	} {
		add(badCase{name: "push " + b.what, method: "POST", path: push, body: rawBody{data: b.body, contentType: "application/json"},
			status: bad, prefix: b.prefix})
	}
	// Documented leniencies: the last of duplicate keys wins; any number is
	// a payload (stored as sent).
	add(badCase{name: "push duplicate keys: the last wins", method: "POST", path: push,
		body: `{"items":[{"queue":"a\u0000","queue":"` + q + `","payload":1}]}`, status: http.StatusCreated})
	add(badCase{name: "push a huge number as payload", method: "POST", path: push,
		body: `{"items":[{"queue":"` + q + `","payload":1e400}]}`, status: http.StatusCreated})

	// Pops: names in the path and the query, typed parameters.
	popQ := "/api/v1/pop/queue/" + q
	for _, b := range []struct{ what, path, prefix string }{
		{"queue with NUL", "/api/v1/pop/queue/a%00b", "bad path: queue"},
		{"queue with a control character", "/api/v1/pop/queue/a%07b", "bad path: queue"},
		{"queue of 300 bytes", "/api/v1/pop/queue/" + long(300), "bad path: queue"},
		{"queue with invalid UTF-8", "/api/v1/pop/queue/a%FFb", "bad path: queue"},
		{"queue dot", "/api/v1/pop/queue/.", "bad path: "},
		{"queue dot dot", "/api/v1/pop/queue/..", "bad path: "},
		{"queue dot dot escaped", "/api/v1/pop/queue/%2E%2E", "bad path: "},
		{"partition with NUL", popQ + "/partition/a%00", "bad path: partition"},
		{"partition dot dot", popQ + "/partition/..", "bad path: "},
		{"partition of 300 bytes", popQ + "/partition/" + long(300), "bad path: partition"},
		{"consumerGroup with NUL", popQ + "?consumerGroup=a%00b", "bad query: consumerGroup"},
		{"consumerGroup of 10,000 characters", popQ + "?consumerGroup=" + long(10000), "bad query: consumerGroup"},
		{"consumerGroup with invalid UTF-8", popQ + "?consumerGroup=%FF%FE", "bad query: consumerGroup"},
		{"consumerGroup dot dot", popQ + "?consumerGroup=..", "bad query: consumerGroup"},
		{"namespace with NUL", "/api/v1/pop?namespace=a%00", "bad query: namespace"},
		{"task of 300 bytes", "/api/v1/pop?task=" + long(300), "bad query: task"},
		{"batch not a number", popQ + "?batch=abc", "bad query: batch"},
		{"batch of 20 digits", popQ + "?batch=99999999999999999999", "bad query: batch"},
		{"batch past 32 bits", popQ + "?batch=9999999999", "bad query: batch"},
		{"batch a float", popQ + "?batch=1.5", "bad query: batch"},
		{"timeout negative", popQ + "?wait=true&timeout=-1", "bad query: timeout"},
		{"timeout over an hour", popQ + "?wait=true&timeout=3600001", "bad query: timeout"},
		{"timeout in exponent form", popQ + "?timeout=1e3", "bad query: timeout"},
		{"wait yes", popQ + "?wait=yes", "bad query: wait"},
		{"autoAck 1", popQ + "?autoAck=1", "bad query: autoAck"},
		{"partitions not a number", popQ + "?partitions=all", "bad query: partitions"},
		{"malformed escape", popQ + "?batch=%zz", "bad query: "},
		{"subscriptionFrom garbage", popQ + "?consumerGroup=g&subscriptionFrom=yesterday", "bad query: subscriptionFrom"},
		{"no queue, namespace or task", "/api/v1/pop", "namespace or task is required"},
	} {
		add(badCase{name: "pop " + b.what, method: "GET", path: b.path, status: bad, prefix: b.prefix})
	}
	// Documented leniencies: batch < 1 is 1; an unknown subscriptionMode
	// means all (Queen's JS client sends from_beginning).
	add(badCase{name: "pop batch -5 is a pop of one", method: "GET", path: popQ + "?batch=-5&consumerGroup=lenient",
		status: http.StatusOK})
	add(badCase{name: "pop subscriptionMode from_beginning means all", method: "GET",
		path: popQ + "?subscriptionMode=from_beginning&consumerGroup=fb", status: http.StatusOK})

	// Acks.
	for _, b := range []struct{ what, field, value, prefix string }{
		{"transactionId missing", "transactionId", "null", "bad body: transactionId is missing"},
		{"partitionId missing", "partitionId", "null", "bad body: partitionId is missing"},
		{"transactionId with NUL", "transactionId", jstr("t\x00"), "bad body: transactionId"},
		{"transactionId of 3 KB", "transactionId", jstr(long(3000)), "bad body: transactionId"},
		{"partitionId with NUL", "partitionId", jstr("p\x00"), "bad body: partitionId"},
		{"partitionId of 300 bytes", "partitionId", jstr(long(300)), "bad body: partitionId"},
		{"leaseId with NUL", "leaseId", jstr("l\x00"), "bad body: leaseId"},
		{"consumerGroup with NUL", "consumerGroup", jstr("g\x00"), "bad body: consumerGroup"},
		{"consumerGroup of 10,000 characters", "consumerGroup", jstr(long(10000)), "bad body: consumerGroup"},
		{"consumerGroup with a control character", "consumerGroup", jstr("g\x1b[31m"), "bad body: consumerGroup"},
		{"error text with NUL", "error", jstr("boom\x00"), "bad body: error"},
		{"error text of 20 KB", "error", jstr(long(20 << 10)), "bad body: error"},
		{"status a number", "status", "1", "bad body: status"},
		{"transactionId a number", "transactionId", "5", "bad body: transactionId"},
	} {
		add(badCase{name: "ack " + b.what, method: "POST", path: "/api/v1/ack", body: ackWith(b.field, b.value),
			status: bad, prefix: b.prefix})
	}
	add(badCase{name: "ack with invalid UTF-8 in the group", method: "POST", path: "/api/v1/ack",
		body:   rawBody{data: ackWith("consumerGroup", `"g`+"\xff"+`"`), contentType: "application/json"},
		status: bad, prefix: "bad body: not valid UTF-8"})
	add(badCase{name: "ack of an unknown partition is unresolvable", method: "POST", path: "/api/v1/ack",
		body: ackWith("status", jstr("completed")), status: http.StatusOK})
	for _, b := range []struct{ what, body, prefix string }{
		{"not an array", `{"acknowledgments":{}}`, "bad body: acknowledgments"},
		{"missing", `{}`, "bad body: acknowledgments is missing"},
		{"second element with NUL", `{"acknowledgments":[` + ackWith("status", `"completed"`) + "," +
			ackWith("transactionId", jstr("t\x00")) + `]}`, "bad body: acknowledgments[1].transactionId"},
		{"top-level group with NUL", `{"consumerGroup":"g\u0000","acknowledgments":[]}`, "bad body: consumerGroup"},
		{"top-level group of 300 bytes", `{"consumerGroup":` + jstr(long(300)) + `,"acknowledgments":[]}`, "bad body: consumerGroup"},
	} {
		add(badCase{name: "ack batch " + b.what, method: "POST", path: "/api/v1/ack/batch", body: b.body,
			status: bad, prefix: b.prefix})
	}

	// Lease extension.
	ext := "/api/v1/lease/0192f0a0-0000-7000-8000-000000000009/extend"
	for _, b := range []struct{ what, path, body, prefix string }{
		{"seconds negative", ext, `{"seconds":-1}`, "bad body: seconds"},
		{"seconds 10,000,000,000", ext, `{"seconds":10000000000}`, "bad body: seconds"},
		{"seconds past 64 bits", ext, `{"seconds":99999999999999999999}`, "bad body: seconds"},
		{"seconds a string", ext, `{"seconds":"60"}`, "bad body: seconds"},
		{"leaseId with NUL", "/api/v1/lease/a%00/extend", `{}`, "bad path: leaseId"},
		{"leaseId of 300 bytes", "/api/v1/lease/" + long(300) + "/extend", `{}`, "bad path: leaseId"},
	} {
		add(badCase{name: "extend " + b.what, method: "POST", path: b.path, body: b.body, status: bad, prefix: b.prefix})
	}

	// Transactions: pre-flight failures are 400 in the transaction envelope.
	tx := "/api/v1/transaction"
	for _, b := range []struct{ what, body, prefix string }{
		{"operations empty", `{"operations":[]}`, "operations array cannot be empty"},
		{"operations missing", `{}`, "bad body: operations is missing"},
		{"unknown type", `{"operations":[{"type":"pull"}]}`, "unsupported operation type"},
		{"push with a NUL queue", `{"operations":[{"type":"push","items":[{"queue":"a\u0000","payload":1}]}]}`,
			"bad body: operations[0].items[0].queue"},
		{"ack with a 10,000-character group", `{"operations":[{"type":"ack","transactionId":"t","partitionId":"p",` +
			`"consumerGroup":` + jstr(long(10000)) + `}]}`, "bad body: operations[0].consumerGroup"},
		{"ack with NUL in its id", `{"operations":[{"type":"ack","transactionId":"t\u0000","partitionId":"p"}]}`,
			"bad body: operations[0].transactionId"},
		{"requiredLeases with NUL", `{"operations":[{"type":"ack","transactionId":"t","partitionId":"p"}],` +
			`"requiredLeases":["l\u0000"]}`, "bad body: requiredLeases[0]"},
	} {
		add(badCase{name: "transaction " + b.what, method: "POST", path: tx, body: b.body, status: bad, prefix: b.prefix})
	}

	// Configure and delete.
	cfg := "/api/v1/configure"
	for _, b := range []struct{ what, body, prefix string }{
		{"queue with NUL", `{"queue":"a\u0000"}`, "bad body: queue"},
		{"queue of 3 KB", `{"queue":` + jstr(long(3000)) + `}`, "bad body: queue"},
		{"queue dot dot", `{"queue":".."}`, "bad body: queue"},
		{"namespace with a control character", `{"queue":"` + q + `","namespace":"\u0001"}`, "bad body: namespace"},
		{"leaseTime 10,000,000,000", `{"queue":"` + q + `","options":{"leaseTime":10000000000}}`, "bad body: options.leaseTime"},
		{"leaseTime negative", `{"queue":"` + q + `","options":{"leaseTime":-1}}`, "bad body: options.leaseTime"},
		{"retryLimit negative", `{"queue":"` + q + `","options":{"retryLimit":-3}}`, "bad body: options.retryLimit"},
		{"retryLimit huge", `{"queue":"` + q + `","options":{"retryLimit":2147483648}}`, "bad body: options.retryLimit"},
		{"priority past the range", `{"queue":"` + q + `","options":{"priority":1000000000}}`, "bad body: options.priority"},
		{"delayedProcessing negative", `{"queue":"` + q + `","options":{"delayedProcessing":-5}}`, "bad body: options.delayedProcessing"},
		{"leaseTime a string", `{"queue":"` + q + `","options":{"leaseTime":"30"}}`, "bad body: options.leaseTime"},
		{"leaseTime a float", `{"queue":"` + q + `","options":{"leaseTime":1.5}}`, "bad body: options.leaseTime"},
	} {
		add(badCase{name: "configure " + b.what, method: "POST", path: cfg, body: b.body, status: bad, prefix: b.prefix})
	}
	for _, b := range []struct{ what, path, prefix string }{
		{"with NUL", "/api/v1/resources/queues/a%00", "bad path: queue"},
		{"of 300 bytes", "/api/v1/resources/queues/" + long(300), "bad path: queue"},
		{"dot dot", "/api/v1/resources/queues/..", "bad path: "},
	} {
		add(badCase{name: "delete queue " + b.what, method: "DELETE", path: b.path, status: bad, prefix: b.prefix})
	}

	// Maintenance and routes.
	add(badCase{name: "maintenance enabled a string", method: "POST", path: "/api/v1/system/maintenance",
		body: `{"enabled":"yes"}`, status: bad, prefix: "bad body: enabled"})
	add(badCase{name: "maintenance enabled missing", method: "POST", path: "/api/v1/system/maintenance",
		body: `{}`, status: bad, prefix: "enabled (boolean) is required"})
	add(badCase{name: "double slash", method: "GET", path: "/api/v1//pop/queue/" + q, status: http.StatusNotFound,
		prefix: "Not Found"})
	add(badCase{name: "wrong method", method: "PUT", path: push, body: `{}`, status: http.StatusNotFound, prefix: "Not Found"})
	add(badCase{name: "HEAD on a pop", method: "HEAD", path: popQ, status: http.StatusNotFound})
	return cs
}

// testBadInput sends the table to one server, then checks that the server is
// still fine: a control queue pushes, pops and acks, and /health is 200.
func (s *suite) testBadInput(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("bad")
		cases := badInputCases(q)
		if len(cases) < 100 {
			t.Fatalf("the bad-input table has %d cases, want at least 100", len(cases))
		}
		for _, tc := range cases {
			r := c.do(t, tc.method, tc.path, tc.body)
			what := tc.name + " (" + tc.method + " " + truncate(tc.path, 80) + ")"
			switch {
			case tc.method == "HEAD":
				if r.Status != tc.status {
					t.Errorf("%s: status %d, want %d", what, r.Status, tc.status)
				}
			case tc.prefix == "" && tc.status >= 400:
				t.Errorf("%s: a refusal needs an error prefix", what)
			case tc.prefix == "":
				if r.Status != tc.status {
					t.Errorf("%s: status %d, want %d; body %s", what, r.Status, tc.status, truncate(string(r.Body), 300))
				}
			default:
				var m map[string]any
				err := json.Unmarshal(r.Body, &m)
				msg, _ := m["error"].(string)
				if r.Status != tc.status || err != nil || !strings.HasPrefix(msg, tc.prefix) {
					t.Errorf("%s: got %d %s, want %d with an error starting %q", what, r.Status,
						truncate(string(r.Body), 300), tc.status, tc.prefix)
					continue
				}
				wantHumanError(t, what, msg)
			}
		}
		t.Logf("%d bad inputs answered", len(cases))
		checkStillServing(t, c)
	})

	t.Run("a 1 MB header is refused with 431", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		resp := rawExchange(t, c.base, "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: "+strings.Repeat("h", 1<<20)+"\r\n\r\n")
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("1 MB header: status %d, want 431", resp.StatusCode)
		}
		checkStillServing(t, c)
	})

	t.Run("oversized headers and URLs are answered 431 and 414 to clients still sending", func(t *testing.T) {
		// A client that writes its whole request before reading (Python's
		// http.client, Node's fetch) must get the answer, not a reset:
		// the broker reads and discards what is still coming, then closes.
		t.Parallel()
		c := s.server(t)
		many := strings.Repeat("X-A: b\r\n", 10000)
		for _, tc := range []struct {
			name, req string
			status    int
		}{
			{"100 KB token", "GET /api/v1/resources/queues HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + strings.Repeat("a", 100<<10) + "\r\n\r\n", 431},
			{"10,000 small headers", "GET /health HTTP/1.1\r\nHost: localhost\r\n" + many + "\r\n", 431},
			{"1 MB header", "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("h", 1<<20) + "\r\n\r\n", 431},
			{"100 KB URL", "GET /health?x=" + strings.Repeat("u", 100<<10) + " HTTP/1.1\r\nHost: localhost\r\n\r\n", 414},
		} {
			conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(conn, tc.req); err != nil {
				t.Errorf("%s: writing the whole request: %v (the broker reset the connection)", tc.name, err)
				conn.Close()
				continue
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Errorf("%s: reading the answer after the whole request: %v", tc.name, err)
			} else if resp.StatusCode != tc.status {
				t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
			}
			conn.Close()
		}
		// Go's own client, which reads while it writes.
		req, _ := http.NewRequest("GET", c.base+"/health", nil)
		req.Header.Set("Authorization", "Bearer "+strings.Repeat("a", 100<<10))
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 431 {
			t.Errorf("net/http client, 100 KB token: %v %v, want 431", resp, err)
		} else {
			resp.Body.Close()
		}
		if resp, err := http.Get(c.base + "/health?x=" + strings.Repeat("u", 100<<10)); err != nil || resp.StatusCode != 414 {
			t.Errorf("net/http client, 100 KB URL: %v %v, want 414", resp, err)
		} else {
			resp.Body.Close()
		}
		checkStillServing(t, c)
	})

	t.Run("names . and .. are refused everywhere, push included", func(t *testing.T) {
		// What push accepts, every route must reach: a "." or ".."
		// partition could never be named in a path, so no route accepts
		// one, and push refuses it with a 400 naming the field.
		t.Parallel()
		c := s.server(t)
		q := uniq("dots")
		for _, name := range []string{".", ".."} {
			for _, tc := range []struct {
				method, path string
				body         any
				prefix       string
			}{
				{"POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": q, "partition": name, "payload": 1}}},
					`bad body: items[0].partition cannot be "` + name + `"`},
				{"POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": name, "payload": 1}}},
					`bad body: items[0].queue cannot be "` + name + `"`},
				{"POST", "/api/v1/configure", map[string]any{"queue": name}, `bad body: queue cannot be "` + name + `"`},
				{"GET", "/api/v1/pop/queue/" + q + "?wait=false&consumerGroup=" + name, nil, `bad query: consumerGroup cannot be "` + name + `"`},
				{"GET", "/api/v1/pop/queue/" + q + "/partition/" + strings.ReplaceAll(name, ".", "%2E") + "?wait=false", nil, "bad path: "},
			} {
				wantPlainError(t, c.do(t, tc.method, tc.path, tc.body), http.StatusBadRequest, tc.prefix)
			}
		}
		c.popNone(t, queuePath(q)+"?wait=false")
	})

	t.Run("a slow client cannot hold a refused connection open", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: "+strings.Repeat("h", 100<<10)); err != nil {
			t.Fatal(err)
		}
		// Keep trickling a byte every 50 ms: the discard is bounded in
		// time, so the broker closes anyway (within its 5 s bound, plus
		// net/http's half a second before it).
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_, _ = io.Copy(io.Discard, conn)
		}()
		start := time.Now()
		for {
			select {
			case <-closed:
				if d := time.Since(start); d > 15*time.Second {
					t.Fatalf("the connection closed after %v", d)
				}
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("h")); err != nil {
				<-closed
				return
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("a client trickling bytes after a 431 held the connection for 20 s")
			}
		}
	})

	t.Run("HTTP/1.0 is served", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("http10")
		body := `{"items":[{"queue":"` + q + `","payload":1}]}`
		resp := rawExchange(t, c.base, fmt.Sprintf("POST /api/v1/push HTTP/1.0\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\n\r\n%s", len(body), body))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("HTTP/1.0 push: status %d, want 201", resp.StatusCode)
		}
		c.popOK(t, queuePath(q))
	})

	t.Run("a body trickled a byte at a time is cut off", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", ReadTimeout: 300 * time.Millisecond})
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, "POST /api/v1/push HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		// One byte every 50 ms: never idle for the read timeout, but far
		// below the minimum rate (1 KB/s) once the read timeout has passed.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 200 {
				time.Sleep(50 * time.Millisecond)
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a trickled body: %v", err)
		}
		took := time.Since(start)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "too slow") {
			t.Fatalf("trickled body: %d %s, want 408 too slow", resp.StatusCode, body)
		}
		if took > 5*time.Second {
			t.Errorf("trickled body cut off after %v, want about the read timeout", took)
		}
		<-done
		// The connection is closed: reading more ends.
		if _, err := bufio.NewReader(conn).ReadByte(); err == nil {
			t.Error("the connection stayed open after the 408")
		}
		checkStillServing(t, c)
	})

	t.Run("a body that stops arriving is cut off", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", ReadTimeout: 300 * time.Millisecond})
		start := time.Now()
		resp := rawExchange(t, c.base, "POST /api/v1/ack HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n{\"tr")
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("stalled body: status %d, want 408", resp.StatusCode)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("stalled body cut off after %v, want about the read timeout (300 ms)", took)
		}
	})
}

// rawExchange writes req on a fresh connection and reads one response.
func rawExchange(t *testing.T, base, req string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go io.WriteString(conn, req) // the server may answer before reading it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// checkStillServing pushes, pops and acks on a fresh queue and checks
// /health: whatever came before, the broker must still work.
func checkStillServing(t *testing.T, c *client) {
	t.Helper()
	q := uniq("control")
	c.pushN(t, q, "p", 3)
	p := c.popOK(t, queuePath(q)+"?batch=10")
	if len(p.Messages) != 3 {
		t.Fatalf("control queue: popped %d messages, want 3", len(p.Messages))
	}
	c.ackAll(t, "", p)
	wantStatus(t, c.do(t, "GET", "/health", nil), http.StatusOK)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
