package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/purge"
)

// BoundedDeleteLimit is the longest a push, pop or ack of another queue may
// wait while a huge queue is deleted and purged, but for isolated stalls
// (stallRatio, stallMax).
const BoundedDeleteLimit = 100 * time.Millisecond

// Isolated stalls: how many requests may wait past the limit, and how long.
// A delete that holds locks too long makes every request that meets one of
// its long steps wait: many slow requests, over and over. A shared virtual
// disk also stalls now and then on its own (a checkpoint's fsync: one push
// of 154 ms among 190,000 requests in a four-minute sweep), which the few
// seconds of the baseline rarely catch. So: at most one request in
// stallRatio past the limit, and none past stallMax × the limit.
const (
	stallRatio = 10_000
	stallMax   = 3
)

// baselineFor is how long the traffic runs before the delete, to measure
// what the machine makes a request wait anyway.
const baselineFor = 5 * time.Second

// RunBoundedDelete fills a queue with n messages, then deletes it and purges
// it as the broker's purge service does (package purge) while another queue
// is pushed to, popped and acked without pause. The same traffic runs for a
// few seconds before the delete, so that a machine too busy to keep any
// request under the limit is told apart from a delete that stalls them.
// No push, pop or ack may wait longer than BoundedDeleteLimit meanwhile, but
// for isolated stalls. It is a latency test: drivers run it without the race
// detector, on a store of their own.
func RunBoundedDelete(t *testing.T, s store.Store, n int) {
	ctx := context.Background()
	const parts, batch = 16, 5000
	fillStart := time.Now()
	for done := 0; done < n; {
		k := min(batch, n-done)
		items := make([]store.PushItem, k)
		for i := range items {
			items[i] = Item("huge", "p"+itoa((done+i)%parts), done+i)
		}
		PushItems(t, s, T0, items...)
		done += k
	}
	t.Logf("filled a queue with %d messages in %v", n, time.Since(fillStart).Round(time.Millisecond))

	// The same traffic without a delete first: how long this machine makes
	// a push or a pop wait anyway.
	tr := startTraffic(t, s)
	time.Sleep(baselineFor)
	baseline := tr.reset()
	deleteStart := time.Now()
	existed, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "huge", Now: T0})
	if err != nil || !existed {
		t.Fatalf("QueueDelete: existed %v err %v", existed, err)
	}
	deleteTook := time.Since(deleteStart)
	purgeStart := time.Now()
	res, err := purge.Run(ctx, s, time.Now)
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	rows, steps := res.Rows, res.Steps
	purgeTook := time.Since(purgeStart)
	tr.stop()

	t.Logf("QueueDelete %v; purge of %d rows in %d steps, %v; meanwhile on another queue: %s (without a delete: %v)",
		deleteTook.Round(time.Microsecond), rows, steps, purgeTook.Round(time.Millisecond), tr, time.Duration(baseline))
	if rows != n {
		t.Errorf("purged %d rows, want the %d messages", rows, n)
	}
	if deleteTook > BoundedDeleteLimit {
		t.Errorf("QueueDelete of a queue of %d messages took %v, want < %v", n, deleteTook, BoundedDeleteLimit)
	}
	tr.check(t, "the delete", baseline)
}

// traffic pushes to, pops and acks another queue without pause, timing
// every request, until stopped.
type traffic struct {
	worstPush, worstPop, worstAck atomic.Int64
	pushed, popped                atomic.Int64
	requests                      atomic.Int64
	stopCh                        chan struct{}
	wg                            sync.WaitGroup

	mu   sync.Mutex
	slow []time.Duration // waits longer than BoundedDeleteLimit (check's limit is never lower)
}

