package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/testlog"
)

// Long polls that sleep are taken off net/http (httpapi.Parking); these
// tests check what a client sees: the same answer, byte for byte, as a
// poll that did not sleep, and the connection going on (or closing) as
// net/http would have it.

// rawClient is one HTTP/1.x connection spoken by hand.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, conn: c, br: bufio.NewReader(c)}
}

func (c *rawClient) send(proto, method, target string, headers []string, body string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\nHost: localhost\r\n", method, target, proto)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next response's bytes as sent (framing included) and
// whether the server closed the connection after it.
func (c *rawClient) read() (raw []byte, closed bool) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var out bytes.Buffer
	length, chunked := -1, false
	status := 0
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading header: %v (so far %q)", err, out.String())
		}
		out.WriteString(line)
		l := strings.TrimRight(line, "\r\n")
		if l == "" {
			break
		}
		if status == 0 {
			status, _ = strconv.Atoi(strings.Fields(l)[1])
			continue
		}
		k, v, _ := strings.Cut(l, ": ")
		switch strings.ToLower(k) {
		case "content-length":
			length, _ = strconv.Atoi(v)
		case "transfer-encoding":
			chunked = v == "chunked"
		}
	}
	switch {
	case status == http.StatusNoContent:
	case chunked:
		for {
			line, err := c.br.ReadString('\n')
			if err != nil {
				c.t.Fatal(err)
			}
			out.WriteString(line)
			n, _ := strconv.ParseInt(strings.TrimRight(line, "\r\n"), 16, 64)
			data := make([]byte, n+2)
			if _, err := io.ReadFull(c.br, data); err != nil {
				c.t.Fatal(err)
			}
			out.Write(data)
			if n == 0 {
				break
			}
		}
	case length >= 0:
		data := make([]byte, length)
		if _, err := io.ReadFull(c.br, data); err != nil {
			c.t.Fatal(err)
		}
		out.Write(data)
	default: // until the server closes
		data, _ := io.ReadAll(c.br)
		out.Write(data)
		return out.Bytes(), true
	}
	return out.Bytes(), c.closed()
}

// closed reports whether the server closed the connection (no bytes come,
// end of file); it waits briefly for the close to arrive.
func (c *rawClient) closed() bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.br.Peek(1)
	_ = c.conn.SetReadDeadline(time.Time{})
	return err == io.EOF
}

