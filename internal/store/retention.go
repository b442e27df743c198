package store

import (
	"context"
	"time"
)

// RetentionStore runs the sweeps that keep what a queue stores within its
// options: retention (retentionSeconds, completedRetentionSeconds), eviction
// (maxWaitTimeSeconds) and the removal of empty, idle partitions. Every
// method is one bounded step (at most Limit rows, one short transaction or
// writer job), so that pushes and pops never wait long behind a sweep; the
// caller repeats steps until the sweep is done. Every step records what it
// removed in the retention history.
type RetentionStore interface {
	// RetentionHistory returns the history of removals since p.Since,
	// oldest minute first.
	RetentionHistory(ctx context.Context, p *RetentionHistoryParams) ([]RetentionHistoryEntry, error)
	// RetentionHistoryPrune deletes the history of minutes before p.Before.
	RetentionHistoryPrune(ctx context.Context, p *RetentionHistoryPruneParams) (int, error)
	// RetentionPartitions deletes up to p.Limit partitions that hold no
	// message and have seen no push and no claim since p.IdleSince, with
	// their lanes and dead letters.
	RetentionPartitions(ctx context.Context, p *RetentionPartitionsParams) (*RetentionResult, error)
	// RetentionSweep runs one step of a sweep of kind p.Kind over the
	// partitions after p.From (see RetentionKind for what each kind does).
	RetentionSweep(ctx context.Context, p *RetentionSweepParams) (*RetentionResult, error)
}

// RetentionKind names a sweep, and the removals it records in the history.
type RetentionKind string

// The sweeps. Each removes or evicts a prefix of a partition (the messages
// up to some offset, never one with an older message left behind), on queues
// whose options ask for it.
const (
	// RetentionCompleted deletes messages every consumer group of the queue
	// has consumed (acked, dead-lettered or evicted) once they are older
	// than completedRetentionSeconds, on queues with retentionEnabled. A
	// partition no group has joined keeps everything.
	RetentionCompleted RetentionKind = "completed_retention"
	// RetentionEviction moves messages that nobody consumed within
	// maxWaitTimeSeconds to the dead-letter queue with the error "max wait
	// time exceeded": one dead letter per consumer group whose cursor has not
	// passed them (the queue-mode group's when no group has joined the
	// partition yet), and the group's cursor moves past them. A lane under a
	// live lease is left to a later step. Groups that join later start
	// after the evicted messages. Messages stay stored (dead letters refer
	// to them) until retention deletes them.
	RetentionEviction RetentionKind = "eviction"
	// RetentionExpired deletes messages older than retentionSeconds
	// whatever their state, on queues with retentionEnabled; the cursors
	// behind them move past them and a lease whose whole batch is gone is
	// released.
	RetentionExpired RetentionKind = "retention"
)

// RetentionSweepParams bound one step of a sweep.
type RetentionSweepParams struct {
	// From resumes a sweep after the position a previous step returned in
	// Next; 0 starts at the beginning. Positions are the driver's own.
	From int64
	Kind RetentionKind
	// Limit bounds the messages the step removes; <= 0 means 1000.
	Limit int
	Now   time.Time
	// Tenant limits the sweep to one tenant's queues; "" sweeps them all.
	Tenant string
}

// RetentionResult says what a step removed and where the sweep resumes.
type RetentionResult struct {
	// Removed counts the messages the step deleted or evicted (each message
	// once, whatever the number of groups it was evicted for), or the
	// partitions it deleted.
	Removed int
	// Next is where the next step resumes (RetentionSweepParams.From); 0
	// when the sweep has been over everything.
	Next int64
	// Took is how long the step held the engine: its writer job on the
	// embedded engine (not the time it queued behind others' jobs), its
	// transaction on PostgreSQL. The sweep sizes its steps and pauses by it.
	Took time.Duration
}

// RetentionPartitionsParams bound one step of the removal of idle
// partitions.
type RetentionPartitionsParams struct {
	From      int64 // as in RetentionSweepParams
	IdleSince time.Time
	Limit     int // partitions at most; <= 0 means 1000
	Now       time.Time
	Tenant    string // "" for every tenant
}

// RetentionHistoryParams select history entries.
type RetentionHistoryParams struct {
	Queue  string // "" for every queue of the tenant
	Since  time.Time
	Tenant string // "" for every tenant
}

// RetentionHistoryPruneParams select the history to forget.
type RetentionHistoryPruneParams struct {
	Before time.Time
	Now    time.Time
}

// RetentionHistoryEntry counts the messages of one queue removed by one kind
// of sweep within one minute.
type RetentionHistoryEntry struct {
	Count  int
	Kind   RetentionKind
	Minute time.Time // the start of the minute, UTC
	Queue  string
	Tenant string
}

// MinuteOf returns the start of t's minute in UTC, the bucket of the
// retention history.
func MinuteOf(t time.Time) time.Time { return t.UTC().Truncate(time.Minute) }
