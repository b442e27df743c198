package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/testenv"
)

// testURL returns the test database URL or skips the test.
func testURL(t testing.TB) string { return pgtest.URL(t) }

// newSchema returns a fresh schema, dropped when the test ends.
func newSchema(t testing.TB) string { return pgtest.Schema(t, "qt_") }

// openStore opens a store on schema and closes it at cleanup.
func openStore(t testing.TB, schema string, poolSize int) *Store {
	t.Helper()
	return openStoreWith(t, Config{URL: testURL(t), Schema: schema, PoolSize: poolSize})
}

// openStoreWith opens a store with cfg, closed with the test.
func openStoreWith(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newTestStore is a store on a fresh throw-away schema.
func newTestStore(t testing.TB) *Store {
	return openStore(t, newSchema(t), 8)
}

// Two brokers starting at once on an empty schema both come up: the
// migration lock makes one wait for the other.
func TestConcurrentOpen(t *testing.T) {
	schema := newSchema(t)
	const n = 4
	var wg sync.WaitGroup
	stores := make([]*Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = Open(context.Background(), Config{URL: testURL(t), Schema: schema, PoolSize: 2})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		defer stores[i].Close()
	}
	var versions int
	if err := stores[0].pool.QueryRow(context.Background(),
		"SELECT count(*) FROM schema_migrations").Scan(&versions); err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(migrations, "migrations/*.up.sql")
	if versions != len(files) {
		t.Fatalf("schema_migrations has %d rows, want one per migration (%d)", versions, len(files))
	}
	// Every store works.
	for i, s := range stores {
		res, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Now: time.Now(),
			Items: []store.PushItem{storetest.Item("q", "p", i)}})
		if err != nil || res[0].Status != store.PushQueued {
			t.Fatalf("push through store %d: %v %+v", i, err, res)
		}
	}
}

