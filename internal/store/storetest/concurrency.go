package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

func runConcurrency(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("PopAck", func(t *testing.T) {
		const (
			partitions = 16
			perPart    = 125 // 2,000 messages
			workers    = 8
			total      = partitions * perPart
		)
		s := setup(t, newStore)
		// Push in interleaved batches so that partitions share offsets ranges.
		for start := 0; start < perPart; start += 25 {
			var batch []store.PushItem
			for k := start; k < start+25; k++ {
				for p := range partitions {
					it := Item("q", fmt.Sprintf("p%02d", p), k)
					it.Payload = []byte(fmt.Sprintf(`{"p":%d,"n":%d}`, p, k))
					batch = append(batch, it)
				}
			}
			PushItems(t, s, T0, batch...)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var (
			mu        sync.Mutex
			seen      = make(map[string]bool, total)
			order     = make([][]int, partitions) // payload n per partition, in delivery order
			delivered atomic.Int64
			wg        sync.WaitGroup
		)
		now := At(time.Second) // leases never expire during the test
		for w := range workers {
			wg.Go(func() {
				for delivered.Load() < total && ctx.Err() == nil {
					p := &store.LanePopParams{Queue: "q", ConsumerGroup: "g", Batch: 7 + w, Partitions: 1 + w%3,
						LeaseID: NewID(), Now: now}
					res, err := s.LanePop(ctx, p)
					if err != nil {
						t.Errorf("worker %d: Pop: %v", w, err)
						return
					}
					if len(res.Messages) == 0 {
						continue
					}
					// Record before acking: a lane's next batch can only be
					// popped after this ack releases it.
					mu.Lock()
					for _, m := range res.Messages {
						if seen[m.ID] {
							t.Errorf("worker %d: message %s (%s) delivered twice", w, m.ID, m.Payload)
						}
						seen[m.ID] = true
						var body struct{ P, N int }
						if err := json.Unmarshal(m.Payload, &body); err != nil {
							t.Errorf("worker %d: payload %q: %v", w, m.Payload, err)
							continue
						}
						if want := fmt.Sprintf("p%02d", body.P); m.Partition != want {
							t.Errorf("worker %d: message %s arrived on partition %s, pushed to %s", w, m.Payload, m.Partition, want)
						}
						order[body.P] = append(order[body.P], body.N)
					}
					mu.Unlock()
					delivered.Add(int64(len(res.Messages)))
					acks := make([]store.Ack, len(res.Messages))
					for i, m := range res.Messages {
						acks[i] = AckOf(m, "g", p.LeaseID, store.AckCompleted)
					}
					out, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: acks, Now: now})
					if err != nil {
						t.Errorf("worker %d: AckMany: %v", w, err)
						return
					}
					for i, r := range out {
						if !r.Success {
							t.Errorf("worker %d: ack of %s: %s", w, res.Messages[i].Payload, verdict(r))
						}
					}
				}
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatalf("timed out with %d of %d messages delivered", delivered.Load(), total)
		}
		if len(seen) != total {
			t.Errorf("delivered %d distinct messages, want %d", len(seen), total)
		}
		for p, ns := range order {
			if len(ns) != perPart {
				t.Errorf("partition p%02d: %d messages delivered, want %d", p, len(ns), perPart)
			}
			for i, n := range ns {
				if n != i {
					t.Errorf("partition p%02d: delivery %d was message %d; order %v", p, i, n, ns)
					break
				}
			}
		}
		wantEmpty(t, "pop after the run", Pop(t, s, PopParams("q", "g", At(time.Hour))))
	})

	t.Run("PushDedupRace", func(t *testing.T) {
		s := setup(t, newStore)
		const racers = 8
		txn := NewID()
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			queued int
			winner = map[string]bool{}
		)
		for range racers {
			wg.Go(func() {
				it := Item("q", "p", 0)
				it.TransactionID = txn
				res, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: []store.PushItem{it}, Now: T0})
				if err != nil {
					t.Errorf("PushMany: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				switch res[0].Status {
				case store.PushQueued:
					queued++
				case store.PushDuplicate:
				default:
					t.Errorf("racing push: status %q error %q", res[0].Status, res[0].Error)
				}
				winner[res[0].MessageID] = true
			})
		}
		wg.Wait()
		if queued != 1 || len(winner) != 1 {
			t.Errorf("%d racing pushes of one transactionId: %d queued, %d distinct message ids; want 1 and 1",
				racers, queued, len(winner))
		}
	})
}
