package postgres

import (
	"context"
	"testing"
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