// A push through one store wakes a listener on another (within 50 ms in
// the latency run).
func TestListen(t *testing.T) {
	schema := newSchema(t)
	a, b := openStore(t, schema, 4), openStore(t, schema, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Create the queue and partition first: the timed push is a steady-state
	// one. Its own notification goes out before anyone listens.
	if _, err := a.MessagePushMany(ctx, &store.MessagePushManyParams{Now: time.Now(),
		Items: []store.PushItem{storetest.Item("wake-me", "p", 0)}}); err != nil {
		t.Fatal(err)
	}
	woken := make(chan store.Wake, 16)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.Listen(ctx, func(ws ...store.Wake) {
			for _, q := range ws {
				if q.Key == "ready-probe" {
					select {
					case <-ready:
					default:
						close(ready)
					}
					continue
				}
				woken <- q
			}
		})
	}()
	// Wait until the listener is connected: probe until it hears us. The
	// probes go through a's notifier, after the first push's notification
	// (sent on its own after that commit, possibly once b listens): once b
	// hears a probe, that one is behind it too, and is dropped here.
	probe := time.NewTicker(20 * time.Millisecond)
	defer probe.Stop()
	deadline := time.After(10 * time.Second)
waitReady:
	for {
		select {
		case <-ready:
			break waitReady
		case <-probe.C:
			a.wakes.send([]store.Wake{{Key: "ready-probe", Count: 1}})
		case <-deadline:
			t.Fatal("listener never connected")
		}
	}
	for len(woken) > 0 {
		<-woken
	}
	start := time.Now()
	if _, err := a.MessagePushMany(ctx, &store.MessagePushManyParams{Now: time.Now(),
		Items: []store.PushItem{storetest.Item("wake-me", "p", 1)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-woken:
		elapsed := time.Since(start)
		if want := (store.Wake{Key: store.QueueKey(store.DefaultTenant, "wake-me"), Count: 1}); q != want {
			t.Fatalf("woken with %+v, want %+v", q, want)
		}
		t.Logf("push → wake through another store: %v", elapsed)
		if testenv.LatencyRun() && elapsed > 50*time.Millisecond {
			t.Errorf("wake-up took %v, want < 50ms", elapsed)
		}
	case <-time.After(time.Second):
		t.Fatal("no wake-up within 1s")
	}
	// A push of three messages announces three, so that the other broker
	// wakes three polls per group; a store never hears its own pushes (its
	// broker woke its own polls already), so b's push reaches nobody here.
	if _, err := b.MessagePushMany(ctx, &store.MessagePushManyParams{Now: time.Now(),
		Items: []store.PushItem{storetest.Item("wake-me", "p", 10)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MessagePushMany(ctx, &store.MessagePushManyParams{Now: time.Now(),
		Items: []store.PushItem{storetest.Item("wake-me", "p", 2), storetest.Item("wake-me", "p", 3),
			storetest.Item("wake-me", "p", 4)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-woken:
		if want := (store.Wake{Key: store.QueueKey(store.DefaultTenant, "wake-me"), Count: 3}); q != want {
			t.Fatalf("woken with %+v, want %+v (b's own push must not be heard)", q, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up within 5s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Listen returned %v", err)
	}
}

// With 10,000 partitions holding messages, a pop stays cheap: candidates
// come from the lanes_ready index, not from a scan of partitions.
func TestPopLatency10kPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("slow setup")
	}
	s := newTestStore(t)
	ctx := context.Background()
	const parts, perPart = 10000, 3
	now := storetest.T0
	fill10k(t, s, parts, perPart, now)
	// The first pop joins the group (creates its 10,000 lanes).
	start := time.Now()
	if _, err := s.LanePop(ctx, &store.LanePopParams{Queue: "big", ConsumerGroup: store.QueueMode, Batch: 10,
		Partitions: 1, LeaseID: storetest.NewID(), Now: now}); err != nil {
		t.Fatal(err)
	}
	t.Logf("first pop (group join, 10k lanes): %v", time.Since(start))
	const pops = 1000
	lat := make([]time.Duration, 0, pops)
	for i := range pops {
		lease := storetest.NewID()
		start := time.Now()
		res, err := s.LanePop(ctx, &store.LanePopParams{Queue: "big", ConsumerGroup: store.QueueMode, Batch: 10,
			Partitions: 1, LeaseID: lease, Now: now.Add(time.Duration(i+1) * time.Millisecond)})
		lat = append(lat, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != perPart {
			t.Fatalf("pop %d: %d messages, want %d", i, len(res.Messages), perPart)
		}
		// Ack half of them so that lanes both drain and stay leased.
		if i%2 == 0 {
			last := res.Messages[len(res.Messages)-1]
			if _, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Now: now.Add(time.Duration(i+1) * time.Millisecond),
				Acks: []store.Ack{storetest.AckOf(last, store.QueueMode, lease, store.AckCompleted)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	t.Logf("pop with 10,000 partitions: p50 %v, p99 %v over %d pops", p50, p99, pops)
	if testenv.LatencyRun() && p50 > 5*time.Millisecond {
		t.Errorf("pop p50 %v, want < 5ms", p50)
	}
}

// fill10k pushes perPart messages into each of parts partitions of "big".
func fill10k(t testing.TB, s *Store, parts, perPart int, now time.Time) {
	t.Helper()
	start := time.Now()
	var items []store.PushItem
	flush := func() {
		if _, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: items, Now: now}); err != nil {
			t.Fatal(err)
		}
		items = items[:0]
	}
	for p := range parts {
		for m := range perPart {
			items = append(items, storetest.Item("big", fmt.Sprintf("p%05d", p), m))
		}
		if len(items) >= 480 {
			flush()
		}
	}
	if len(items) > 0 {
		flush()
	}
	t.Logf("filled %d partitions × %d messages in %v", parts, perPart, time.Since(start))
}

func percentile(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[(len(s)-1)*p/100]
}

// TestRelaxedTransactionsSkipTheFlushWait checks that pops and acks really
// commit without waiting for the WAL flush, and pushes really wait.
func TestRelaxedTransactionsSkipTheFlushWait(t *testing.T) {
	s := openStore(t, newSchema(t), 4)
	for _, c := range []struct {
		d    durability
		want string
	}{{relaxed, "off"}, {durable, "on"}} {
		var got string
		err := s.runTx(context.Background(), "probe", c.d, func(t *txn) error {
			return t.tx.QueryRow(t.ctx, "SHOW synchronous_commit").Scan(&got)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("durability %v: synchronous_commit = %q inside the transaction, want %q", c.d, got, c.want)
		}
	}
}
