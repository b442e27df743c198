// Package purge frees the space of deleted queues in steps short enough that
// pushes and pops of other queues never wait long behind them. The broker's
// purge service and the stores' latency tests share it, so that what is
// tested is what runs.
//
// A step's cost depends on the engine, the disk and the rows (a message with
// a 1 MB payload costs more than one of 10 bytes), so the step size is not a
// constant: it adapts so that each step takes about Target, and the purge
// pauses between steps for twice as long as the step took, leaving the
// engine to other work at least two thirds of the time (on PostgreSQL the
// WAL a purge writes is flushed by the next durable commit, a push's: the
// slower the purge writes it, the less any one push pays).
package purge

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Purger is the part of the store a purge needs.
type Purger interface {
	QueuePurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error)
}

// Step sizes and the time a step should take.
const (
	Target   = 4 * time.Millisecond
	MinLimit = 64
	MaxLimit = 8192
	minPause = 2 * time.Millisecond
	first    = 256
)

// Result is what a purge did.
type Result struct {
	Rows  int
	Steps int
}

// Run purges until nothing deleted is left, ctx ends or a step fails.
func Run(ctx context.Context, s Purger, now func() time.Time) (Result, error) {
	var res Result
	limit := first
	for {
		start := time.Now()
		r, err := s.QueuePurge(ctx, &store.QueuePurgeParams{Limit: limit, Now: now()})
		if err != nil {
			return res, err
		}
		took := time.Since(start)
		res.Rows += r.Deleted
		res.Steps++
		if !r.More {
			return res, nil
		}
		limit = NextLimit(limit, r.Deleted, took)
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(max(2*took, minPause)):
		}
	}
}

// NextLimit adapts the step size after a step that deleted n rows (of at
// most limit) in took: halve it when the step took over twice the target,
// double it when it took under half and was not cut short by running out of
// rows.
func NextLimit(limit, n int, took time.Duration) int {
	switch {
	case took > 2*Target:
		return max(limit/2, MinLimit)
	case took < Target/2 && n >= limit:
		return min(limit*2, MaxLimit)
	}
	return limit
}
