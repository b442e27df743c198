package apitest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
)

// popResult is the outcome of a pop run in the background.
type popResult struct {
	r    *response
	err  error
	done time.Time
}

// popAsync starts a pop in the background and returns the channel its result
// arrives on.
func (c *client) popAsync(ctx context.Context, path string) <-chan popResult {
	ch := make(chan popResult, 1)
	go func() {
		r, err := c.send(ctx, "GET", path, nil)
		ch <- popResult{r: r, err: err, done: time.Now()}
	}()
	return ch
}

// waitParked waits until exactly n long polls wait on c's server, as its
// queen_pop_waiting gauge says: a test acts on a parked poll once it has
// parked, so that the wake-up path is the one exercised, instead of
// guessing how long parking takes.
func (c *client) waitParked(t testing.TB, n int) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%d parked long polls", n), func() bool {
		v, _ := series(c.scrape(t), "queen_pop_waiting")
		return int(v) == n
	})
}

// testLongPoll covers wait=true pops (spec §4.6).
func (s *suite) testLongPoll(t *testing.T) {
	t.Run("a push wakes a parked pop within 50ms", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("wake")
		c.configure(t, q, nil)
		// Several rounds per route, judged by the median: one sample on a
		// shared CI machine measures the machine. A wake-up that was missed
		// shows as the broker's 1 s fallback re-poll, which the max catches.
		const rounds = 5
		for _, path := range []string{
			queuePath(q) + "?wait=true&timeout=5000",
			partitionPath(q, "lane-1") + "?wait=true&timeout=5000",
		} {
			var lats []time.Duration
			for range rounds {
				c.waitParked(t, 0) // the previous round's poll has left
				ch := c.popAsync(context.Background(), path)
				c.waitParked(t, 1)
				select {
				case res := <-ch:
					t.Fatalf("GET %s returned before any push: %v %v", path, res.err, res.r)
				default:
				}
				pushed := c.push(t, item(q, map[string]any{"n": 1}, "partition", "lane-1"))[0]
				pushDone := time.Now()
				res := <-ch
				if res.err != nil {
					t.Fatalf("GET %s: %v", path, res.err)
				}
				p := checkPop(t, res.r)
				if p.Messages[0].ID != pushed.MessageID {
					t.Fatalf("long poll delivered %s, want the pushed %s", p.Messages[0].ID, pushed.MessageID)
				}
				lats = append(lats, res.done.Sub(pushDone))
				c.ackAll(t, "", p)
			}
			slices.Sort(lats)
			median, worst := lats[len(lats)/2], lats[len(lats)-1]
			t.Logf("GET %s: answered after the push response in %v (median %v)", path, lats, median)
			if median > 50*time.Millisecond {
				t.Fatalf("GET %s: median %v after the push response, want within 50ms (all: %v)", path, median, lats)
			}
			// A missed wake-up would answer at the fallback re-poll, 1 s after
			// the pop parked, i.e. about 1 s after the push (the push follows
			// the parking at once).
			if worst >= 600*time.Millisecond {
				t.Fatalf("GET %s: one wake-up took %v: the push did not wake the pop, the fallback re-poll did (all: %v)", path, worst, lats)
			}
		}
	})

	t.Run("a long poll on an empty queue times out with 204", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("timeout")
		c.configure(t, q, nil)
		start := time.Now()
		r := c.do(t, "GET", queuePath(q)+"?wait=true&timeout=1000", nil)
		elapsed := time.Since(start)
		wantNoContent(t, r)
		if elapsed < 800*time.Millisecond || elapsed > 1200*time.Millisecond {
			t.Fatalf("wait=true&timeout=1000 answered after %v, want 1000ms ± 20%%", elapsed)
		}
	})

	t.Run("a long poll with messages answers at once", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("ready")
		c.pushN(t, q, "", 2)
		start := time.Now()
		p := c.popOK(t, queuePath(q)+"?wait=true&timeout=5000&batch=10")
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Fatalf("long poll over waiting messages took %v", elapsed)
		}
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("long poll: %v, want [0 1]", got)
		}
	})

	t.Run("a disconnected long poll takes no lease", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("disconnect")
		c.configure(t, q, nil)
		ctx, cancel := context.WithCancel(context.Background())
		ch := c.popAsync(ctx, queuePath(q)+"?wait=true&timeout=5000")
		c.waitParked(t, 1)
		cancel()
		if res := <-ch; res.err == nil {
			t.Fatalf("cancelled long poll returned %v", res.r)
		}
		// Once the server has seen the closed connection, the poll stops
		// waiting; then push.
		c.waitParked(t, 0)
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q)+"?wait=true&timeout=2000")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("pop after the disconnected long poll: %v, want [0]", got)
		}
	})

	t.Run("shutdown answers a waiting pop with 204", func(t *testing.T) {
		t.Parallel()
		st := s.newStore(t)
		t.Cleanup(func() { _ = st.Close() })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		srv, err := server.New(server.Config{Version: "0.0.0-apitest"}, st)
		if err != nil {
			t.Fatalf("server.New: %v", err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		c := newClient("http://" + ln.Addr().String())
		defer c.hc.CloseIdleConnections()

		q := uniq("shutdown")
		c.configure(t, q, nil)
		ch := c.popAsync(context.Background(), queuePath(q)+"?wait=true&timeout=20000")
		c.waitParked(t, 1)

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		shutdownErr := make(chan error, 1)
		go func() { shutdownErr <- srv.Shutdown(ctx) }()

		select {
		case res := <-ch:
			if res.err != nil {
				t.Fatalf("waiting pop during shutdown: %v", res.err)
			}
			wantNoContent(t, res.r)
			if d := res.done.Sub(start); d > 2*time.Second {
				t.Fatalf("waiting pop answered %v after Shutdown, want promptly", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("waiting pop not answered within 5s of Shutdown")
		}
		if err := <-shutdownErr; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("Serve returned %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Serve did not return after Shutdown")
		}
	})
}
