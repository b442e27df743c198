package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/store"
)

// BenchmarkStorePushMany measures the driver alone (no HTTP): 8 goroutines
// pushing batches of 100 over 16 partitions.
func BenchmarkStorePushMany(b *testing.B) {
	st := openTB(b)
	ctx := context.Background()
	payload := []byte(`{"orderId":12345,"status":"created","amount":99.5,"note":"hello world"}`)
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for {
				n := next.Add(100)
				if n > int64(b.N)+99 {
					return
				}
				items := make([]store.PushItem, 100)
				for i := range items {
					id := uuid.Must(uuid.NewV7()).String()
					items[i] = store.PushItem{Queue: "bench", Partition: fmt.Sprint("p", (int(n)+i)%16),
						MessageID: id, TransactionID: id, Payload: payload}
				}
				if _, err := st.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}
