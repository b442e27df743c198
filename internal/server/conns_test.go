package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/server"
)

// A client that talks to the broker once per connection, so that the test's
// own requests hold no keep-alive slot.
func oneShot() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
}

// timedHealth returns how long a GET /health on a new connection took to
// answer 200.
func timedHealth(t *testing.T, base string) time.Duration {
	t.Helper()
	start := time.Now()
	resp, err := oneShot().Get(base + "/health")
	if err != nil {
		t.Fatalf("the legitimate request was not served: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the legitimate request: %d", resp.StatusCode)
	}
	return time.Since(start)
}

// TestIdleKeepAliveFloodGivesWay: connections that made one request and then
// went quiet (the review's flood: GET /health, then silence) filled the cap
// for the two-minute idle timeout, and every new client waited. Near the cap
// the oldest idle ones are closed, so a new request is served at once; a
// parked long poll, the oldest connection of all, is not closed and still
// gets its message.
func TestIdleKeepAliveFloodGivesWay(t *testing.T) {
	const maxConns = 32
	ln := listen(t)
	serve(t, server.Config{MaxConnections: maxConns, IdleTimeout: 10 * time.Minute}, ln)
	addr := ln.Addr().String()
	base := "http://" + addr

	poll := dialRaw(t, addr)
	poll.send("HTTP/1.1", "GET", "/api/v1/pop/queue/flood?autoAck=true&wait=true&timeout=60000", nil, "")
	waitParkedOneShot(t, base, 1)
	// A request in progress: its body has not arrived.
	body := `{"items":[{"queue":"flood","payload":{"n":1}}]}`
	slow := dialRaw(t, addr)
	if _, err := fmt.Fprintf(slow.conn, "POST /api/v1/push HTTP/1.1\r\nHost: localhost\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:1]); err != nil {
		t.Fatal(err)
	}

	// The flood: twice the cap of idle keep-alives.
	var flood []*rawClient
	for range 2 * maxConns {
		c := dialRaw(t, addr)
		c.send("HTTP/1.1", "GET", "/health", nil, "")
		_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("flood request %d: %v", len(flood), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("flood request %d: %d, close %v", len(flood), resp.StatusCode, resp.Close)
		}
		flood = append(flood, c)
	}
	d := timedHealth(t, base)
	t.Logf("a new request during the idle flood: %v", d)
	if d > 5*time.Second {
		t.Fatalf("the legitimate request waited %v behind idle connections", d)
	}
	// The oldest idle ones gave way.
	if !flood[0].closed() {
		t.Error("the oldest idle connection is still open")
	}

	// The request in progress finishes; the parked poll gets its message.
	if _, err := slow.conn.Write([]byte(body[1:])); err != nil {
		t.Fatalf("the request in progress lost its connection: %v", err)
	}
	if got, _ := slow.read(); !bytes.HasPrefix(got, []byte("HTTP/1.1 201")) {
		t.Fatalf("the request in progress: %q", got)
	}
	if got, _ := poll.read(); !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) || !bytes.Contains(got, []byte(`"data":{"n":1}`)) {
		t.Fatalf("the parked poll: %q", got)
	}
	// Its connection, handed back to the server, serves the next request.
	poll.send("HTTP/1.1", "GET", "/health", nil, "")
	if got, _ := poll.read(); !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
		t.Fatalf("a request after the poll on its connection: %q", got)
	}

	// Every slot comes back when the clients go: only the scrape's own
	// connection is open then.
	poll.conn.Close()
	slow.conn.Close()
	for _, c := range flood {
		c.conn.Close()
	}
	waitGauge(t, base, "queen_http_connections_open", 1)
}

