package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store/purge"
)

// Deleting a queue removes it, its partitions and groups at once; its
// messages, lanes and dead letters are freed afterwards by the purge service
// in short steps (package purge), so that deleting a queue of millions of
// messages never holds up pushes and pops of other queues.

// purgeEvery catches deletions left unfinished by a previous process or by
// another broker that stopped.
const purgeEvery = time.Minute

// purgeDeleted frees deleted queues' rows until none are left or ctx ends.
// It runs under the cluster-wide job lock: one broker purges at a time.
func (b *Broker) purgeDeleted(ctx context.Context) {
	start := time.Now()
	res, err := purge.Run(ctx, b.store, b.now)
	if err != nil && ctx.Err() == nil {
		b.log.Warn("purge of deleted queues interrupted", "rows", res.Rows, "err", err)
		return
	}
	if res.Rows > 0 {
		b.log.Info("deleted queues purged", "rows", res.Rows, "steps", res.Steps,
			"took", time.Since(start).Round(time.Millisecond))
	}
}