// varying matches what differs between two answers of the same shape:
// the date, and a message's ids and timestamp.
var varying = regexp.MustCompile(`Date: [^\r]*|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)

func normalize(b []byte) string { return varying.ReplaceAllString(string(b), "<v>") }

// parkedGauge is the broker's count of sleeping long polls.
func parkedGauge(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n := 0.0
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "queen_pop_waiting") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += v
		}
	}
	return int(n)
}

func waitParked(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for parkedGauge(t, base) != n {
		if time.Now().After(deadline) {
			t.Fatalf("parked polls: %d, want %d", parkedGauge(t, base), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func pushOne(t *testing.T, base, queue, payload string) {
	t.Helper()
	body := fmt.Sprintf(`{"items":[{"queue":%q,"payload":%s}]}`, queue, payload)
	resp, err := http.Post(base+"/api/v1/push", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("push: %d", resp.StatusCode)
	}
}

// popNow pops queue without waiting: the status and the body.
func popNow(t *testing.T, base, queue string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/pop/queue/" + queue + "?wait=false")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

func TestParkedPollAnswersAsNetHTTP(t *testing.T) {
	ln := listen(t)
	serve(t, server.Config{CORSAllowOrigins: []string{"https://app.example"}}, ln)
	addr := ln.Addr().String()
	base := "http://" + addr
	small := `{"n":1}`
	big := `{"s":"` + strings.Repeat("x", 3000) + `"}` // past net/http's 2 KiB: chunked on HTTP/1.1
	shapes := []struct {
		name    string
		proto   string
		headers []string
	}{
		{"http/1.1", "HTTP/1.1", nil},
		{"http/1.1 close", "HTTP/1.1", []string{"Connection: close"}},
		{"http/1.0", "HTTP/1.0", nil},
		{"http/1.0 keep-alive", "HTTP/1.0", []string{"Connection: keep-alive"}},
	}
	for i, sh := range shapes {
		for _, payload := range []string{"", small, big} {
			name := sh.name + map[string]string{"": " 204", small: " 200", big: " 200 big"}[payload]
			t.Run(name, func(t *testing.T) {
				queue := fmt.Sprintf("park-%d-%d", i, len(payload))
				headers := append([]string{"Origin: https://app.example", "X-Request-Id: fixed-id"}, sh.headers...)
				// The reference: a pop that finds its message at once (or,
				// for 204, does not wait), served by net/http.
				if payload != "" {
					pushOne(t, base, queue, payload)
				}
				ref := dialRaw(t, addr)
				wait := "true&timeout=5000"
				if payload == "" {
					wait = "false"
				}
				ref.send(sh.proto, "GET", "/api/v1/pop/queue/"+queue+"?autoAck=true&wait="+wait, headers, "")
				want, wantClosed := ref.read()

				// The same pop, parked first, then woken (or timed out).
				c := dialRaw(t, addr)
				timeout := "5000"
				if payload == "" {
					timeout = "300"
				}
				c.send(sh.proto, "GET", "/api/v1/pop/queue/"+queue+"?autoAck=true&wait=true&timeout="+timeout, headers, "")
				waitParked(t, base, 1)
				if payload != "" {
					pushOne(t, base, queue, payload)
				}
				got, gotClosed := c.read()
				if normalize(got) != normalize(want) {
					t.Errorf("parked answer:\n%s\nwant (not parked):\n%s", got, want)
				}
				if gotClosed != wantClosed {
					t.Errorf("connection closed after the parked answer: %v, after the other: %v", gotClosed, wantClosed)
				}
				if !gotClosed {
					// Keep-alive goes on: the next request on the same
					// connection is served.
					c.send(sh.proto, "GET", "/health", sh.headers, "")
					if next, _ := c.read(); !bytes.HasPrefix(next, []byte(sh.proto+" 200 OK")) {
						t.Errorf("next request on the connection: %q", next)
					}
				}
				waitParked(t, base, 0)
			})
		}
	}
}

func TestParkedPollClientLeavesLeaseKept(t *testing.T) {
	ln := listen(t)
	serve(t, server.Config{}, ln)
	addr := ln.Addr().String()
	base := "http://" + addr
	c := dialRaw(t, addr)
	c.send("HTTP/1.1", "GET", "/api/v1/pop/queue/left?wait=true&timeout=30000", nil, "")
	waitParked(t, base, 1)
	c.conn.Close()
	waitParked(t, base, 0)
	pushOne(t, base, "left", `{"n":1}`)
	// The poll that left took nothing: the next pop gets the message.
	if code, body := popNow(t, base, "left"); code != http.StatusOK || !strings.Contains(body, `"data":{"n":1}`) {
		t.Fatalf("pop after the parked poll left: %d %s", code, body)
	}
}

func TestParkedPollsAtShutdown(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := server.New(server.Config{}, st)
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	base := "http://" + addr
	const n = 5
	var clients []*rawClient
	for i := range n {
		c := dialRaw(t, addr)
		c.send("HTTP/1.1", "GET", fmt.Sprintf("/api/v1/pop/queue/stop-%d?autoAck=true&wait=true&timeout=60000", i), nil, "")
		clients = append(clients, c)
	}
	waitParked(t, base, n)
	// One more connection, answered after a parked poll and idle since.
	idle := dialRaw(t, addr)
	idle.send("HTTP/1.1", "GET", "/api/v1/pop/queue/idle?autoAck=true&wait=true&timeout=100", nil, "")
	if got, closed := idle.read(); !bytes.HasPrefix(got, []byte("HTTP/1.1 204")) || closed {
		t.Fatalf("idle connection's poll: %q, closed %v", got, closed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	for i, c := range clients {
		got, closed := c.read()
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 204 No Content")) || !closed {
			t.Errorf("parked poll %d at shutdown: %q, closed %v", i, got, closed)
		}
	}
	if !idle.closed() {
		t.Error("the idle connection stayed open after shutdown")
	}
}

// TestParkedPollOverTLS: over HTTPS with HTTP/1.1, a parked poll answers and
// its connection serves the next request without a new handshake.
func TestParkedPollOverTLS(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	ca.writeLeaf(t, "parked", certFile, keyFile, time.Now().Add(-time.Minute))
	ln := listen(t)
	serve(t, server.Config{TLSCertFile: certFile, TLSKeyFile: keyFile}, ln)
	addr := ln.Addr().String()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	base := "https://" + addr
	var conns atomic.Int32 // new connections; the poll's goroutine counts too
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			conns.Add(1)
		}
	}}
	fetch := func(url string) (int, string, error) {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.Proto != "HTTP/1.1" {
			return 0, "", fmt.Errorf("served over %s", resp.Proto)
		}
		return resp.StatusCode, string(body), nil
	}
	get := func(url string) (int, string) {
		t.Helper()
		status, body, err := fetch(url)
		if err != nil {
			t.Fatal(err)
		}
		return status, body
	}
	done := make(chan string, 1)
	go func() {
		status, body, err := fetch(base + "/api/v1/pop/queue/tls?autoAck=true&wait=true&timeout=20000")
		if err != nil {
			done <- err.Error()
			return
		}
		done <- fmt.Sprint(status, " ", body)
	}()
	gauge := func() int {
		status, body := get(base + "/metrics/prometheus")
		if status != http.StatusOK {
			t.Fatalf("metrics: %d", status)
		}
		n := 0
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "queen_pop_waiting") {
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				n += int(v)
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); gauge() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the poll never parked")
		}
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/push", strings.NewReader(`{"items":[{"queue":"tls","payload":{"n":1}}]}`))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-done; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"data":{"n":1}`) {
		t.Fatalf("parked poll over TLS: %s", got)
	}
	before := conns.Load()
	for range 3 {
		if status, _ := get(base + "/health"); status != http.StatusOK {
			t.Fatalf("health: %d", status)
		}
	}
	if n := conns.Load(); n != before {
		t.Errorf("%d new connections after the parked poll; want its connection reused", n-before)
	}
}

