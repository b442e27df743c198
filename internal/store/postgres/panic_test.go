package postgres

import (
	"context"
	"strings"
	"testing"
)

// A transaction whose function panics is rolled back on the way up: once
// the panic is recovered above (a handler's recovery), the connection is
// back in the pool and the transaction's locks are free.
func TestTransactionThatPanicsRollsBackOnTheWayUp(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	func() {
		defer func() {
			if v := recover(); v == nil {
				t.Fatal("the panic did not go on up")
			}
		}()
		_ = s.runTx(ctx, "probe", durable, func(tx *txn) error {
			if _, err := tx.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(2929)`); err != nil {
				return err
			}
			panic("probe exploded")
		})
	}()
	if n := s.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still checked out after the panic, want 0", n)
	}
	var free bool
	if err := s.pool.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(2929)`).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if !free {
		t.Fatal("the lock of the transaction that panicked is still held")
	}
}

// A merged push flush that panics fails its calls with an error instead of
// stopping the process (a flush runs on a goroutine of its own).
func TestPushFlushThatPanicsFailsItsCalls(t *testing.T) {
	s := newTestStore(t)
	c := &pushCall{ctx: context.Background(), done: make(chan struct{})} // no params: the flush panics on them
	s.pushes.slots <- struct{}{}                                         // the slot flush gives back
	s.pushes.flush([]*pushCall{c})
	<-c.done
	if c.err == nil || !strings.Contains(c.err.Error(), "panicked") {
		t.Fatalf("a push whose flush panics: %v, want its error", c.err)
	}
}
