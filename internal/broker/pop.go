package broker

import (
	"context"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Subscription modes a pop can ask for on a group's first join.
const (
	SubscribeAll       = "all"
	SubscribeNew       = "new"
	SubscribeTimestamp = "timestamp"
)

// MaxBatch caps how many messages one pop returns.
const MaxBatch = 10000

// PopRequest is one pop. Queue (optionally with Partition) or at least one of
// Namespace and Task selects the lanes.
type PopRequest struct {
	AutoAck          bool
	Batch            int
	ConsumerGroup    string
	Namespace        string
	Partition        string
	Partitions       int
	Queue            string
	SubscriptionFrom time.Time // with SubscriptionMode timestamp
	SubscriptionMode string    // "", all, new or timestamp
	Task             string
	Timeout          time.Duration // long-poll deadline when Wait
	Wait             bool
}

// PopResponse is a non-empty pop. LeaseID is "" for autoAck pops.
type PopResponse struct {
	ConsumerGroup string
	LeaseID       string
	Messages      []store.Message
}

// Pop delivers messages, or returns nil when there are none. With Wait it
// parks until a push wakes it, the timeout passes, the client goes away or
// the broker stops; none of those is an error.
func (b *Broker) Pop(ctx context.Context, c Caller, req PopRequest) (*PopResponse, error) {
	res, w, err := b.StartPop(ctx, c, req)
	if w == nil {
		return res, err
	}
	return w.Wait(ctx)
}

// StartPop is Pop up to the point where a long poll would sleep: it returns
// the answer, or, for a long poll that found nothing, a Parked poll that the
// caller must Wait on. Waiting may happen on another goroutine than the
// start, with another context (the HTTP layer parks a poll on a fresh
// goroutine, away from the request's deep stack).
func (b *Broker) StartPop(ctx context.Context, c Caller, req PopRequest) (*PopResponse, *Parked, error) {
	if req.Queue == "" && req.Namespace == "" && req.Task == "" {
		return nil, nil, invalidf("namespace or task is required")
	}
	pp := &Parked{b: b, req: req, p: store.LanePopParams{
		AutoAck:       req.AutoAck,
		Batch:         min(max(req.Batch, 1), MaxBatch),
		ConsumerGroup: req.ConsumerGroup,
		Namespace:     req.Namespace,
		Partition:     req.Partition,
		Partitions:    max(req.Partitions, 1),
		Queue:         req.Queue,
		Task:          req.Task,
		Tenant:        c.tenant(),
	}}
	p := &pp.p
	if p.ConsumerGroup == "" {
		p.ConsumerGroup = store.QueueMode
	}
	if !p.AutoAck {
		p.LeaseID = newID()
	}
	pp.key = anyQueue
	if req.Queue != "" {
		pp.key = store.QueueKey(p.Tenant, req.Queue)
	}
	pp.deadline = b.now().Add(req.Timeout)
	if req.Wait {
		pp.w = b.hub.join(pp.key, p.ConsumerGroup, req.Partition != "")
	}
	res, sleep, err := pp.look(ctx)
	if !sleep {
		pp.leave()
		return res, nil, err
	}
	return nil, pp, nil
}

// Parked is a long poll that found nothing and sleeps until a wake-up, its
// timeout, its client going away or the broker stopping. Its owner calls
// Wait exactly once.
type Parked struct {
	b        *Broker
	req      PopRequest
	p        store.LanePopParams
	key      string
	deadline time.Time
	w        *waiter
	timer    *time.Timer
	step     time.Duration // how long the next sleep lasts at most
	cause    wakeCause     // why the poll last woke; 0 when it was not woken
	backoff  time.Duration // re-poll step while the store says a lane is ready but the pop got none
	// pass hands a wake-up on when the poll leaves: it took one and left
	// before looking (its client went away mid-look), or a deadline woke it
	// and it found messages (more may be due, and the next poll must learn
	// the next deadline).
	pass   bool
	parked bool // counted in the parked gauge
	left   bool // off the hub for good
}

// The methods below let a caller wait without a goroutine blocked in Wait:
// it sleeps at most Sleep, or until the function given to Notify is called,
// then calls Look, until Look answers; or it calls Leave.

// Notify has f called whenever the poll is woken (a wake-up, the broker
// stopping), until it leaves. f runs on the waker's goroutine with the
// broker's hub locked: it must be quick, must not block and must not call
// the broker (interrupting a read, for instance).
func (pp *Parked) Notify(f func()) { pp.b.hub.setNotify(pp.w, f) }

// Sleep is how long the poll may sleep before it must look again.
func (pp *Parked) Sleep() time.Duration { return pp.step }

// Due reports whether the poll must look now: it holds a wake-up, or the
// broker stops. Check it after arming a sleep and before sleeping, since a
// wake-up may have come while the poll looked.
func (pp *Parked) Due() bool {
	if len(pp.w.ch) > 0 {
		return true
	}
	select {
	case <-pp.b.stopping:
		return true
	default:
		return false
	}
}

// Look takes the wake-up the poll holds, if any, and looks at the store
// again. It returns the answer (messages, or nil when the timeout passed or
// the broker stops), after which the poll has left; or sleep true.
func (pp *Parked) Look(ctx context.Context) (res *PopResponse, sleep bool, err error) {
	select {
	case pp.cause = <-pp.w.ch:
		pp.b.metrics.PopWakeups.WithLabelValues(pp.cause.String()).Inc()
	default:
	}
	res, sleep, err = pp.look(ctx)
	if !sleep {
		pp.leave()
	}
	return res, sleep, err
}

// Leave ends the poll without an answer (its client went away); a wake-up
// it holds goes to the next poll.
func (pp *Parked) Leave() { pp.leave() }

// Wait sleeps and looks again until the poll has an answer: messages, or
// nil when its timeout passed, ctx ended (the client left) or the broker
// stops.
func (pp *Parked) Wait(ctx context.Context) (*PopResponse, error) {
	defer pp.leave()
	b := pp.b
	for {
		if pp.timer == nil {
			pp.timer = time.NewTimer(pp.step)
		} else {
			pp.timer.Reset(pp.step)
		}
		select {
		case pp.cause = <-pp.w.ch:
			b.metrics.PopWakeups.WithLabelValues(pp.cause.String()).Inc()
		case <-pp.timer.C:
		case <-ctx.Done():
			return nil, nil
		case <-b.stopping:
			return nil, nil
		}
		res, sleep, err := pp.look(ctx)
		if !sleep {
			return res, err
		}
	}
}

// leave takes the poll off the hub, handing on a wake-up it owes.
func (pp *Parked) leave() {
	if pp.left {
		return
	}
	pp.left = true
	if pp.timer != nil {
		pp.timer.Stop()
	}
	if pp.w != nil {
		pp.b.hub.leave(pp.w, pp.pass)
	}
	if pp.parked {
		pp.b.metrics.Parked(pp.p.Tenant, pp.req.Queue, -1)
	}
}

// look is one look at the store. It returns the answer (sleep false), or
// sleep true with pp.step set when the poll must sleep and look again.
func (pp *Parked) look(ctx context.Context) (res *PopResponse, sleep bool, err error) {
	b, p, req := pp.b, &pp.p, pp.req
	if b.popMaintenance.Load() {
		return nil, false, nil
	}
	select {
	case <-b.stopping:
		return nil, false, nil
	default:
	}
	if pp.w != nil {
		b.hub.park(pp.w)
	}
	woke := pp.cause
	pp.cause = 0
	pp.pass = woke != 0 // owed to the others until the look is done
	if pp.parked {
		b.metrics.PopRechecks.Inc()
	}
	p.Now = b.now()
	b.subscribe(p, req)
	got, err := b.store.LanePop(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, nil // the client left; nothing was claimed
		}
		return nil, false, err
	}
	if len(got.Messages) > 0 {
		if pp.key != anyQueue && !got.LeaseExpiresAt.IsZero() {
			// Should the lease be neither acknowledged nor extended,
			// the polls of the group must look again when it expires.
			b.hub.deadline(pp.key, p.ConsumerGroup, got.LeaseExpiresAt)
		}
		pp.pass = woke == wokenByDeadline
		b.openPayloads(p.Tenant, got.Messages) // encryption at rest (encrypt.go)
		b.metrics.Popped(p.Tenant, got.Messages, p.Now)
		return &PopResponse{ConsumerGroup: p.ConsumerGroup, LeaseID: p.LeaseID, Messages: got.Messages}, false, nil
	}
	pp.pass = false
	remaining := pp.deadline.Sub(b.now())
	if !req.Wait || remaining <= 0 {
		b.metrics.PopEmpty(p.Tenant, req.Queue)
		return nil, false, nil
	}
	step := min(remaining, b.safetyPoll)
	if pp.key == anyQueue {
		// A namespace/task poll cannot ask for its deadlines (they are
		// per queue): it keeps looking every PollFallback.
		step = min(step, b.fallback)
	} else {
		if pp.backoff, err = b.nextDeadline(ctx, p, pp.backoff); err != nil {
			if ctx.Err() != nil {
				return nil, false, nil
			}
			return nil, false, err
		}
		if pp.backoff > 0 {
			step = min(step, pp.backoff)
		}
	}
	if !pp.parked {
		// Counted once it sleeps: its deadline is known.
		pp.parked = true
		b.metrics.Parked(p.Tenant, req.Queue, 1)
	}
	pp.step = step
	return nil, true, nil
}

