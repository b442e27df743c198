package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/storetest"
)

// TestJobLockOneBrokerAtATime: two brokers on one schema never hold a job's
// lock together; the other takes it once it is released, and brokers on
// another schema, or other jobs, are not affected.
func TestJobLockOneBrokerAtATime(t *testing.T) {
	testURL(t)
	ctx := context.Background()
	schema := newSchema(t)
	a, b := openStore(t, schema, 4), openStore(t, schema, 4)
	other := openStore(t, newSchema(t), 4)

	release, ok, err := a.JobLockTry(ctx, "queue-purge")
	if err != nil || !ok {
		t.Fatalf("broker A: acquired %v err %v, want the free lock", ok, err)
	}
	if _, ok, err := b.JobLockTry(ctx, "queue-purge"); err != nil || ok {
		t.Fatalf("broker B while A holds it: acquired %v err %v, want false", ok, err)
	}
	relB, ok, err := b.JobLockTry(ctx, "another-job")
	if err != nil || !ok {
		t.Fatalf("broker B, another job: acquired %v err %v, want true", ok, err)
	}
	relB()
	relO, ok, err := other.JobLockTry(ctx, "queue-purge")
	if err != nil || !ok {
		t.Fatalf("a broker on another schema: acquired %v err %v, want true", ok, err)
	}
	relO()
	release()
	relB, ok, err = b.JobLockTry(ctx, "queue-purge")
	if err != nil || !ok {
		t.Fatalf("broker B after A released: acquired %v err %v, want true", ok, err)
	}
	relB()
}

// TestJobLocksLeaveThePoolAlone: jobs holding their locks while they run
// transactions must not take the pool's connections. With DB_POOL_SIZE's
// minimum of 2 (one of them the LISTEN connection's share), three jobs
// holding locks at once still leave pushes and pops their connections.
func TestJobLocksLeaveThePoolAlone(t *testing.T) {
	testURL(t)
	s := openStore(t, newSchema(t), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, job := range []string{"queue-purge", "retention", "eviction"} {
		release, ok, err := s.JobLockTry(ctx, job)
		if err != nil || !ok {
			t.Fatalf("%s: acquired %v err %v", job, ok, err)
		}
		defer release()
	}
	items := []store.PushItem{storetest.Item("q", "p", 0)}
	if _, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()}); err != nil {
		t.Fatalf("push while three jobs hold their locks: %v", err)
	}
	res, err := s.LanePop(ctx, storetest.PopParams("q", store.QueueMode, time.Now()))
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop while three jobs hold their locks: %v %v", res, err)
	}
}
