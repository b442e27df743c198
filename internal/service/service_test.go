package service

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testlog"
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

type wrapper struct{ f *Func }

func (w wrapper) Name() string                    { return "wrapper" }
func (w wrapper) Start(ctx context.Context) error { return w.f.Start(ctx) }
func (w wrapper) Stop()                           { w.f.Stop() }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServiceThatPanicsIsRestartedAndKeepsWorking(t *testing.T) {
	for _, kind := range []string{"loop", "func", "wrapped"} {
		t.Run(kind, func(t *testing.T) {
			var out testlog.Buffer
			log := slog.New(slog.NewTextHandler(&out, nil))
			var runs atomic.Int32
			step := func(ctx context.Context) {
				if n := runs.Add(1); n == 1 {
					var none []int
					none[n]++ // a real runtime panic: index out of range
				}
			}
			var svc Service
			switch kind {
			case "loop":
				svc = NewLoop("panicky", time.Hour, step)
			case "func":
				svc = NewFunc("panicky", func(ctx context.Context) { step(ctx); <-ctx.Done() })
			default:
				// A service of its own that starts a loop (as the metrics
				// sampler does) logs through the supervisor too.
				svc = wrapper{NewFunc("panicky", func(ctx context.Context) { step(ctx); <-ctx.Done() })}
			}
			s := NewSupervisor(log, svc)
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			waitFor(t, "the service ran again after its panic", func() bool { return runs.Load() >= 2 })
			if l, ok := svc.(*Loop); ok {
				l.Kick() // and it keeps working: the loop takes kicks
				waitFor(t, "the restarted loop ran on a kick", func() bool { return runs.Load() >= 3 })
			}
			logged := out.String()
			for _, want := range []string{"panic recovered", "service=panicky", "index out of range",
				"service_test.go", "service restarting after a panic"} {
				if !strings.Contains(logged, want) {
					t.Errorf("log lacks %q:\n%s", want, logged)
				}
			}
		})
	}
}

func TestRestartsBackOffSoAPanicLoopDoesNotSpin(t *testing.T) {
	var waits []time.Duration
	runs := 0
	supervise(context.Background(), slog.New(slog.DiscardHandler), "always", func(context.Context) {
		runs++
		panic("always")
	}, func(_ context.Context, d time.Duration) bool {
		waits = append(waits, d)
		return len(waits) < 12
	})
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
		12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(waits, want) || runs != 12 {
		t.Fatalf("%d runs, waits %v; want 12 runs and waits %v", runs, waits, want)
	}
}

func TestStopEndsTheBackoffOfAPanickedService(t *testing.T) {
	var runs atomic.Int32
	f := NewFunc("always", func(context.Context) { runs.Add(1); panic("always") })
	ctx := context.WithValue(context.Background(), loggerKey{}, slog.New(slog.DiscardHandler))
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the service ran", func() bool { return runs.Load() >= 1 })
	f.Stop() // returns although the service waits to restart
}