// TestSilentFloodGivesWay: connections that never send a byte held their
// slot for the read-header timeout. Near the cap they get a short one, so a
// new request waits about a second, not the read-header timeout.
func TestSilentFloodGivesWay(t *testing.T) {
	const maxConns = 32
	ln := listen(t)
	serve(t, server.Config{MaxConnections: maxConns, ReadHeaderTimeout: time.Minute}, ln)
	addr := ln.Addr().String()
	base := "http://" + addr
	var flood []net.Conn
	for range 2 * maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		flood = append(flood, c)
	}
	d := timedHealth(t, base)
	t.Logf("a new request during the silent flood: %v", d)
	if d > 10*time.Second {
		t.Fatalf("the legitimate request waited %v behind silent connections", d)
	}
	// The first of them was closed by the broker.
	_ = flood[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := flood[0].Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the oldest silent connection: read %d, %v; want it closed", n, err)
	}
}

// waitParkedOneShot is waitParked without a keep-alive connection.
func waitParkedOneShot(t *testing.T, base string, n int) {
	t.Helper()
	waitGauge(t, base, "queen_pop_waiting", n)
}

// waitGauge polls /metrics/prometheus, on connections of its own, until
// the series of name add up to n.
func waitGauge(t *testing.T, base, name string, n int) {
	t.Helper()
	got := 0.0
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := oneShot().Get(base + "/metrics/prometheus")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = 0
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				got += v
			}
		}
		if int(got) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v, want %d", name, got, n)
		}
	}
}

// TestHTTP2StreamFlood: one HTTP/2 connection carried 250 streams each, so a
// handful of connections held a thousand long polls under a cap of five.
// Streams are now limited per connection (SETTINGS_MAX_CONCURRENT_STREAMS
// 100), and beyond a connection's first they count against the requests in
// flight: past QUEEN_HTTP_MAX_IN_FLIGHT they are answered 503 with
// Retry-After, while a request on another connection is served.
func TestHTTP2StreamFlood(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	ca.writeLeaf(t, "h2", certFile, keyFile, time.Now().Add(-time.Minute))
	const maxInFlight, streams = 8, 60
	ln := listen(t)
	serve(t, server.Config{TLSCertFile: certFile, TLSKeyFile: keyFile, MaxConnections: 16, MaxInFlight: maxInFlight}, ln)
	addr := ln.Addr().String()
	base := "https://" + addr

	// The server's SETTINGS frame.
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(tc, tc)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %T, want SETTINGS", f)
	}
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || v != server.DefaultHTTP2MaxStreams {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d (sent %v), want %d", v, ok, server.DefaultHTTP2MaxStreams)
	}
	tc.Close()

	// The flood: long polls multiplexed on one connection.
	flooder := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool},
		ForceAttemptHTTP2: true, MaxConnsPerHost: 1}}
	defer flooder.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		status     int
		retryAfter string
		body       string
		err        error
	}
	answers := make(chan answer, streams)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range streams {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/pop/queue/h2flood?wait=true&timeout=60000", nil)
			resp, err := flooder.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.ProtoMajor != 2 {
				err = fmt.Errorf("served over %s", resp.Proto)
			}
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(body), err}
		})
	}
	// Every stream past the budget is refused at once; the others wait.
	for range streams - maxInFlight {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Fatal(a.err)
			}
			var eb api.ErrorBody
			if a.status != http.StatusServiceUnavailable || a.retryAfter == "" ||
				json.Unmarshal([]byte(a.body), &eb) != nil || eb.Error != api.ErrBusy.Message {
				t.Fatalf("a stream past the budget: %d, Retry-After %q, %s", a.status, a.retryAfter, a.body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("streams past the budget were not refused")
		}
	}

	// A client on a connection of its own is served meanwhile.
	legit := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool},
		ForceAttemptHTTP2: true}, Timeout: 20 * time.Second}
	defer legit.CloseIdleConnections()
	resp, err := legit.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"other","payload":{"n":1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.ProtoMajor != 2 {
		t.Fatalf("a push on another connection during the flood: %d over %s", resp.StatusCode, resp.Proto)
	}
	select {
	case a := <-answers:
		t.Fatalf("a poll within the budget answered early: %+v", a)
	default:
	}
}
