// Package service gives the broker's background work one lifecycle: every
// job (settings sync, spool replay, the wake-up listener, purges, and every
// later sweeper or timer) is a Service with Start and Stop, started in order
// and stopped in reverse by one Supervisor. Constructors only build: nothing
// runs until Start.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Service is a long-lived background component.
type Service interface {
	// Name identifies the service in logs.
	Name() string
	// Start launches the service's work and returns at once. The work runs
	// until Stop (or until ctx ends).
	Start(ctx context.Context) error
	// Stop ends the work and waits for it. It is idempotent, and safe to call
	// on a service that never started.
	Stop()
}

// Supervisor starts services in order and stops them in reverse.
type Supervisor struct {
	log      *slog.Logger
	services []Service

	mu      sync.Mutex
	started []Service
}

// NewSupervisor returns a supervisor of services; log may be nil.
func NewSupervisor(log *slog.Logger, services ...Service) *Supervisor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Supervisor{log: log, services: services}
}

// Start starts every service in order. If one fails, those already started
// are stopped and the error is returned.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.started) > 0 {
		return errors.New("service: supervisor already started")
	}
	// Loops and funcs started under ctx, those a service wraps included,
	// log their panics and restarts here.
	ctx = context.WithValue(ctx, loggerKey{}, s.log)
	for _, svc := range s.services {
		if err := svc.Start(ctx); err != nil {
			for i := len(s.started) - 1; i >= 0; i-- {
				s.started[i].Stop()
			}
			s.started = nil
			return fmt.Errorf("start %s: %w", svc.Name(), err)
		}
		s.started = append(s.started, svc)
		s.log.Debug("service started", "service", svc.Name())
	}
	return nil
}

// Stop stops the started services in reverse order and waits for each.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.started) - 1; i >= 0; i-- {
		s.started[i].Stop()
		s.log.Debug("service stopped", "service", s.started[i].Name())
	}
	s.started = nil
}

// loggerKey carries the supervisor's logger in the context it starts
// services with.
type loggerKey struct{}

// loggerOf is the logger of the supervisor that started ctx's service; a
// service started outside one (a test, a tool) still reports its panics,
// to slog's default logger.
func loggerOf(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// runner is the start/stop plumbing shared by Loop and Func: one goroutine,
// cancelled and awaited by Stop, which restarts the work after a panic.
type runner struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

func (r *runner) start(ctx context.Context, name string, run func(ctx context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil || r.stopped {
		return errors.New("service: started twice")
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	log := loggerOf(ctx)
	go func() {
		defer close(r.done)
		Supervise(ctx, log, name, run)
	}()
	return nil
}

// Restart backoff after a panic: from restartMin, doubled on every panic
// that follows a short run, up to restartMax; a run that lasted longer than
// restartMax starts the sequence again.
const (
	restartMin = 100 * time.Millisecond
	restartMax = 30 * time.Second
)

// Supervise runs fn(ctx) until it returns without panicking or ctx ends.
// A panic is logged with name and its stack, and fn runs again after a
// backoff, so that one bad input or state takes down one job for a while,
// not the process for every tenant, and a panic loop does not spin.
func Supervise(ctx context.Context, log *slog.Logger, name string, fn func(ctx context.Context)) {
	supervise(ctx, log, name, fn, pause)
}

// pause waits d or until ctx ends, and reports whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func supervise(ctx context.Context, log *slog.Logger, name string, fn func(ctx context.Context),
	wait func(ctx context.Context, d time.Duration) bool) {
	backoff := restartMin
	for {
		began := time.Now()
		if !Protect(log, name, func() { fn(ctx) }) || ctx.Err() != nil {
			return
		}
		if time.Since(began) > restartMax {
			backoff = restartMin
		}
		log.Warn("service restarting after a panic", "service", name, "in", backoff)
		if !wait(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, restartMax)
	}
}

// Protect runs fn and reports whether it panicked; a panic is recovered and
// logged at error level with name (the service or goroutine) and the stack.
// Goroutines that are not services (a worker, a fetch) use it to fail one
// piece of work instead of the process.
func Protect(log *slog.Logger, name string, fn func()) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			log.Error("panic recovered", "service", name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	fn()
	return false
}

func (r *runner) stop() {
	r.mu.Lock()
	r.stopped = true
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Loop is a Service that runs a function every interval and whenever it is
// kicked, one run at a time, until stopped.
type Loop struct {
	name  string
	every time.Duration
	fn    func(ctx context.Context)
	kick  chan struct{}
	run   runner
}

// NewLoop returns a loop that runs fn once at start, then every `every` and
// after each Kick. fn must return promptly once ctx ends. A panic in fn is
// logged and the loop starts again after a backoff (see Supervise).
func NewLoop(name string, every time.Duration, fn func(ctx context.Context)) *Loop {
	return &Loop{name: name, every: every, fn: fn, kick: make(chan struct{}, 1)}
}

// Name implements Service.
func (l *Loop) Name() string { return l.name }

// Kick asks for a run as soon as the current one (if any) ends. It never
// blocks, and kicks during a run collapse into one more run.
func (l *Loop) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Start implements Service.
func (l *Loop) Start(ctx context.Context) error {
	return l.run.start(ctx, l.name, func(ctx context.Context) {
		tick := time.NewTicker(l.every)
		defer tick.Stop()
		for {
			l.fn(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-l.kick:
			}
		}
	})
}

// Stop implements Service.
func (l *Loop) Stop() { l.run.stop() }

// Func is a Service that runs one long function until it returns or the
// service stops.
type Func struct {
	name string
	fn   func(ctx context.Context)
	run  runner
}

// NewFunc returns a service running fn(ctx) once; fn must return when ctx
// ends. A panic in fn is logged and fn runs again after a backoff (see
// Supervise).
func NewFunc(name string, fn func(ctx context.Context)) *Func {
	return &Func{name: name, fn: fn}
}

// Name implements Service.
func (f *Func) Name() string { return f.name }

// Start implements Service.
func (f *Func) Start(ctx context.Context) error { return f.run.start(ctx, f.name, f.fn) }

// Stop implements Service.
func (f *Func) Stop() { f.run.stop() }

// JobLocker grants the cluster-wide lock of a background job (store.Store
// implements it: an advisory lock on PostgreSQL, always granted on the
// embedded engine).
type JobLocker interface {
	JobLockTry(ctx context.Context, name string) (release func(), acquired bool, err error)
}

// Exclusive wraps fn so that it runs only while this broker holds the job's
// cluster-wide lock: on a database shared by several brokers, one of them
// runs each job at a time, and another takes over when it dies. A run that
// cannot take the lock is skipped.
func Exclusive(locker JobLocker, job string, log *slog.Logger, fn func(ctx context.Context)) func(ctx context.Context) {
	return func(ctx context.Context) {
		release, ok, err := locker.JobLockTry(ctx, job)
		if err != nil {
			if ctx.Err() == nil && log != nil {
				log.Debug("job lock unavailable", "job", job, "err", err)
			}
			return
		}
		if !ok {
			return
		}
		defer release()
		fn(ctx)
	}
}
