package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/testenv"
)

// twoBrokers starts brokers A and B on one fresh schema.
func twoBrokers(t *testing.T, poolSize int) (a, b *broker) {
	t.Helper()
	return twoBrokersWith(t, poolSize, server.Config{}, server.Config{})
}

// twoBrokersWith is twoBrokers with a server configuration for each.
func twoBrokersWith(t *testing.T, poolSize int, cfgA, cfgB server.Config) (a, b *broker) {
	t.Helper()
	u := testURL(t)
	schema := newSchema(t)
	cfg := postgres.Config{URL: u, Schema: schema, PoolSize: poolSize}
	// Start one after the other: the second finds the schema migrated
	// (concurrent start-up is the driver's own test).
	a = startBroker(t, "A", cfg, cfgA)
	b = startBroker(t, "B", cfg, cfgB)
	return a, b
}

// payload of the messages of TestTwoBrokersShareOneDatabase.
type seqPayload struct {
	Producer  int    `json:"producer"`
	Seq       int    `json:"seq"`
	Partition string `json:"partition"`
}

// Producers and consumers on two brokers sharing one database: every
// message is delivered exactly once, and each producer's messages come out
// of each partition in the order it pushed them.
func TestTwoBrokersShareOneDatabase(t *testing.T) {
	testURL(t)
	if testing.Short() {
		t.Skip("50,000 messages through two brokers: skipped under -short")
	}
	const (
		total            = 50_000
		batch            = 100
		partitions       = 16
		producersPerNode = 4
		consumersPerNode = 4
		queue            = "e2e-two-brokers"
		bound            = 180 * time.Second
	)
	a, b := twoBrokers(t, 10)
	nodes := []*broker{a, b}
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	// Consumption state, checked under mu before the batch is acked, so the
	// next batch of a partition (which needs the ack to release the lease)
	// is always checked after this one.
	var (
		mu          sync.Mutex
		seen        = make(map[[2]int]int, total) // (producer, seq) → deliveries
		last        = map[string]int{}            // "partition/producer" → last seq delivered
		unique      int
		delivered   int
		duplicates  int
		orderErrors []string
		badPayloads []string
		lastDeliver time.Time
	)
	allIn := make(chan struct{})
	var errMu sync.Mutex
	var errs []string
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
		cancel()
	}

	start := time.Now()
	var pushedDone time.Time
	var batches atomic.Int64 // push tickets: total/batch in all
	var pushed atomic.Int64
	var producers, consumers sync.WaitGroup
	for n, node := range nodes {
		for i := range producersPerNode {
			id := n*producersPerNode + i
			producers.Go(func() {
				seq := 0
				for batches.Add(1) <= total/batch {
					items := make([]pushItem, batch)
					for j := range items {
						part := fmt.Sprintf("p%02d", (seq+id)%partitions)
						items[j] = pushItem{Queue: queue, Partition: part,
							TransactionID: fmt.Sprintf("prod%d-seq%d", id, seq),
							Payload:       seqPayload{Producer: id, Seq: seq, Partition: part}}
						seq++
					}
					res, err := c.push(ctx, node.url, items)
					if err != nil {
						if ctx.Err() == nil {
							fail("producer %d on %s: %v", id, node.name, err)
						}
						return
					}
					for j, r := range res {
						if r.Status != "queued" {
							fail("producer %d on %s: item %s answered %q (error %q), want queued",
								id, node.name, items[j].TransactionID, r.Status, r.Error)
							return
						}
					}
					pushed.Add(batch)
				}
			})
		}
	}
	for _, node := range nodes {
		for i := range consumersPerNode {
			consumers.Go(func() {
				path := queuePath(queue) + "?batch=100&wait=true&timeout=1000"
				for {
					select {
					case <-allIn:
						return
					case <-ctx.Done():
						return
					default:
					}
					p, err := c.pop(ctx, node.url, path)
					if err != nil {
						if ctx.Err() == nil {
							fail("consumer %d on %s: %v", i, node.name, err)
						}
						return
					}
					if p == nil {
						continue
					}
					mu.Lock()
					for _, m := range p.Messages {
						var pl seqPayload
						if err := json.Unmarshal(m.Data, &pl); err != nil || pl.Partition != m.Partition {
							badPayloads = append(badPayloads, fmt.Sprintf("%s in %s: %s", m.TransactionID, m.Partition, m.Data))
							continue
						}
						delivered++
						k := [2]int{pl.Producer, pl.Seq}
						seen[k]++
						if seen[k] > 1 {
							duplicates++
							continue
						}
						unique++
						lk := fmt.Sprintf("%s/%d", m.Partition, pl.Producer)
						if prev, ok := last[lk]; ok && pl.Seq <= prev {
							orderErrors = append(orderErrors, fmt.Sprintf("partition %s producer %d: seq %d delivered after %d",
								m.Partition, pl.Producer, pl.Seq, prev))
						}
						last[lk] = pl.Seq
					}
					lastDeliver = time.Now()
					if unique == total {
						select {
						case <-allIn:
						default:
							close(allIn)
						}
					}
					mu.Unlock()
					if err := c.ackAll(ctx, node.url, p); err != nil {
						if ctx.Err() == nil {
							fail("consumer %d on %s: %v", i, node.name, err)
						}
						return
					}
				}
			})
		}
	}
	producers.Wait()
	pushedDone = time.Now()
	consumers.Wait()
	end := time.Now()
	timedOut := ctx.Err() != nil && len(errs) == 0

	// Nothing is left: the queue answers empty on both brokers.
	var leftover []string
	if len(errs) == 0 && !timedOut {
		for _, node := range nodes {
			p, err := c.pop(context.Background(), node.url, queuePath(queue)+"?batch=1000")
			switch {
			case err != nil:
				t.Errorf("final pop on %s: %v", node.name, err)
			case p != nil:
				for _, m := range p.Messages {
					leftover = append(leftover, m.TransactionID)
				}
			}
		}
	}

	mu.Lock()
	defer mu.Unlock()
	elapsed := lastDeliver.Sub(start)
	if lastDeliver.IsZero() {
		elapsed = end.Sub(start)
	}
	t.Logf("two brokers, one database: in %d (pushed), out %d unique, %d deliveries, duplicates %d, lost %d, order violations %d",
		pushed.Load(), unique, delivered, duplicates, total-unique, len(orderErrors))
	t.Logf("%d producers and %d consumers over %d partitions, batches of %d: push %.0f msg/s (%v), end to end %.0f msg/s (%v)",
		len(nodes)*producersPerNode, len(nodes)*consumersPerNode, partitions, batch,
		float64(pushed.Load())/pushedDone.Sub(start).Seconds(), pushedDone.Sub(start).Round(time.Millisecond),
		float64(unique)/elapsed.Seconds(), elapsed.Round(time.Millisecond))
	for _, e := range errs {
		t.Error(e)
	}
	if timedOut {
		t.Errorf("not done within %v: %d of %d messages pushed, %d delivered", bound, pushed.Load(), total, unique)
	}
	if pushed.Load() != total && len(errs) == 0 {
		t.Errorf("pushed %d messages, want %d", pushed.Load(), total)
	}
	if unique != total && len(errs) == 0 && !timedOut {
		t.Errorf("lost %d of %d messages", total-unique, total)
	}
	if duplicates != 0 {
		t.Errorf("%d duplicate deliveries", duplicates)
	}
	if len(leftover) != 0 {
		t.Errorf("%d messages still in the queue after all were delivered, e.g. %v", len(leftover), leftover[:min(5, len(leftover))])
	}
	if len(badPayloads) != 0 {
		t.Errorf("%d messages with a wrong payload, e.g. %v", len(badPayloads), badPayloads[:min(5, len(badPayloads))])
	}
	if len(orderErrors) != 0 {
		t.Errorf("%d order violations, e.g. %v", len(orderErrors), orderErrors[:min(5, len(orderErrors))])
	}
}

