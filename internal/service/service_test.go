package service

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a Service that records its starts and stops in a shared log.
type recorder struct {
	name    string
	failing bool
	log     *[]string
	mu      *sync.Mutex
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Start(context.Context) error {
	if r.failing {
		return errors.New("boom")
	}
	r.mu.Lock()
	*r.log = append(*r.log, "start "+r.name)
	r.mu.Unlock()
	return nil
}
func (r *recorder) Stop() {
	r.mu.Lock()
	*r.log = append(*r.log, "stop "+r.name)
	r.mu.Unlock()
}

func TestSupervisorOrder(t *testing.T) {
	var log []string
	var mu sync.Mutex
	s := NewSupervisor(nil, &recorder{name: "a", log: &log, mu: &mu}, &recorder{name: "b", log: &log, mu: &mu})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop() // idempotent
	want := []string{"start a", "start b", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Fatalf("got %v, want %v", log, want)
	}
}

func TestSupervisorFailedStartStopsTheStarted(t *testing.T) {
	var log []string
	var mu sync.Mutex
	s := NewSupervisor(nil, &recorder{name: "a", log: &log, mu: &mu},
		&recorder{name: "b", failing: true, log: &log, mu: &mu}, &recorder{name: "c", log: &log, mu: &mu})
	err := s.Start(context.Background())
	if err == nil || err.Error() != "start b: boom" {
		t.Fatalf("Start: %v, want start b: boom", err)
	}
	if want := []string{"start a", "stop a"}; !slices.Equal(log, want) {
		t.Fatalf("got %v, want %v", log, want)
	}
}

// TestLoopKick: a kick runs the function again without waiting for the
// interval, and Stop waits for the run in progress.
func TestLoopKick(t *testing.T) {
	runs := make(chan struct{}, 10)
	l := NewLoop("test", time.Hour, func(ctx context.Context) { runs <- struct{}{} })
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-runs // the run at start
	l.Kick()
	select {
	case <-runs:
	case <-time.After(10 * time.Second):
		t.Fatal("a kick did not run the loop")
	}
	l.Stop()
	l.Stop()
	if err := l.Start(context.Background()); err == nil {
		t.Error("a stopped loop started again")
	}
}

func TestStopBeforeStart(t *testing.T) {
	NewLoop("never", time.Second, func(context.Context) {}).Stop()
	NewFunc("never", func(context.Context) {}).Stop()
}

func TestFuncStopsWithContext(t *testing.T) {
	var ended atomic.Bool
	f := NewFunc("listener", func(ctx context.Context) {
		<-ctx.Done()
		ended.Store(true)
	})
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Stop()
	if !ended.Load() {
		t.Fatal("Stop returned before the function ended")
	}
}

type fakeLocker struct {
	granted  bool
	released int
}

func (f *fakeLocker) JobLockTry(context.Context, string) (func(), bool, error) {
	if !f.granted {
		return nil, false, nil
	}
	return func() { f.released++ }, true, nil
}

func TestExclusive(t *testing.T) {
	ran := 0
	held := &fakeLocker{granted: false}
	Exclusive(held, "job", nil, func(context.Context) { ran++ })(context.Background())
	if ran != 0 {
		t.Fatal("the job ran while another broker held its lock")
	}
	free := &fakeLocker{granted: true}
	Exclusive(free, "job", nil, func(context.Context) { ran++ })(context.Background())
	if ran != 1 || free.released != 1 {
		t.Fatalf("ran %d released %d, want 1 and 1", ran, free.released)
	}
}
