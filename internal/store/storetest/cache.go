package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// SmallNameCache is the name → id cache size a driver passes to the stores
// it gives RunSmallCache: small enough that every test drops and re-reads
// entries all the time.
const SmallNameCache = 2

// RunSmallCache runs the parts of the suite that resolve names through the
// driver's bounded name → id caches (push, pop, ack, transactions, options,
// queue reuse) plus eviction cases, against stores made by newStore, whose
// caches must hold SmallNameCache entries each (QUEEN_NAME_CACHE_SIZE): an
// entry dropped must be read again, never guessed, and a deleted queue must
// never be served from a cache.
func RunSmallCache(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("Push", func(t *testing.T) { runPush(t, newStore) })
	t.Run("Pop", func(t *testing.T) { runPop(t, newStore) })
	t.Run("Ack", func(t *testing.T) { runAck(t, newStore) })
	t.Run("Tx", func(t *testing.T) { runTx(t, newStore) })
	t.Run("Queue", func(t *testing.T) { runQueue(t, newStore) })
	t.Run("QueueReuse", func(t *testing.T) { runQueueReuse(t, newStore) })
	t.Run("Options", func(t *testing.T) { runOptions(t, newStore) })
	t.Run("Eviction", func(t *testing.T) { runEviction(t, newStore) })
}

func runEviction(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("ManyQueuesAndPartitions", func(t *testing.T) {
		s := setup(t, newStore)
		const queues, parts = 5, 4
		pushed := map[string][]store.PushItem{}
		// Interleaved, so that every push finds its queue and partition
		// dropped by the ones before.
		for round := range 3 {
			for p := range parts {
				for q := range queues {
					name, part := fmt.Sprintf("q%d", q), fmt.Sprintf("p%d", p)
					items := PushAt(t, s, At(time.Duration(round)*time.Second), name, part, 1)
					pushed[name+"/"+part] = append(pushed[name+"/"+part], items...)
				}
			}
		}
		now := At(time.Minute)
		for p := range parts {
			for q := range queues {
				name, part := fmt.Sprintf("q%d", q), fmt.Sprintf("p%d", p)
				msgs, lease := popAll(t, s, name, part, store.QueueMode, now)
				wantIDs(t, "pop of "+name+"/"+part, msgs, pushed[name+"/"+part]...)
				res := Ack(t, s, now, AckOf(msgs[len(msgs)-1], store.QueueMode, lease, store.AckCompleted))
				wantVerdict(t, "ack of "+name+"/"+part, res[0], vReleased)
			}
		}
		for q := range queues {
			wantEmpty(t, "pop after everything was acked", Pop(t, s, PopParams(fmt.Sprintf("q%d", q), store.QueueMode, now)))
		}
	})

	t.Run("ReconfiguredAfterEviction", func(t *testing.T) {
		s := setup(t, newStore)
		Configure(t, s, "other0", store.DefaultQueueOptions())
		Configure(t, s, "other1", store.DefaultQueueOptions())
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 5 }))
		items := PushAt(t, s, T0, "q", "p", 1)
		m, lease := popAll(t, s, "q", "p", store.QueueMode, At(time.Second))
		wantIDs(t, "first pop", m, items...)
		// Empty pops of other queues drop q from a queue cache, not its
		// partitions from a partition cache.
		wantEmpty(t, "pop of other0", Pop(t, s, PopParams("other0", store.QueueMode, At(time.Second))))
		wantEmpty(t, "pop of other1", Pop(t, s, PopParams("other1", store.QueueMode, At(time.Second))))
		// The new options apply at once, though the queue was cached with
		// the old ones before it was dropped and its partitions still are.
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.RetryLimit = 0 }))
		wantVerdict(t, "failure with retryLimit 0", Ack(t, s, At(2*time.Second), AckOf(m[0], store.QueueMode, lease,
			store.AckFailed))[0], vDLQ)
		for i := range 3 {
			PushAt(t, s, T0, fmt.Sprintf("other%d", i), "p", 1)
		}
		Configure(t, s, "q", Options(func(o *store.QueueOptions) { o.DelayedProcessing = 10 }))
		later := PushAt(t, s, At(3*time.Second), "q", "p", 1)
		wantEmpty(t, "pop inside the new delay", Pop(t, s, PopParams("q", store.QueueMode, At(4*time.Second))))
		m, _ = popAll(t, s, "q", "p", store.QueueMode, At(14*time.Second))
		wantIDs(t, "pop after the new delay", m, later...)
	})
}