// A long poll parked on broker B is answered after a push on broker A: the
// wake-up crosses brokers through the database (LISTEN/NOTIFY); B's queue
// polls do not look on their own, so a lost notification is a 204 after
// 10 s. In the latency run, the answer comes within 50 ms (p50).
func TestPushOnOneBrokerWakesPopOnAnother(t *testing.T) {
	testURL(t)
	const (
		queue  = "e2e-wake"
		rounds = 20
		warmup = 2
	)
	a, b := twoBrokers(t, 4)
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	// round parks a pop on B, pushes one message on A and returns the time
	// from the push's answer to the pop's answer.
	round := func(i int) time.Duration {
		t.Helper()
		type popped struct {
			p   *popResponse
			err error
			at  time.Time
		}
		done := make(chan popped, 1)
		go func() {
			p, err := c.pop(ctx, b.url, queuePath(queue)+"?wait=true&timeout=10000")
			done <- popped{p, err, time.Now()}
		}()
		// Push only once the pop is parked.
		parked := waitUntil(10*time.Second, 2*time.Millisecond, func() bool {
			n, err := c.popWaiting(ctx, b.url)
			return err == nil && n >= 1
		})
		if !parked {
			t.Fatalf("round %d: the pop on B never parked (queen_pop_waiting stayed 0)", i)
		}
		txn := fmt.Sprintf("wake-%d", i)
		res, err := c.push(ctx, a.url, []pushItem{{Queue: queue, TransactionID: txn, Payload: map[string]int{"round": i}}})
		pushedAt := time.Now()
		if err != nil {
			t.Fatalf("round %d: push on A: %v", i, err)
		}
		if res[0].Status != "queued" {
			t.Fatalf("round %d: push on A answered %+v, want queued", i, res[0])
		}
		var got popped
		select {
		case got = <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("round %d: the pop on B did not answer within 15s", i)
		}
		if got.err != nil {
			t.Fatalf("round %d: pop on B: %v", i, got.err)
		}
		if got.p == nil {
			t.Fatalf("round %d: pop on B answered 204 (timeout 10s) after a push on A %v earlier", i, time.Since(pushedAt))
		}
		if len(got.p.Messages) != 1 || got.p.Messages[0].TransactionID != txn {
			t.Fatalf("round %d: pop on B delivered %+v, want the one message %s", i, got.p.Messages, txn)
		}
		if err := c.ackAll(ctx, b.url, got.p); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		return max(got.at.Sub(pushedAt), 0)
	}

	// Warm-up rounds create the queue, its partition and the lane, and make
	// sure B's listener is connected; they are not measured.
	for i := range warmup {
		round(-1 - i)
	}
	lat := make([]time.Duration, 0, rounds)
	for i := range rounds {
		lat = append(lat, round(i))
	}
	p50, p90, worst := percentile(lat, 50), percentile(lat, 90), percentile(lat, 100)
	t.Logf("push on A answered → long poll on B answered, %d rounds: min %v p50 %v p90 %v max %v; all %v",
		rounds, percentile(lat, 0).Round(10*time.Microsecond), p50.Round(10*time.Microsecond),
		p90.Round(10*time.Microsecond), worst.Round(10*time.Microsecond), roundAll(lat))
	if !testenv.LatencyRun() {
		return
	}
	if p50 >= 50*time.Millisecond {
		t.Errorf("p50 wake-up %v, want < 50ms", p50)
	}
	if worst >= 250*time.Millisecond {
		t.Errorf("max wake-up %v, want < 250ms", worst)
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Microsecond)
	}
	return out
}
