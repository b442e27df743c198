package delivery_test

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/delivery"
)

// TestTwoBrokersShareDeliveries runs two brokers on one PostgreSQL schema,
// each with its delivery service on the same target: the work is shared,
// and no message is delivered twice, nor a partition twice at once.
func TestTwoBrokersShareDeliveries(t *testing.T) {
	open := engines[1].open(t)
	cfg := fastConfig()
	cfg.Node, cfg.Workers = "cell", 8
	a, b := startNode(t, open(t), cfg), startNode(t, open(t), cfg)
	n, partitions := 3000, 16
	if raceOn || testing.Short() {
		n, partitions = 600, 8
	}
	var viaA, viaB atomic.Int64
	rcv, srv := newReceiver(t, func(int, int) (int, bool) { return 200, false })
	ctx := context.Background()
	tg, err := a.svc.Create(ctx, "", &api.DeliveryTarget{Queue: "hooks", URL: srv.URL, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	b.svc.Reload()
	waitFor(t, 10*time.Second, "the second broker reads the target", func() bool {
		l, err := b.svc.List(ctx, "", "hooks")
		return err == nil && len(l) == 1 && l[0].ID == tg.ID
	})
	pushAll(t, a.b, "hooks", n, partitions)
	waitFor(t, 2*time.Minute, "every message delivered", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return len(rcv.ok) == n && a.ack.count()+b.ack.count() == n
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Fatalf("receiver saw: %s", strings.Join(rcv.bad, "; "))
	}
	for seq, k := range rcv.tries {
		if k != 1 {
			t.Fatalf("seq %d delivered %d times", seq, k)
		}
	}
	for _, nd := range []struct {
		n *node
		c *atomic.Int64
	}{{a, &viaA}, {b, &viaB}} {
		nd.n.ack.mu.Lock()
		nd.c.Store(int64(len(nd.n.ack.acked)))
		nd.n.ack.mu.Unlock()
	}
	if viaA.Load()+viaB.Load() != int64(n) {
		t.Fatalf("acks: %d + %d, want %d", viaA.Load(), viaB.Load(), n)
	}
	t.Logf("broker A delivered %d, broker B %d", viaA.Load(), viaB.Load())
}

// TestGuard checks the address guard: private, loopback and other
// non-public ranges are refused unless allowed, at save and at connect.
func TestGuard(t *testing.T) {
	g, err := delivery.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
		"100.64.0.1", "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "224.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::"} {
		if g.Permits(netip.MustParseAddr(s)) {
			t.Errorf("%s permitted by default", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"} {
		if !g.Permits(netip.MustParseAddr(s)) {
			t.Errorf("public %s refused", s)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080/x", "http://[::1]/", "http://169.254.169.254/latest/meta-data",
		"ftp://example.com/", "http://user:pw@example.com/", "/relative", "http://10.0.0.1/"} {
		if _, err := g.CheckURL(u); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	if _, err := g.CheckURL("https://example.com/hook"); err != nil {
		t.Errorf("public URL refused: %v", err)
	}
	g, _ = delivery.NewGuard([]string{"10.0.0.0/8", "127.0.0.1"})
	if !g.Permits(netip.MustParseAddr("10.9.9.9")) || !g.Permits(netip.MustParseAddr("127.0.0.1")) ||
		g.Permits(netip.MustParseAddr("127.0.0.2")) {
		t.Error("the allow list is not applied")
	}
	if _, err := delivery.NewGuard([]string{"nonsense"}); err == nil {
		t.Error("a bad allow list is accepted")
	}
}

// TestGuardAtConnect saves a target whose name resolves to loopback (no
// address literal to refuse at save) on a broker that allows nothing
// private: the connection itself is refused, the receiver never hears of
// it, and the message ends in the DLQ.
func TestGuardAtConnect(t *testing.T) {
	open := engines[0].open(t)
	cfg := fastConfig()
	cfg.Allow = nil
	nd := startNode(t, open(t), cfg)
	rcv, srv := newReceiver(t, func(int, int) (int, bool) { return 200, false })
	ctx := context.Background()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if _, err := nd.svc.Create(ctx, "", &api.DeliveryTarget{Queue: "hooks", URL: srv.URL}); err == nil {
		t.Fatal("a loopback literal is saved")
	}
	if _, err := nd.svc.Create(ctx, "", &api.DeliveryTarget{Queue: "hooks", URL: url}); err != nil {
		t.Fatal(err)
	}
	pushAll(t, nd.b, "hooks", 1, 1)
	waitFor(t, 30*time.Second, "the message dead-lettered", func() bool {
		d, err := nd.st.DLQList(ctx, dlqOf("hooks"))
		return err == nil && len(d) == 1
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.tries) != 0 {
		t.Fatalf("the receiver was reached: %v", rcv.tries)
	}
	d, _ := nd.st.DLQList(ctx, dlqOf("hooks"))
	if !strings.Contains(d[0].Error, "refused") {
		t.Fatalf("dead letter's error: %q", d[0].Error)
	}
}
