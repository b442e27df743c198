package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/storetest"
)

// Two stores on one schema (two brokers) push and consume one queue
// concurrently: every message is delivered exactly once per group, in
// order within its partition, and no lane is ever leased twice at once.
func TestTwoStoresShareQueue(t *testing.T) {
	schema := newSchema(t)
	stores := []*Store{openStore(t, schema, 8), openStore(t, schema, 8)}
	const parts, perPart, consumers = 12, 60, 4
	ctx := context.Background()
	var pwg sync.WaitGroup
	for p := range parts {
		pwg.Go(func() {
			s := stores[p%2]
			for m := 0; m < perPart; m += 5 {
				var items []store.PushItem
				for k := range 5 {
					items = append(items, storetest.Item("shared", fmt.Sprintf("p%02d", p), m+k))
				}
				if _, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}  // message id → deliveries
	lastN := map[string]int{} // partition → last payload n
	var holding sync.Map      // partition id → lease holding it
	var delivered atomic.Int64
	deadline := time.Now().Add(60 * time.Second)
	var cwg sync.WaitGroup
	for c := range 2 * consumers {
		cwg.Go(func() {
			s := stores[c%2]
			for delivered.Load() < parts*perPart && time.Now().Before(deadline) {
				lease := storetest.NewID()
				res, err := s.LanePop(ctx, &store.LanePopParams{Queue: "shared", ConsumerGroup: "g", Batch: 7,
					Partitions: 2, LeaseID: lease, Now: time.Now()})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Messages) == 0 {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				lanes := map[string]store.Message{}
				for _, m := range res.Messages {
					if prev, loaded := holding.LoadOrStore(m.PartitionID, lease); loaded && prev != lease {
						t.Errorf("lane %s leased by %v and %s at once", m.Partition, prev, lease)
					}
					lanes[m.PartitionID] = m
				}
				mu.Lock()
				for _, m := range res.Messages {
					seen[m.ID]++
					var n int
					fmt.Sscanf(string(m.Payload), `{"n":%d}`, &n)
					if last, ok := lastN[m.Partition]; ok && n != last+1 {
						t.Errorf("partition %s: got n=%d after n=%d", m.Partition, n, last)
					}
					lastN[m.Partition] = n
				}
				mu.Unlock()
				var acks []store.Ack
				for pid, m := range lanes {
					holding.Delete(pid)
					acks = append(acks, storetest.AckOf(m, "g", lease, store.AckCompleted))
				}
				res2, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: acks, Now: time.Now()})
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range res2 {
					if !r.Success || !r.LeaseReleased {
						t.Errorf("ack verdict %+v", r)
					}
				}
				delivered.Add(int64(len(res.Messages)))
			}
		})
	}
	pwg.Wait()
	cwg.Wait()
	if got := delivered.Load(); got != parts*perPart {
		t.Fatalf("delivered %d messages, want %d", got, parts*perPart)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
}
