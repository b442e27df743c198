// Package timers holds the rules of timers, messages pushed at a given
// time: scheduling (fireAt or delaySeconds, the horizon, idempotence on
// transactionId), and the timer service that fires due timers through the
// store's push path (same dedup, same wake-ups as a push) within the poll
// interval of their time, one broker at a time on a shared database.
package timers

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Defaults of Config.
const (
	DefaultBatch     = 1000                   // TIMER_BATCH_SIZE
	DefaultKeep      = 7 * 24 * time.Hour     // finished timers are kept this long
	DefaultMaxDelay  = 365 * 24 * time.Hour   // TIMER_MAX_DELAY_SECONDS
	DefaultPollEvery = 250 * time.Millisecond // TIMER_POLL_INTERVAL_MS
	// jobLock is the name of the cluster-wide lock of the timer service.
	jobLock = "timers"
)

// Config configures timers. Zero fields take the defaults.
type Config struct {
	// Batch bounds the timers one fire step pushes.
	Batch int
	// Disabled turns the feature off (QUEEN_TIMERS_ENABLED=false): its routes
	// answer 403 and the timer service does not run.
	Disabled bool
	// Keep is how long fired and cancelled timers stay readable.
	Keep time.Duration
	// Logger receives the service's logs; nil discards them.
	Logger *slog.Logger
	// MaxDelay is the furthest a timer may be scheduled ahead.
	MaxDelay time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// PollEvery is how often a broker that does not fire timers tries to
	// take the service over; the broker that fires them looks when a timer
	// is scheduled (on any broker), at the next due time it knows, and at
	// least every 20 PollEvery.
	PollEvery time.Duration
}

// Broker is what timers need of the message plane.
type Broker interface {
	Notify(keys ...string)
	PrepareTimed(ctx context.Context, c broker.Caller, items []store.PushItem) ([]string, error)
	Pushed(counts []store.PushedCount)
	Unable() string
	Wait(key string) <-chan struct{}
}

// invalidf is a request the rules refuse (HTTP 400).
func invalidf(format string, args ...any) error {
	return api.ErrBadRequest.Withf(format, args...)
}

// Timers serves timers and runs the timer service.
type Timers struct {
	warned time.Time // the service's last warning (run's goroutine only)
	broker Broker
	cfg    Config
	log    *slog.Logger
	store  Store
	firer  *service.Func
	pruner *service.Loop
}

// New returns the timer feature over st.
func New(st Store, b Broker, cfg Config) *Timers {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Timers{broker: b, cfg: cfg, log: log.With("component", "timers"), store: st}
	t.firer = service.NewFunc("timer-fire", t.run)
	t.pruner = service.NewLoop("timer-prune", time.Hour, service.Exclusive(st, "timer-prune", t.log, t.prune))
	return t
}

// Enabled reports whether the feature is on.
func (t *Timers) Enabled() bool { return !t.cfg.Disabled }

// Services returns the timer service and the pruner of finished timers;
// none when the feature is off.
func (t *Timers) Services() []service.Service {
	if t.cfg.Disabled {
		return nil
	}
	return []service.Service{t.firer, t.pruner}
}

// Request is one timer to schedule. Exactly one of FireAt and Delay is set.
type Request struct {
	Delay         *time.Duration
	FireAt        *time.Time
	Partition     string
	Payload       []byte
	Queue         string
	TransactionID string
}

// Scheduled is the outcome of one Request: the timer stored, or the one
// already stored under its transactionId (Duplicate), or Error when it
// cannot be scheduled (an encrypted queue on a broker without a key).
type Scheduled struct {
	Duplicate bool
	Error     string
	Timer     store.Timer
}

// Check applies the rules of Schedule that need no store: exactly one of
// fireAt and delaySeconds, and the horizon.
func (t *Timers) Check(reqs []Request) error {
	now := t.cfg.Now()
	for i, r := range reqs {
		if (r.FireAt == nil) == (r.Delay == nil) {
			return invalidf("items[%d]: exactly one of fireAt and delaySeconds is required", i)
		}
		at := now
		if r.Delay != nil {
			if *r.Delay < 0 {
				return invalidf("items[%d]: delaySeconds must be 0 or more", i)
			}
			at = now.Add(*r.Delay)
		} else {
			at = *r.FireAt
		}
		if at.Sub(now) > t.cfg.MaxDelay {
			return invalidf("items[%d]: fires more than %d seconds ahead (TIMER_MAX_DELAY_SECONDS)", i,
				int64(t.cfg.MaxDelay.Seconds()))
		}
	}
	return nil
}

