package e2e

// Issue 13, target 3: parked long polls cost no database queries while
// nothing is pushed, and a push of n messages wakes n polls of each consumer
// group, not all of them. Both engines, against the real binary; on
// PostgreSQL the broker reaches the database through a proxy that counts the
// statements it sends.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestIdleLongPolls(t *testing.T) {
	if testing.Short() {
		t.Skip("parks 1,000 long polls")
	}
	t.Run("sqlite", func(t *testing.T) {
		p := startProcess(t)
		checkIdleLongPolls(t, p.url, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		u := testURL(t)
		counter := startCountingProxy(t, dbAddr(t, u))
		p := startProcess(t, "QUEEN_DATABASE_URL="+proxiedURL(u, counter.ln.Addr().String()),
			"QUEEN_PG_SCHEMA="+newSchema(t))
		checkIdleLongPolls(t, p.url, counter)
	})
}

// checkIdleLongPolls parks 1,000 polls over 10 queues (the last queue's
// polls split between two consumer groups), watches them for 3 seconds, then
// pushes and counts the polls woken. counter is nil on the embedded engine.
func checkIdleLongPolls(t *testing.T, base string, counter *countingProxy) {
	const queues, perQueue = 10, 100
	c := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The queues exist and are empty: one message each, consumed.
	for q := range queues {
		name := fmt.Sprintf("idle-%d", q)
		if _, err := c.push(ctx, base, []pushItem{{Queue: name, Payload: "seed"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.pop(ctx, base, queuePath(name)+"?autoAck=true"); err != nil {
			t.Fatal(err)
		}
		if q == queues-1 { // the consumer groups read it too
			for _, g := range []string{"g0", "g1"} {
				if _, err := c.pop(ctx, base, queuePath(name)+"?autoAck=true&consumerGroup="+g); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	type answer struct {
		queue, group string
		resp         *popResponse
		err          error
	}
	answers := make(chan answer, queues*perQueue)
	var wg sync.WaitGroup
	for q := range queues {
		name := fmt.Sprintf("idle-%d", q)
		for i := range perQueue {
			group := ""
			if q == queues-1 {
				group = "g" + strconv.Itoa(i%2)
			}
			path := queuePath(name) + "?wait=true&timeout=60000"
			if group != "" {
				path += "&consumerGroup=" + group
			}
			wg.Go(func() {
				resp, err := c.pop(ctx, base, path)
				if ctx.Err() == nil {
					answers <- answer{name, group, resp, err}
				}
			})
		}
	}
	defer wg.Wait()
	defer cancel()
	if !waitUntil(30*time.Second, 20*time.Millisecond, func() bool {
		n, err := c.popWaiting(ctx, base)
		return err == nil && n == queues*perQueue
	}) {
		n, err := c.popWaiting(ctx, base)
		t.Fatalf("the %d polls did not all park within 30s: %v parked (%v)", queues*perQueue, n, err)
	}

	// Idle: no store look by any poll, and (PostgreSQL) only the broker's
	// own background statements (the settings sync, once a second).
	rechecks := promCounter(t, c, base, "queen_pop_rechecks_total")
	var stmts int64
	if counter != nil {
		stmts = counter.statements.Load()
	}
	const window = 3 * time.Second
	time.Sleep(window) // an observation window, not a wait for a condition
	if d := promCounter(t, c, base, "queen_pop_rechecks_total") - rechecks; d != 0 {
		t.Errorf("parked polls looked at the store %v times in %v with nothing pushed; want 0", d, window)
	}
	if counter != nil {
		d := counter.statements.Load() - stmts
		t.Logf("statements sent to PostgreSQL in %v with %d parked polls: %d", window, queues*perQueue, d)
		if d > 30 {
			t.Errorf("%d statements in %v with nothing pushed; want only the background ones (< 30); since the start:\n%s",
				d, window, strings.Join(counter.top(10), "\n"))
		}
	}
	select {
	case a := <-answers:
		t.Fatalf("a poll of %s answered while nothing was pushed: %+v, %v", a.queue, a.resp, a.err)
	default:
	}

	// A push wakes as many polls per group as it has messages.
	wakes := func() float64 { return promCounter(t, c, base, `queen_pop_wakeups_total{cause="push"}`) }
	check := func(what string, items []pushItem, wantAnswers int) {
		t.Helper()
		before := wakes()
		if _, err := c.push(ctx, base, items); err != nil {
			t.Fatal(err)
		}
		for range wantAnswers {
			select {
			case a := <-answers:
				if a.err != nil || a.resp == nil || a.queue != items[0].Queue {
					t.Fatalf("%s: poll of %s (group %q) answered %+v, %v", what, a.queue, a.group, a.resp, a.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: fewer than %d polls answered within 10s", what, wantAnswers)
			}
		}
		if d := wakes() - before; d != float64(wantAnswers) {
			t.Errorf("%s: %v polls woken, want %d", what, d, wantAnswers)
		}
	}
	check("one message", []pushItem{{Queue: "idle-0", Payload: 1}}, 1)
	check("one message, two groups", []pushItem{{Queue: fmt.Sprintf("idle-%d", queues-1), Payload: 1}}, 2)
	var five []pushItem
	for i := range 5 {
		five = append(five, pushItem{Queue: "idle-1", Partition: "p" + strconv.Itoa(i), Payload: i})
	}
	check("five messages in five partitions", five, 5)
	// Nothing else answers: the other polls stay parked.
	want := float64(queues*perQueue - 8)
	if !waitUntil(5*time.Second, 20*time.Millisecond, func() bool {
		n, err := c.popWaiting(ctx, base)
		return err == nil && n == want
	}) {
		n, _ := c.popWaiting(ctx, base)
		t.Errorf("%v polls parked after the pushes, want %v", n, want)
	}
	select {
	case a := <-answers:
		t.Errorf("an extra poll of %s answered: %+v, %v", a.queue, a.resp, a.err)
	default:
	}
}

// promCounter reads one sample (name with its labels) from
// /metrics/prometheus; a labelled counter not incremented yet reads 0.
func promCounter(t *testing.T, c *client, base, sample string) float64 {
	t.Helper()
	status, body, err := c.do(context.Background(), "GET", base+"/metrics/prometheus", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("metrics: %d, %v", status, err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metrics: %q: %v", line, err)
			}
			return f
		}
	}
	if strings.Contains(sample, "{") {
		return 0
	}
	t.Fatalf("metrics: no %s", sample)
	return 0
}

// countingProxy forwards TCP connections to a PostgreSQL server and counts
// the statements clients run: simple queries ('Q') and executions of
// extended-protocol portals ('E'), read from the frontend message stream.
type countingProxy struct {
	ln         net.Listener
	target     string
	statements atomic.Int64
	wg         sync.WaitGroup

	mu     sync.Mutex
	byText map[string]int64 // statements run, by text (for the failure message)
}

// top returns the texts run most often, with their counts.
func (p *countingProxy) top(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for text, c := range p.byText {
		out = append(out, fmt.Sprintf("%8d  %.160s", c, strings.Join(strings.Fields(text), " ")))
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out[:min(n, len(out))]
}

func (p *countingProxy) count(text string) {
	p.mu.Lock()
	p.byText[text]++
	p.mu.Unlock()
}

func startCountingProxy(t testing.TB, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln, target: target, byText: map[string]int64{}}
	p.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(client) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		// Connections end when the broker process is stopped (its cleanup
		// runs first: it was registered later).
		p.wg.Wait()
	})
	return p
}

func (p *countingProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		client.Close()
	}()
	// The startup message has no type byte; every later frontend message
	// is a type byte and a length that counts itself. sslmode must be
	// disable (the test database's URL is).
	var hdr [5]byte
	if _, err := io.ReadFull(client, hdr[:4]); err != nil {
		return
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if _, err := server.Write(hdr[:4]); err != nil {
		return
	}
	if _, err := io.CopyN(server, client, int64(n)-4); err != nil {
		return
	}
	prepared := map[string]string{} // statement name → text, from Parse
	bound := ""                     // the text of the statement last bound
	for {
		if _, err := io.ReadFull(client, hdr[:]); err != nil {
			return
		}
		body := make([]byte, int(binary.BigEndian.Uint32(hdr[1:]))-4)
		if _, err := io.ReadFull(client, body); err != nil {
			return
		}
		switch hdr[0] {
		case 'Q': // query text
			p.statements.Add(1)
			p.count(cstring(body))
		case 'P': // statement name, query text, …
			name := cstring(body)
			prepared[name] = cstring(body[len(name)+1:])
			if name == "" {
				bound = prepared[name]
			}
		case 'B': // portal name, statement name, …
			portal := cstring(body)
			bound = prepared[cstring(body[len(portal)+1:])]
		case 'E':
			p.statements.Add(1)
			p.count(bound)
		}
		if _, err := server.Write(hdr[:]); err != nil {
			return
		}
		if _, err := server.Write(body); err != nil {
			return
		}
	}
}

// cstring returns the NUL-terminated string at the start of b.
func cstring(b []byte) string {
	if i := slices.Index(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
