package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// seqPayload is the payload of the concurrency test's messages.
type seqPayload struct {
	P   int `json:"p"`
	Seq int `json:"seq"`
}

// testConcurrency drives many producers' worth of messages through several
// concurrent consumers and checks exactly-once delivery and per-partition order.
func (s *suite) testConcurrency(t *testing.T) {
	t.Run("8 consumers drain 10000 messages over 16 partitions exactly once in order", func(t *testing.T) {
		if testing.Short() {
			t.Skip("concurrency test skipped in -short mode")
		}
		const (
			partitions = 16
			total      = 10000
			pushBatch  = 100
			consumers  = 8
			limit      = 120 * time.Second
		)
		c := s.server(t)
		q := uniq("concurrency")
		ctx, cancel := context.WithTimeout(context.Background(), limit+10*time.Second)
		defer cancel()
		deadline := time.Now().Add(limit)

		var (
			mu        sync.Mutex
			problems  []string
			order     = make([][]int, partitions) // seq numbers per partition, in delivery order
			delivered = map[string]int{}          // message id -> times delivered
			unique    atomic.Int64
			done      atomic.Bool
		)
		problem := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			if len(problems) < 20 {
				problems = append(problems, fmt.Sprintf(format, args...))
			}
		}

		var wg sync.WaitGroup
		// The producer pushes sequentially so that per-partition push order is
		// the sequence order; consumers run concurrently with it.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < total/pushBatch; b++ {
				items := make([]map[string]any, pushBatch)
				for i := range items {
					k := b*pushBatch + i
					p := k % partitions
					items[i] = item(q, seqPayload{P: p, Seq: k / partitions}, "partition", fmt.Sprintf("p%02d", p))
				}
				r, err := c.send(ctx, "POST", "/api/v1/push", map[string]any{"items": items})
				if err != nil {
					problem("push batch %d: %v", b, err)
					return
				}
				var res []pushResult
				if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &res) != nil || len(res) != pushBatch {
					problem("push batch %d: %v", b, r)
					return
				}
				for i, e := range res {
					if e.Status != "queued" {
						problem("push batch %d item %d: %+v", b, i, e)
						return
					}
				}
			}
		}()

		for w := range consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !done.Load() && time.Now().Before(deadline) {
					r, err := c.send(ctx, "GET", queuePath(q)+"?batch=50&wait=true&timeout=500", nil)
					if err != nil {
						problem("consumer %d: pop: %v", w, err)
						return
					}
					if r.Status == http.StatusNoContent {
						continue
					}
					var p popResp
					if r.Status != http.StatusOK || json.Unmarshal(r.Body, &p) != nil || len(p.Messages) == 0 {
						problem("consumer %d: pop: %v", w, r)
						return
					}
					acks := make([]map[string]any, len(p.Messages))
					mu.Lock()
					for i, m := range p.Messages {
						var pl seqPayload
						if err := json.Unmarshal(m.Data, &pl); err != nil || pl.P < 0 || pl.P >= partitions {
							mu.Unlock()
							problem("consumer %d: message %s has payload %s", w, m.ID, m.Data)
							return
						}
						if want := fmt.Sprintf("p%02d", pl.P); m.Partition != want {
							mu.Unlock()
							problem("consumer %d: message %s of partition %s arrived as %s", w, m.ID, want, m.Partition)
							return
						}
						order[pl.P] = append(order[pl.P], pl.Seq)
						delivered[m.ID]++
						if delivered[m.ID] == 1 {
							unique.Add(1)
						}
						acks[i] = ackOf(m, "completed")
					}
					mu.Unlock()

					ar, err := c.send(ctx, "POST", "/api/v1/ack/batch", map[string]any{"acknowledgments": acks})
					if err != nil {
						problem("consumer %d: ack: %v", w, err)
						return
					}
					var res []ackResult
					if ar.Status != http.StatusOK || json.Unmarshal(ar.Body, &res) != nil || len(res) != len(acks) {
						problem("consumer %d: ack: %v", w, ar)
						return
					}
					for i, a := range res {
						if !a.Success {
							problem("consumer %d: ack of %s: %v", w, p.Messages[i].ID, a)
						}
					}
					if unique.Load() >= total {
						done.Store(true)
					}
				}
			}()
		}
		wg.Wait()

		for _, p := range problems {
			t.Error(p)
		}
		dupes := 0
		for id, n := range delivered {
			if n > 1 {
				dupes++
				if dupes <= 5 {
					t.Errorf("message %s delivered %d times", id, n)
				}
			}
		}
		if dupes > 0 {
			t.Errorf("%d messages delivered more than once", dupes)
		}
		if got := unique.Load(); got != total {
			t.Errorf("%d of %d messages delivered within %v", got, total, limit)
		}
		for p, seqs := range order {
			for i := 1; i < len(seqs); i++ {
				if seqs[i] <= seqs[i-1] {
					t.Errorf("partition p%02d: seq %d delivered after %d (position %d); order within a partition must be kept", p, seqs[i], seqs[i-1], i)
					break
				}
			}
		}
	})
}