// panickyStore panics in LanePop while armed: a look of a parked poll, woken
// by a push, runs into it on the poll's own goroutine.
type panickyStore struct {
	store.Store
	armed atomic.Bool
}

func (s *panickyStore) LanePop(ctx context.Context, p *store.LanePopParams) (*store.PopResult, error) {
	if s.armed.Load() {
		panic("lane pop exploded")
	}
	return s.Store.LanePop(ctx, p)
}

func TestParkedPollThatPanicsAnswers500AndTheBrokerLives(t *testing.T) {
	inner, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st := &panickyStore{Store: inner}
	var logged testlog.Buffer
	ln := listen(t)
	serveStore(t, server.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))}, st, ln)
	addr := ln.Addr().String()
	base := "http://" + addr

	c := dialRaw(t, addr)
	c.send("HTTP/1.1", "GET", "/api/v1/pop/queue/boom?wait=true&timeout=30000", []string{"X-Request-Id: poll-that-panics"}, "")
	waitParked(t, base, 1)
	st.armed.Store(true)
	pushOne(t, base, "boom", `{"n":1}`) // wakes the poll, whose look panics
	got, closed := c.read()
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 500 ")) || !bytes.Contains(got, []byte("X-Request-Id: poll-that-panics")) {
		t.Fatalf("answer of the parked poll that panicked:\n%s\nwant a 500 with its request id", got)
	}
	if !closed {
		t.Errorf("the connection of the poll that panicked stayed open")
	}
	waitParked(t, base, 0)
	for _, want := range []string{"panic recovered in a parked long poll", "requestId=poll-that-panics", "lane pop exploded", "park.go"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged.String())
		}
	}

	// The broker lives: the message the push stored is popped by the next
	// poll once the store behaves again.
	st.armed.Store(false)
	if code, body := popNow(t, base, "boom"); code != http.StatusOK || !strings.Contains(body, `"data":{"n":1}`) {
		t.Fatalf("pop after the panic: %d %s", code, body)
	}
}

func TestHandlerThatPanicsAnswers500WithItsRequestID(t *testing.T) {
	inner, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st := &panickyStore{Store: inner}
	st.armed.Store(true)
	var logged testlog.Buffer
	ln := listen(t)
	serveStore(t, server.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))}, st, ln)
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/v1/pop/queue/boom?wait=false", nil)
	req.Header.Set("X-Request-Id", "handler-that-panics")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a pop whose handler panics: %v, want a 500", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("X-Request-Id") != "handler-that-panics" {
		t.Fatalf("a pop whose handler panics: %d %v %s, want a 500 with its request id", resp.StatusCode, resp.Header, body)
	}
	for _, want := range []string{"panic recovered in a handler", "requestId=handler-that-panics", "lane pop exploded"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged.String())
		}
	}
}
