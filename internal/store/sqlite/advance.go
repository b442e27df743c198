package sqlite

import (
	"database/sql"
	"fmt"
)

// advance is a partition a push moved forward: its new last offset and the
// time of its newest message.
type advance struct {
	id, last, atMs int64
}

// advances gathers the partitions the plain pushes of one commit moved
// forward, so that each partition's row and lanes are written once per
// commit instead of once per push: with many small pushes from concurrent
// clients merged into one transaction (the writer's group commit), those
// two statements per partition per request were most of a small push's
// cost. Owned by the writer goroutine.
//
// Deferring is safe because nothing in the commit depends on the partition
// row being current before it ends: a pop of the same commit that runs
// between the push and the flush sees the partition as it was (as if it had
// run first), and the flush marks the lanes ready afterwards; the wake-ups go
// out after the commit. Pushes to capped queues, and pushes inside other
// jobs (transactions, timers, stream cycles, requeues), still write at once:
// they read the partition back within the job.
type advances struct {
	job    []advance // the running job's, merged into commit when it succeeds
	slot   map[int64]int
	commit []advance
}

func newAdvances() *advances { return &advances{slot: make(map[int64]int)} }

// startJob forgets what a previous (failed) job recorded.
func (a *advances) startJob() { a.job = a.job[:0] }

// jobDone keeps what the job recorded for the commit.
func (a *advances) jobDone() {
	for _, x := range a.job {
		if i, ok := a.slot[x.id]; ok {
			a.commit[i].last = max(a.commit[i].last, x.last)
			a.commit[i].atMs = max(a.commit[i].atMs, x.atMs)
			continue
		}
		a.slot[x.id] = len(a.commit)
		a.commit = append(a.commit, x)
	}
	a.job = a.job[:0]
}

// flush writes the commit's partitions and lanes in tx and forgets them.
func (a *advances) flush(t *txn) error {
	defer a.reset()
	for _, x := range a.commit {
		if err := t.advancePartition(x); err != nil {
			return err
		}
	}
	return nil
}

// reset forgets everything (after a flush or a failed commit).
func (a *advances) reset() {
	a.job, a.commit = a.job[:0], a.commit[:0]
	clear(a.slot)
}

// advancePartition moves a partition's last offset forward and marks its
// lanes ready.
func (t *txn) advancePartition(a advance) error {
	if _, err := t.exec(sqlPartitionAdvance, a.last, a.atMs, a.id); err != nil {
		return fmt.Errorf("advance partition: %w", err)
	}
	if _, err := t.exec(sqlLanesMarkReady, a.id); err != nil {
		return fmt.Errorf("mark lanes ready: %w", err)
	}
	return nil
}

// deferredTxn is txn for a plain push job: its partition advances wait for
// the end of the commit.
func (s *Store) deferredTxn(tx *sql.Tx) *txn {
	t := s.txn(tx)
	t.deferred = s.advances
	return t
}