// nextDeadline asks the store when a lane of the poll's queue may next
// become poppable without a push and records it with the hub, so that the
// oldest poll of the group looks again then. When the store says a lane is
// poppable already (the pop raced with another transaction holding it), it
// returns how long to wait before looking again: backoff doubled, from 10ms
// up to PollFallback; otherwise 0.
func (b *Broker) nextDeadline(ctx context.Context, p *store.LanePopParams, backoff time.Duration) (time.Duration, error) {
	at, err := b.store.LaneNextReady(ctx, p)
	if err != nil {
		return 0, err
	}
	if at.IsZero() {
		return 0, nil
	}
	if at.After(p.Now) {
		b.hub.deadline(store.QueueKey(p.Tenant, p.Queue), p.ConsumerGroup, at)
		return 0, nil
	}
	return min(max(2*backoff, 10*time.Millisecond), b.fallback), nil
}

// subscribe sets where a consumer group starts if this pop is its first.
func (b *Broker) subscribe(p *store.LanePopParams, req PopRequest) {
	switch req.SubscriptionMode {
	case SubscribeNew:
		p.Subscription = store.Subscription{Mode: store.SubscribeFrom, From: p.Now}
	case SubscribeTimestamp:
		p.Subscription = store.Subscription{Mode: store.SubscribeFrom, From: req.SubscriptionFrom}
	default:
		p.Subscription = store.Subscription{Mode: store.SubscribeAll}
	}
}