// Schedule stores timers for the caller. A timer due in the past fires at
// once. A request without a transactionId gets "timer:<id>", the dedup key
// of its message.
func (t *Timers) Schedule(ctx context.Context, c broker.Caller, reqs []Request) ([]Scheduled, error) {
	if err := t.Check(reqs); err != nil {
		return nil, err
	}
	now := t.cfg.Now()
	items := make([]store.TimerItem, len(reqs))
	for i, r := range reqs {
		at := now
		if r.Delay != nil {
			at = now.Add(*r.Delay)
		} else {
			at = *r.FireAt
		}
		id := uuid.Must(uuid.NewV7()).String()
		txn := r.TransactionID
		if txn == "" {
			txn = "timer:" + id
		}
		items[i] = store.TimerItem{ID: id, FireAt: at, Item: store.PushItem{Queue: r.Queue, Partition: r.Partition,
			Payload: r.Payload, TransactionID: txn}}
	}
	plain := make([]store.PushItem, len(items))
	for i := range items {
		plain[i] = items[i].Item
	}
	refused, err := t.broker.PrepareTimed(ctx, c, plain)
	if err != nil {
		return nil, err
	}
	out := make([]Scheduled, len(items))
	send := make([]store.TimerItem, 0, len(items))
	var slot []int
	seen := make(map[[3]string]int)
	dupOf := make([]int, len(items))
	for i := range items {
		dupOf[i] = -1
		items[i].Item = plain[i]
		if refused[i] != "" {
			out[i].Error = refused[i]
			continue
		}
		k := [3]string{plain[i].Queue, plain[i].Partition, plain[i].TransactionID}
		if j, ok := seen[k]; ok { // a repeat within the request: the first wins
			dupOf[i] = j
			continue
		}
		seen[k] = i
		send = append(send, items[i])
		slot = append(slot, i)
	}
	if len(send) > 0 {
		res, err := t.store.TimerSchedule(ctx, &store.TimerScheduleParams{Items: send, Tenant: c.Tenant, Now: now})
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			out[slot[j]] = Scheduled{Duplicate: r.Duplicate, Timer: r.Timer}
		}
	}
	for i, j := range dupOf {
		if j >= 0 {
			out[i] = Scheduled{Duplicate: true, Timer: out[j].Timer, Error: out[j].Error}
		}
	}
	t.broker.Notify(store.TimerWakeKey) // the local timer service looks again
	return out, nil
}

// Get returns one of the tenant's timers.
func (t *Timers) Get(ctx context.Context, tenant, id string) (*store.Timer, error) {
	return t.store.TimerGet(ctx, &store.TimerGetParams{Tenant: tenant, ID: id})
}

// List returns a page of the tenant's timers.
func (t *Timers) List(ctx context.Context, p *store.TimerListParams) (*store.TimerListResult, error) {
	switch p.Status {
	case "", store.TimerScheduled, store.TimerFired, store.TimerCancelled, store.TimerFailed:
	default:
		return nil, invalidf("status must be scheduled, fired, cancelled or failed")
	}
	return t.store.TimerList(ctx, p)
}

// Cancel cancels a scheduled timer; store.ErrTimerFired once it fired.
func (t *Timers) Cancel(ctx context.Context, tenant, id string) (*store.Timer, error) {
	return t.store.TimerCancel(ctx, &store.TimerCancelParams{Tenant: tenant, ID: id, Now: t.cfg.Now()})
}

// run is the timer service: it fires what is due, then waits for the
// earliest of the next due time it knows, a schedule (on any broker), and
// the poll interval. The fire runs only while this broker holds the
// service's cluster-wide lock; a broker that does not hold it keeps
// looking every poll interval, and takes over when the holder dies. A fire
// is one store transaction (messages and status change together), so a
// crash at any point neither loses a fire nor repeats one.
func (t *Timers) run(ctx context.Context) {
	for ctx.Err() == nil {
		wake := t.broker.Wait(store.TimerWakeKey)
		next, held := t.fireDue(ctx)
		wait := t.cfg.PollEvery
		if held {
			// The holder learns of every schedule (a wake-up from any
			// broker) and knows the next due time: looking every poll
			// interval on top would cost the database a few statements a
			// second for nothing. It still looks now and then, in case a
			// wake-up was lost.
			wait = holderIdle * t.cfg.PollEvery
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(t.cfg.Now()), 0))
		}
		tm := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-tm.C:
		}
		tm.Stop()
	}
}

// holderIdle is how many poll intervals the broker that fires timers waits
// between looks when no schedule wakes it and nothing is due sooner.
const holderIdle = 20

// fireDue fires every due timer, in steps of cfg.Batch, and returns the
// next due time (zero when unknown) and whether this broker fired (held the
// service's lock and found the store usable), so that it hears of every
// schedule and need not poll.
func (t *Timers) fireDue(ctx context.Context) (time.Time, bool) {
	if t.broker.Unable() != "" {
		return time.Time{}, false // push maintenance or an outage: timers wait, nothing is lost
	}
	release, ok, err := t.store.JobLockTry(ctx, jobLock)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			t.warn("timer lock failed", err)
		}
		return time.Time{}, false
	}
	defer release()
	for ctx.Err() == nil {
		res, err := t.store.TimerFireDue(ctx, &store.TimerFireDueParams{Limit: t.cfg.Batch, Now: t.cfg.Now()})
		if err != nil {
			if ctx.Err() == nil {
				t.warn("timer fire failed", err)
			}
			return time.Time{}, false
		}
		t.broker.Pushed(res.Pushed)
		for _, f := range res.Fired {
			if f.Timer.Status == store.TimerFailed {
				t.log.Warn("timer not delivered", "timer", f.Timer.ID, "queue", f.Timer.Queue, "err", f.Timer.Error)
			}
		}
		if len(res.Fired) < t.cfg.Batch {
			break
		}
	}
	next, ok, err := t.store.TimerNext(ctx, &store.TimerNextParams{Now: t.cfg.Now()})
	if err != nil {
		return time.Time{}, false
	}
	if !ok {
		return time.Time{}, true // none scheduled
	}
	return next, true
}

// warn logs a failure of the service at most every 10 s: it retries every
// poll interval, and an outage must not flood the log.
func (t *Timers) warn(msg string, err error) {
	if now := time.Now(); now.Sub(t.warned) >= 10*time.Second {
		t.warned = now
		t.log.Warn(msg, "err", err)
	}
}

// prune deletes timers that finished more than cfg.Keep ago.
func (t *Timers) prune(ctx context.Context) {
	now := t.cfg.Now()
	for ctx.Err() == nil {
		n, err := t.store.TimerPrune(ctx, &store.TimerPruneParams{Before: now.Add(-t.cfg.Keep), Limit: DefaultBatch, Now: now})
		if err != nil || n < DefaultBatch {
			return
		}
	}
}
