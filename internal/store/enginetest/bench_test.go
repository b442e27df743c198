package enginetest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/enginetest"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/storetest"
)

// Benchmarks of every engine's driver alone (no HTTP; those through HTTP
// are in internal/apitest):
//
//	go test -run '^$' -bench 'StorePushMany/postgres' -benchtime 2000x ./internal/store/enginetest/

var benched = enginetest.Options{PoolSize: postgres.DefaultPoolSize}

// BenchmarkStorePushMany: 8 goroutines push batches of 100 messages spread
// over 16 partitions; reports msgs/s.
func BenchmarkStorePushMany(b *testing.B) {
	enginetest.RunB(b, func(b *testing.B, e enginetest.Engine) {
		s := e.Open(b, benched).Store
		const workers, batch, parts = 8, 100, 16
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for w := range workers {
			wg.Go(func() {
				items := make([]store.PushItem, batch)
				for next.Add(1) <= int64(b.N) {
					for i := range items {
						items[i] = storetest.Item("bench", fmt.Sprintf("p%02d", (w+i)%parts), i)
					}
					if _, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: items, Now: time.Now()}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "msgs/s")
	})
}

// BenchmarkStorePushOne: 64 goroutines push one message per call, so what
// an engine does with concurrent calls (PostgreSQL's batcher merges them)
// is what is measured.
func BenchmarkStorePushOne(b *testing.B) {
	enginetest.RunB(b, func(b *testing.B, e enginetest.Engine) {
		s := e.Open(b, benched).Store
		const workers, parts = 64, 16
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for w := range workers {
			wg.Go(func() {
				for i := 0; next.Add(1) <= int64(b.N); i++ {
					it := storetest.Item("bench", fmt.Sprintf("p%02d", (w+i)%parts), i)
					if _, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{
						Items: []store.PushItem{it}, Now: time.Now()}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
}

// BenchmarkStorePopAck: 8 consumers pop batches of 10 (one lane each) from
// a 16-partition queue and ack each batch with one call; reports msgs/s.
func BenchmarkStorePopAck(b *testing.B) {
	enginetest.RunB(b, func(b *testing.B, e enginetest.Engine) {
		s := e.Open(b, benched).Store
		const workers, batch, parts = 8, 10, 16
		total := b.N * batch
		var items []store.PushItem
		for i := range total {
			items = append(items, storetest.Item("bench", fmt.Sprintf("p%02d", i%parts), i))
			if len(items) == 500 || i == total-1 {
				if _, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: items, Now: time.Now()}); err != nil {
					b.Fatal(err)
				}
				items = nil
			}
		}
		var got atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for range workers {
			wg.Go(func() {
				for empty := 0; got.Load() < int64(total) && empty < 100; {
					lease := storetest.NewID()
					res, err := s.LanePop(context.Background(), &store.LanePopParams{Queue: "bench", ConsumerGroup: store.QueueMode,
						Batch: batch, Partitions: 1, LeaseID: lease, Now: time.Now()})
					if err != nil {
						b.Error(err)
						return
					}
					if len(res.Messages) == 0 {
						empty++
						continue
					}
					last := res.Messages[len(res.Messages)-1]
					if _, err := s.MessageAckMany(context.Background(), &store.MessageAckManyParams{Now: time.Now(),
						Acks: []store.Ack{storetest.AckOf(last, store.QueueMode, lease, store.AckCompleted)}}); err != nil {
						b.Error(err)
						return
					}
					got.Add(int64(len(res.Messages)))
				}
			})
		}
		wg.Wait()
		if got.Load() != int64(total) {
			b.Fatalf("consumed %d of %d", got.Load(), total)
		}
		b.ReportMetric(float64(total)/time.Since(start).Seconds(), "msgs/s")
	})
}
