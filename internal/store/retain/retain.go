// Package retain holds what the steps of the retention, completed-retention,
// eviction and idle-partition sweeps decide alike on every engine: which
// window of partition ids a step looks at and where the next step starts,
// the cutoff of each kind, and which prefix of a partition's messages a step
// may take. An engine answers only for its rows, its locks and its SQL
// dialect; the lane rules of a sweep are package lane's (Drop, Evict).
//
// A step is bounded twice, so that the writes queued behind it wait for one
// short step whatever the size of the queue: it looks at no more than Window
// partition ids, and removes no more than its limit of rows.
package retain

import (
	"fmt"
	"slices"

	"github.com/queen-go/queen/internal/store"
)

// Window is how many partition ids one step looks at, at most: it bounds
// the step's reads whatever the number of partitions.
const Window = 1024

// DefaultLimit is how many rows a step removes when its params say 0.
const DefaultLimit = 1000

// Limit returns limit, or DefaultLimit when it is not positive.
func Limit(limit int) int {
	if limit <= 0 {
		return DefaultLimit
	}
	return limit
}

// Filters are an engine's conditions on a queue's options that select the
// partitions each kind of sweep visits.
type Filters struct {
	Expired, Completed, Eviction string
}

// For returns the filter of kind, or an error for a kind no sweep has.
func (f Filters) For(kind store.RetentionKind) (string, error) {
	switch kind {
	case store.RetentionExpired:
		return f.Expired, nil
	case store.RetentionCompleted:
		return f.Completed, nil
	case store.RetentionEviction:
		return f.Eviction, nil
	}
	return "", fmt.Errorf("retention sweep: unknown kind %q", kind)
}

// Cutoff returns the creation time (Unix ms) before which a sweep of kind
// takes a message of a queue with opts, at nowMs.
func Cutoff(kind store.RetentionKind, opts *store.QueueOptions, nowMs int64) int64 {
	switch kind {
	case store.RetentionExpired:
		return nowMs - int64(opts.RetentionSeconds)*1000
	case store.RetentionCompleted:
		return nowMs - int64(opts.CompletedRetentionSeconds)*1000
	default:
		return nowMs - int64(opts.MaxWaitTimeSeconds)*1000
	}
}

// Walk is one step's walk over the partitions of window [From, From+Window),
// with MaxID the largest partition id there is.
type Walk[P any] struct {
	From, MaxID int64
	// List returns the partitions of [from, end) the sweep visits, in id
	// order.
	List func(from, end int64) ([]P, error)
	// ID returns p's id.
	ID func(p P) int64
	// Spent reports whether the step's budget has run out.
	Spent func() bool
	// Visit sweeps p within the budget and reports whether p has more to
	// remove.
	Visit func(p P) (more bool, err error)
}

// Run walks the window and returns where the next step starts: the first
// partition left unfinished, else the next window, else 0 (the sweep has
// reached the last partition).
func (w *Walk[P]) Run() (next int64, err error) {
	from := max(w.From, 1)
	if from > w.MaxID {
		return 0, nil // swept everything
	}
	end := from + Window
	parts, err := w.List(from, end)
	if err != nil {
		return 0, err
	}
	for _, p := range parts {
		if w.Spent() {
			return w.ID(p), nil // the budget ran out: the next step starts here
		}
		more, err := w.Visit(p)
		if err != nil {
			return 0, err
		}
		if more {
			return w.ID(p), nil // not finished: the next step starts here
		}
	}
	return After(end, w.MaxID), nil
}

// After returns where the step after window [.., end) starts: end, or 0
// when no partition id is at or above it.
func After(end, maxID int64) int64 {
	if end <= maxID {
		return end
	}
	return 0
}

// IdleNext returns where the idle-partition step after one that removed
// ids (at most limit of them, in any order) from window [.., end) starts:
// past the largest when the step took its limit (the window may hold more),
// else the next window.
func IdleNext(ids []int64, limit int, end, maxID int64) int64 {
	if len(ids) > 0 && len(ids) == limit {
		return slices.Max(ids) + 1
	}
	return After(end, maxID)
}

// Prefix collects the offsets of the oldest messages of a partition, read
// in offset order, as long as they were created before Cutoff and are at
// most Through (0: no bound): at most N of them. An engine reads N+1 rows
// and feeds them to Add until it returns false.
type Prefix struct {
	Cutoff, Through int64
	N               int
	Offsets         []int64
	More            bool // more such messages follow the N taken
}

// Add takes the next message and reports whether reading should go on.
func (p *Prefix) Add(seq, createdAt int64) bool {
	if createdAt >= p.Cutoff || (p.Through > 0 && seq > p.Through) {
		return false // the prefix ends here
	}
	if len(p.Offsets) == p.N {
		p.More = true
		return false
	}
	p.Offsets = append(p.Offsets, seq)
	return true
}
