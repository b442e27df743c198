// Package sweep drives the retention and eviction sweeps of a store
// (store.RetentionStore) in steps short enough that pushes and pops never
// wait long behind them, the way package purge frees deleted queues: each
// step's size adapts so that it takes about purge.Target, and the sweep
// pauses twice as long as the step took before the next. A step's time is
// the time it held the engine (store.RetentionResult.Took): on the embedded
// engine, time a step spends queued behind pushes is not the sweep's doing,
// and counting it would shrink the steps to nothing under a push load. The broker's
// retention and eviction services and the stores' latency tests share it,
// so that what is tested is what runs.
package sweep

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/purge"
)

// Sweeper is the part of the store a sweep needs.
type Sweeper interface {
	RetentionPartitions(ctx context.Context, p *store.RetentionPartitionsParams) (*store.RetentionResult, error)
	RetentionSweep(ctx context.Context, p *store.RetentionSweepParams) (*store.RetentionResult, error)
}

// minPause is the shortest pause between two steps.
const minPause = 2 * time.Millisecond

// Result is what a sweep did.
type Result struct {
	Longest time.Duration // the longest step
	Removed int
	Steps   int
}

// Run runs a whole sweep of kind in steps of at most batch rows (the first
// ones smaller, until the step size has adapted) and returns what it
// removed. It stops when the sweep is over, ctx ends or a step fails.
func Run(ctx context.Context, s Sweeper, kind store.RetentionKind, batch int, now func() time.Time) (Result, error) {
	var res Result
	limit := min(batch, 4*purge.MinLimit)
	var from int64
	for {
		start := time.Now()
		r, err := s.RetentionSweep(ctx, &store.RetentionSweepParams{Kind: kind, From: from, Limit: limit, Now: now()})
		if err != nil {
			return res, err
		}
		took := r.Took // the time the step held the engine, not its queueing
		if took <= 0 {
			took = time.Since(start)
		}
		res.Removed += r.Removed
		res.Steps++
		res.Longest = max(res.Longest, took)
		if r.Next == 0 {
			return res, nil
		}
		from = r.Next
		limit = min(purge.NextLimit(limit, r.Removed, took), batch)
		if err := pause(ctx, took); err != nil {
			return res, err
		}
	}
}

// Partitions deletes the empty partitions idle for longer than idle, in
// steps of at most batch partitions.
func Partitions(ctx context.Context, s Sweeper, idle time.Duration, batch int, now func() time.Time) (Result, error) {
	var res Result
	var from int64
	for {
		start := time.Now()
		t := now()
		r, err := s.RetentionPartitions(ctx, &store.RetentionPartitionsParams{From: from, IdleSince: t.Add(-idle),
			Limit: batch, Now: t})
		if err != nil {
			return res, err
		}
		res.Removed += r.Removed
		res.Steps++
		if r.Next == 0 {
			return res, nil
		}
		from = r.Next
		took := r.Took
		if took <= 0 {
			took = time.Since(start)
		}
		if err := pause(ctx, took); err != nil {
			return res, err
		}
	}
}

// pause waits twice as long as a step took, leaving the engine to pushes
// and pops at least two thirds of the time.
func pause(ctx context.Context, took time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(max(2*took, minPause)):
		return nil
	}
}
