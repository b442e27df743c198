package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// laneWrites collects what a pop or an ack writes, so that it goes out as
// one pipelined batch of array statements whatever the number of lanes.
type laneWrites struct {
	// lane rows to save
	pid, cursor, exp, batchEnd, claimedAt, retryAt []int64
	group, leaseID                                 []string
	attempts                                       []int32
	// dead letters
	dlPid, dlSeq, dlAt []int64
	dlGroup, dlErr     []string
	dlAttempts         []int32
	// lanes whose cursor reached their partition's last offset
	settlePid   []int64
	settleGroup []string
	// queues whose consumers should be woken (a lease was released), one
	// count per released lane
	wake []store.Wake
}

func (w *laneWrites) save(pid int64, group string, st *lane.State, claimedAt int64) {
	w.pid = append(w.pid, pid)
	w.group = append(w.group, group)
	w.cursor = append(w.cursor, st.Cursor)
	w.leaseID = append(w.leaseID, st.LeaseID)
	w.exp = append(w.exp, st.LeaseExpiresAt)
	w.batchEnd = append(w.batchEnd, st.BatchEnd)
	w.attempts = append(w.attempts, int32(st.HeadAttempts))
	w.claimedAt = append(w.claimedAt, claimedAt)
	w.retryAt = append(w.retryAt, st.RetryAt)
}

func (w *laneWrites) deadLetter(pid int64, group string, dl *lane.DeadLetter, nowMs int64) {
	w.dlPid = append(w.dlPid, pid)
	w.dlSeq = append(w.dlSeq, dl.Offset)
	w.dlGroup = append(w.dlGroup, group)
	w.dlErr = append(w.dlErr, dl.Error)
	w.dlAttempts = append(w.dlAttempts, int32(dl.Attempts))
	w.dlAt = append(w.dlAt, nowMs)
}

func (w *laneWrites) settle(pid int64, group string) {
	w.settlePid = append(w.settlePid, pid)
	w.settleGroup = append(w.settleGroup, group)
}

func (w *laneWrites) wakeQueue(name string) {
	w.wake = mergeWakes(w.wake, store.Wake{Key: name, Count: 1})
}

// writeLanes sends the collected writes in one round trip, or, in a
// relaxed transaction, queues them to go out with COMMIT. The lanes must
// already be locked by this transaction, and nothing the transaction does
// afterwards may depend on the writes.
func (t *txn) writeLanes(w *laneWrites) error {
	b := &pgx.Batch{}
	if len(w.pid) > 0 {
		b.Queue(sqlLanesSave, w.pid, w.group, w.cursor, w.leaseID, w.exp, w.batchEnd, w.attempts, w.claimedAt,
			w.retryAt)
	}
	if len(w.dlPid) > 0 {
		b.Queue(sqlDeadLettersInsert, w.dlPid, w.dlSeq, w.dlGroup, w.dlErr, w.dlAttempts, w.dlAt)
	}
	if len(w.settlePid) > 0 {
		b.Queue(sqlLanesSettle, w.settlePid, w.settleGroup)
	}
	t.wakeAfterCommit(w.wake...)
	if t.deferWrites {
		// They go out with COMMIT (see tryTx); their errors surface there.
		t.final.QueuedQueries = append(t.final.QueuedQueries, b.QueuedQueries...)
		return nil
	}
	if err := t.execBatch(b); err != nil {
		return fmt.Errorf("write lanes: %w", err)
	}
	return nil
}
