package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// Keys of the encryption tests (64 hex characters each).
const (
	testKeyOld = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	testKeyNew = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// fastSweeps runs retention and eviction often, so that tests wait for
// them for well under a second.
var fastSweeps = broker.SweepConfig{RetentionEvery: 100 * time.Millisecond, EvictionEvery: 100 * time.Millisecond}

func keyring(t testing.TB, current string, old ...string) *crypt.Keyring {
	t.Helper()
	k, err := crypt.New(current, old...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// storedPayloads pops every message of queue straight from the store, in a
// consumer group of its own, and returns the payloads as stored.
func storedPayloads(t testing.TB, st store.Store, queue string) [][]byte {
	t.Helper()
	res, err := st.LanePop(context.Background(), &store.LanePopParams{Queue: queue, ConsumerGroup: "raw-reader",
		Batch: 1000, Partitions: 100, AutoAck: true, Now: time.Now()})
	if err != nil {
		t.Fatalf("read the store: %v", err)
	}
	out := make([][]byte, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.Payload
	}
	return out
}

// probeEmpty reports whether a consumer group that never read queue finds
// nothing in it: what retention deleted and eviction evicted is not there
// for it, and, unlike a pop of an existing group, the probe leases nothing
// a later assertion would trip over.
func (c *client) probeEmpty(t testing.TB, queue string) bool {
	t.Helper()
	return c.pop(t, queuePath(queue)+"?batch=1000&autoAck=true&consumerGroup="+uniq("probe")) == nil
}

// testOptions covers the queue options the broker applies: retryDelay,
// maxSize, retention, eviction, encryption, and the options it only echoes.
func (s *suite) testOptions(t *testing.T) {
	t.Run("retryDelay holds a nacked message back", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("retry-delay")
		c.configure(t, q, map[string]any{"retryDelay": 400})
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		nacked := time.Now()
		c.ack(t, "", ackOf(p.Messages[0], "failed"))
		c.popNone(t, queuePath(q))
		again := c.waitPop(t, queuePath(q), 5*time.Second)
		// The broker keeps times in whole milliseconds: the nack's own
		// time may be read up to 1 ms short of the test's clock.
		if waited := time.Since(nacked); waited < 399*time.Millisecond {
			t.Fatalf("redelivered after %v, want at least the 400 ms retryDelay", waited)
		}
		if again.Messages[0].ID != p.Messages[0].ID {
			t.Fatalf("redelivered %s, want %s", again.Messages[0].ID, p.Messages[0].ID)
		}
	})

	t.Run("without retryDelay a nack is redelivered at once", func(t *testing.T) {
		// What Queen's clients expect: a consumer with wait=false that nacks
		// gets the retry on its next pop.
		t.Parallel()
		c := s.server(t)
		q := uniq("retry-now")
		c.configure(t, q, nil)
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q)+"?wait=false")
		c.ack(t, "", ackOf(p.Messages[0], "failed"))
		if again := c.popOK(t, queuePath(q)+"?wait=false"); again.Messages[0].ID != p.Messages[0].ID {
			t.Fatalf("redelivered %s, want %s", again.Messages[0].ID, p.Messages[0].ID)
		}
	})

	t.Run("maxSize refuses the items over the cap", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("max-size")
		c.configure(t, q, map[string]any{"maxSize": 3})
		items := make([]map[string]any, 5)
		for i := range items {
			items[i] = item(q, map[string]any{"n": i}, "partition", fmt.Sprintf("p%d", i%2))
		}
		res := c.pushRaw(t, items)
		for i, r := range res {
			switch {
			case i < 3 && r.Status != "queued":
				t.Fatalf("item %d: %+v, want queued", i, r)
			case i >= 3 && (r.Status != "failed" || r.Error != "queue full (maxSize 3)" || r.MessageID != ""):
				t.Fatalf("item %d: %+v, want failed with \"queue full (maxSize 3)\" and no message_id", i, r)
			}
		}
		p := c.popOK(t, queuePath(q)+"?batch=10&partitions=2")
		c.ackAll(t, "", p)
		if res := c.pushRaw(t, items[3:]); res[0].Status != "queued" || res[1].Status != "queued" {
			t.Fatalf("push after the queue was consumed: %+v, want both queued", res)
		}
	})

	t.Run("retention empties a queue", func(t *testing.T) {
		// Queen's client suite: retention configured, 100 messages pushed
		// one by one, an empty pop some time later. The sweep interval is
		// short here, and the test polls instead of waiting 15 s.
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Sweeps: fastSweeps})
		q := uniq("retention")
		c.configure(t, q, map[string]any{"retentionEnabled": true, "retentionSeconds": 1, "completedRetentionSeconds": 1})
		for i := range 100 {
			c.push(t, item(q, map[string]any{"message": i}))
		}
		waitFor(t, 10*time.Second, "retention to delete the 100 messages", func() bool { return c.probeEmpty(t, q) })
		c.popNone(t, queuePath(q)+"?batch=100&wait=false")
	})

	t.Run("a retention period without retentionEnabled turns retention on", func(t *testing.T) {
		// Queen's CLI (queenctl queue configure --retention 5
		// --completed-retention 5) and Go client send the periods alone:
		// they have no retentionEnabled. An explicit false still wins.
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Sweeps: fastSweeps})
		q, off := uniq("retention-implied"), uniq("retention-off")
		enabled := func(m map[string]any) any { return obj(t, "options", m["options"])["retentionEnabled"] }
		if got := c.configure(t, q, map[string]any{"retentionSeconds": 1, "completedRetentionSeconds": 1}); enabled(got) != true {
			t.Fatalf("configure with the periods alone: %v, want retentionEnabled true", got)
		}
		if got := c.configure(t, off, map[string]any{"retentionEnabled": false, "retentionSeconds": 1}); enabled(got) != false {
			t.Fatalf("configure with retentionEnabled false: %v, want it kept false", got)
		}
		if got := c.configure(t, uniq("no-retention"), map[string]any{"leaseTime": 5}); enabled(got) != false {
			t.Fatalf("configure without a period: %v, want retentionEnabled false", got)
		}
		c.pushN(t, q, "", 20)
		c.pushN(t, off, "", 3)
		waitFor(t, 10*time.Second, "retention to delete the 20 messages", func() bool { return c.probeEmpty(t, q) })
		if p := c.popOK(t, queuePath(off)+"?batch=10&consumerGroup="+uniq("g")); len(p.Messages) != 3 {
			t.Fatalf("queue with retentionEnabled false: %d messages left, want all 3", len(p.Messages))
		}
	})

	t.Run("completed retention deletes what was consumed", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Sweeps: fastSweeps})
		q := uniq("completed")
		c.configure(t, q, map[string]any{"retentionEnabled": true, "completedRetentionSeconds": 1})
		c.pushN(t, q, "", 10)
		p := c.popOK(t, queuePath(q)+"?batch=4")
		c.ackAll(t, "", p)
		// The 6 unconsumed messages stay, whatever their age.
		waitFor(t, 10*time.Second, "completed retention to delete the 4 consumed messages", func() bool {
			probe := c.pop(t, queuePath(q)+"?batch=100&autoAck=true&consumerGroup="+uniq("probe"))
			return probe != nil && len(probe.Messages) == 6
		})
		// A retention pass that started after that one deletes nothing
		// else: a consumed witness on another queue shows one has run.
		w := uniq("witness")
		c.configure(t, w, map[string]any{"retentionEnabled": true, "completedRetentionSeconds": 1})
		c.pushN(t, w, "", 1)
		c.ackAll(t, "", c.popOK(t, queuePath(w)))
		waitFor(t, 10*time.Second, "a later retention pass to delete the witness", func() bool { return c.probeEmpty(t, w) })
		if rest := c.popOK(t, queuePath(q)+"?batch=100"); len(rest.Messages) != 6 || rest.ns(t)[0] != 4 {
			t.Fatalf("after completed retention: %v, want the 6 unconsumed from n=4", rest.ns(t))
		}
	})

	t.Run("maxWaitTimeSeconds evicts what waited too long", func(t *testing.T) {
		// Queen's client suite: retentionEnabled with maxWaitTimeSeconds,
		// 100 messages, an empty pop later. The broker's clock only moves
		// when told, so that the message pushed last is fresh however slow
		// the machine.
		t.Parallel()
		clk := newClock(time.Now())
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Sweeps: fastSweeps, Now: clk.Now})
		q := uniq("max-wait")
		c.configure(t, q, map[string]any{"retentionEnabled": true, "maxWaitTimeSeconds": 1})
		for i := range 100 {
			c.push(t, item(q, map[string]any{"message": i}))
		}
		clk.Advance(2 * time.Second)
		waitFor(t, 10*time.Second, "eviction of the 100 messages", func() bool { return c.probeEmpty(t, q) })
		c.popNone(t, queuePath(q)+"?batch=100&wait=false")
		// What comes later is delivered.
		c.pushN(t, q, "", 1)
		if p := c.popOK(t, queuePath(q)); p.ns(t)[0] != 0 {
			t.Fatalf("after eviction: %v", p.ns(t))
		}
	})

	t.Run("a pop never delivers what waited past maxWaitTimeSeconds, sweep or not", func(t *testing.T) {
		// Whenever the eviction sweep last ran: the broker's clock moves,
		// the sweep (every minute by default) does not get to run.
		t.Parallel()
		clk := newClock(time.Now())
		c := s.serverAt(t, clk)
		q := uniq("max-wait-pop")
		c.configure(t, q, map[string]any{"maxWaitTimeSeconds": 10})
		c.pushN(t, q, "", 5)
		clk.Advance(9 * time.Second)
		if p := c.popOK(t, queuePath(q)+"?batch=10&wait=false&consumerGroup=early"); len(p.Messages) != 5 {
			t.Fatalf("pop at 9 s: %d messages, want 5", len(p.Messages))
		}
		clk.Advance(2 * time.Second)
		c.popNone(t, queuePath(q)+"?batch=10&wait=false&consumerGroup=late")
		c.popNone(t, queuePath(q)+"?batch=10&wait=false")
		c.pushN(t, q, "", 1)
		if p := c.popOK(t, queuePath(q)+"?batch=10&wait=false&consumerGroup=late"); len(p.Messages) != 1 {
			t.Fatalf("pop after a fresh push: %d messages, want 1", len(p.Messages))
		}
	})

	t.Run("encryptionEnabled stores ciphertext and pops plaintext", func(t *testing.T) {
		t.Parallel()
		st := s.newStore(t)
		c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-apitest", Encryption: keyring(t, testKeyNew)}))
		t.Cleanup(c.hc.CloseIdleConnections)
		q := uniq("sealed")
		c.configure(t, q, map[string]any{"encryptionEnabled": true})
		secret := map[string]any{"card": "4111-plaintext-marker", "n": 7}
		res := c.push(t, item(q, secret))
		p := c.popOK(t, queuePath(q))
		if !jsonEqual(p.Messages[0].Data, []byte(`{"card":"4111-plaintext-marker","n":7}`)) ||
			p.Messages[0].ID != res[0].MessageID {
			t.Fatalf("pop of an encrypted queue: %s, want the plaintext payload", p.Messages[0].Data)
		}
		stored := storedPayloads(t, st, q)
		if len(stored) != 1 || bytes.Contains(stored[0], []byte("plaintext-marker")) || !crypt.Sealed(stored[0]) {
			t.Fatalf("stored payload %s: want the sealed shape without the plaintext", stored)
		}
		// A plain queue is stored as sent.
		plain := uniq("plain")
		c.push(t, item(plain, secret))
		if stored := storedPayloads(t, st, plain); len(stored) != 1 || !bytes.Contains(stored[0], []byte("plaintext-marker")) {
			t.Fatalf("a plain queue stored %s", stored)
		}
	})

	t.Run("encryptionEnabled without a key is a 400", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		r := c.do(t, "POST", "/api/v1/configure", map[string]any{"queue": uniq("nokey"),
			"options": map[string]any{"encryptionEnabled": true}})
		msg := wantPlainError(t, r, http.StatusBadRequest, "encryptionEnabled needs an encryption key")
		if !strings.Contains(msg, "QUEEN_ENCRYPTION_KEY") {
			t.Fatalf("error %q does not name QUEEN_ENCRYPTION_KEY", msg)
		}
	})

	t.Run("a key rotated with messages in flight", func(t *testing.T) {
		t.Parallel()
		st := s.newStore(t) // closed at cleanup, after both brokers stopped
		q := uniq("rotate")

		before := startBroker(t, st, server.Config{Version: "0.0.0-apitest", Encryption: keyring(t, testKeyOld)})
		before.configure(t, q, map[string]any{"encryptionEnabled": true, "leaseTime": 60})
		before.pushN(t, q, "", 3)
		inFlight := before.popOK(t, queuePath(q)) // leased under the old key's broker
		before.stop(t)

		after := startBroker(t, st, server.Config{Version: "0.0.0-apitest",
			Encryption: keyring(t, testKeyNew, testKeyOld)})
		after.ackAll(t, "", inFlight)
		rest := after.popOK(t, queuePath(q)+"?batch=10")
		if got := rest.ns(t); len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Fatalf("after the rotation: %v, want [1 2] in plaintext", got)
		}
		after.ackAll(t, "", rest)
		after.pushN(t, q, "", 1)
		stored := storedPayloads(t, st, q)
		newOnly, oldOnly := keyring(t, testKeyNew), keyring(t, testKeyOld)
		last := stored[len(stored)-1]
		ad := crypt.AD(store.DefaultTenant, q)
		if _, ok := newOnly.OpenFor(last, ad); !ok {
			t.Fatalf("a push after the rotation is not sealed with the new key: %s", last)
		}
		if _, ok := oldOnly.OpenFor(last, ad); ok {
			t.Fatalf("a push after the rotation is sealed with the old key")
		}
		if p := after.popOK(t, queuePath(q)); p.ns(t)[0] != 0 {
			t.Fatalf("pop after the rotation: %v", p.ns(t))
		}
	})

	t.Run("the spool holds no plaintext of an encrypted queue", func(t *testing.T) {
		t.Parallel()
		spool := t.TempDir()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", SpoolDir: spool,
			Encryption: keyring(t, testKeyNew)})
		q := uniq("sealed-spool")
		c.configure(t, q, map[string]any{"encryptionEnabled": true})
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":true}`), http.StatusOK, nil)
		if res := c.pushRaw(t, []map[string]any{item(q, map[string]any{"pin": "spool-plaintext-marker"})}); res[0].Status != "buffered" {
			t.Fatalf("push in maintenance: %+v, want buffered", res[0])
		}
		_ = filepath.WalkDir(spool, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if data, _ := os.ReadFile(path); bytes.Contains(data, []byte("spool-plaintext-marker")) {
					t.Errorf("spool file %s holds the plaintext", path)
				}
			}
			return nil
		})
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":false}`), http.StatusOK, nil)
		p := c.waitPop(t, queuePath(q), 10*time.Second)
		if !jsonEqual(p.Messages[0].Data, []byte(`{"pin":"spool-plaintext-marker"}`)) {
			t.Fatalf("replayed message: %s, want the plaintext", p.Messages[0].Data)
		}
	})

	t.Run("an unknown option is a 400 naming it", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		r := c.do(t, "POST", "/api/v1/configure", `{"queue":"`+uniq("typo")+`","options":{"retentionSecond":60}}`)
		wantPlainError(t, r, http.StatusBadRequest, "bad body: options.retentionSecond: unknown option")
		r = c.do(t, "POST", "/api/v1/configure", `{"queue":"`+uniq("typo")+`","options":{"maxSize":"big"}}`)
		wantPlainError(t, r, http.StatusBadRequest, "bad body: options.maxSize: expected an integer")
	})

	t.Run("informational options are echoed and change nothing", func(t *testing.T) {
		t.Parallel()
		clk := newClock(time.Now())
		c := s.serverAt(t, clk)
		q := uniq("informational")
		m := c.configure(t, q, map[string]any{"ttl": 1, "deadLetterQueue": false, "dlqAfterMaxRetries": false, "retryLimit": 0})
		wantOptions(t, m, map[string]any{"ttl": 1.0, "retryLimit": 0.0})
		c.pushN(t, q, "", 2)
		// retryLimit 0: the first failure dead-letters, whatever the
		// dead-letter flags say; ttl 1 s expires nothing.
		p := c.popOK(t, queuePath(q))
		if a := c.ack(t, "", ackOf(p.Messages[0], "failed")); !a.DLQ {
			t.Fatalf("failed ack with retryLimit 0: %v, want dlq", a)
		}
		clk.Advance(1100 * time.Millisecond)
		if next := c.popOK(t, queuePath(q)); next.ns(t)[0] != 1 {
			t.Fatalf("after ttl: %v, want the second message", next.ns(t))
		}
	})
}

// runningBroker is a server started on a store that outlives it.
type runningBroker struct {
	*client
	srv    *server.Server
	served chan error
}

// startBroker starts a server on st without taking st over: stop shuts the
// server down and leaves st open for the next one.
func startBroker(t *testing.T, st store.Store, cfg server.Config) *runningBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	b := &runningBroker{client: newClient("http://" + ln.Addr().String()), srv: srv, served: make(chan error, 1)}
	go func() { b.served <- srv.Serve(ln) }()
	t.Cleanup(func() { b.stop(t) })
	return b
}

func (b *runningBroker) stop(t *testing.T) {
	if b.srv == nil {
		return
	}
	b.hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-b.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serve: %v", err)
	}
	b.srv = nil
}