func startTraffic(t *testing.T, s store.Store) *traffic {
	ctx := context.Background()
	tr := &traffic{stopCh: make(chan struct{})}
	record := func(worst *atomic.Int64, d time.Duration) {
		tr.requests.Add(1)
		if d > BoundedDeleteLimit {
			tr.mu.Lock()
			tr.slow = append(tr.slow, d)
			tr.mu.Unlock()
		}
		for {
			w := worst.Load()
			if int64(d) <= w || worst.CompareAndSwap(w, int64(d)) {
				return
			}
		}
	}
	tr.wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-tr.stopCh:
				return
			default:
			}
			items := make([]store.PushItem, 10)
			for j := range items {
				items[j] = Item("live", "p"+itoa(j%4), i*10+j)
			}
			start := time.Now()
			if _, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: T0}); err != nil {
				t.Errorf("push to another queue: %v", err)
				return
			}
			record(&tr.worstPush, time.Since(start))
			tr.pushed.Add(10)
		}
	})
	tr.wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-tr.stopCh:
				return
			default:
			}
			p := PopParams("live", "g", At(time.Duration(i)*time.Millisecond))
			p.Batch = 10
			start := time.Now()
			res, err := s.LanePop(ctx, p)
			if err != nil {
				t.Errorf("pop of another queue: %v", err)
				return
			}
			record(&tr.worstPop, time.Since(start))
			msgs := res.Messages
			if len(msgs) == 0 {
				time.Sleep(time.Millisecond) // nothing pushed yet: do not spin the writer
				continue
			}
			acks := make([]store.Ack, len(msgs))
			for j, m := range msgs {
				acks[j] = AckOf(m, "g", p.LeaseID, store.AckCompleted)
			}
			start = time.Now()
			if _, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: acks, Now: p.Now}); err != nil {
				t.Errorf("ack on another queue: %v", err)
				return
			}
			record(&tr.worstAck, time.Since(start))
			tr.popped.Add(int64(len(msgs)))
		}
	})
	return tr
}

// reset returns the worst wait so far and starts counting afresh.
func (tr *traffic) reset() int64 {
	tr.mu.Lock()
	tr.slow = nil
	tr.mu.Unlock()
	tr.requests.Store(0)
	return max(tr.worstPush.Swap(0), tr.worstPop.Swap(0), tr.worstAck.Swap(0))
}

func (tr *traffic) stop() {
	close(tr.stopCh)
	tr.wg.Wait()
}

func (tr *traffic) String() string {
	return fmt.Sprintf("%d pushed, %d popped in %d requests; worst wait: push %v, pop %v, ack %v", tr.pushed.Load(),
		tr.popped.Load(), tr.requests.Load(), time.Duration(tr.worstPush.Load()), time.Duration(tr.worstPop.Load()),
		time.Duration(tr.worstAck.Load()))
}

// check fails the test if requests waited longer than BoundedDeleteLimit
// during what (or twice the baseline, on a machine noisy without it), more
// than isolated stalls explain.
func (tr *traffic) check(t *testing.T, what string, baseline int64) {
	// On a machine that already makes a request wait over half the limit
	// without any delete, the limit would measure the neighbours: then the
	// delete may at most double the worst wait.
	limit := BoundedDeleteLimit
	if allowed := 2 * time.Duration(baseline); allowed > limit {
		t.Logf("this machine is noisy (worst wait %v without %s): allowing %v", time.Duration(baseline), what, allowed)
		limit = allowed
	}
	tr.mu.Lock()
	var over []time.Duration
	for _, d := range tr.slow {
		if d > limit {
			over = append(over, d)
		}
	}
	tr.mu.Unlock()
	requests := tr.requests.Load()
	if len(over) > 0 {
		t.Logf("%d of %d requests waited longer than %v during %s: %v", len(over), requests, limit, what, over)
	}
	if allowed := requests / stallRatio; int64(len(over)) > allowed {
		t.Errorf("%d of %d requests of another queue waited longer than %v during %s (%v), want at most %d "+
			"(one in %d)", len(over), requests, limit, what, over, allowed, stallRatio)
	}
	for kind, worst := range map[string]*atomic.Int64{"push": &tr.worstPush, "pop": &tr.worstPop, "ack": &tr.worstAck} {
		if d := time.Duration(worst.Load()); d > stallMax*limit {
			t.Errorf("a %s of another queue waited %v during %s, want < %v", kind, d, what, stallMax*limit)
		}
	}
	if tr.pushed.Load() == 0 || tr.popped.Load() == 0 {
		t.Errorf("no traffic on the other queue during %s (pushed %d, popped %d)", what, tr.pushed.Load(), tr.popped.Load())
	}
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
