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
	if req.Queue == "" && req.Namespace == "" && req.Task == "" {
		return nil, invalidf("namespace or task is required")
	}
	p := &store.LanePopParams{
		AutoAck:       req.AutoAck,
		Batch:         min(max(req.Batch, 1), MaxBatch),
		ConsumerGroup: req.ConsumerGroup,
		Namespace:     req.Namespace,
		Partition:     req.Partition,
		Partitions:    max(req.Partitions, 1),
		Queue:         req.Queue,
		Task:          req.Task,
		Tenant:        c.tenant(),
	}
	if p.ConsumerGroup == "" {
		p.ConsumerGroup = store.QueueMode
	}
	if !p.AutoAck {
		p.LeaseID = newID()
	}
	key := anyQueue
	if req.Queue != "" {
		key = store.QueueKey(p.Tenant, req.Queue)
	}
	deadline := b.now().Add(req.Timeout)
	var (
		w       *waiter
		timer   *time.Timer
		cause   wakeCause     // why the poll last woke; 0 when it was not woken
		backoff time.Duration // re-poll step while the store says a lane is ready but the pop got none
	)
	if req.Wait {
		w = b.hub.join(key, p.ConsumerGroup, req.Partition != "")
	}
	// pass hands a wake-up on when the poll leaves: it took one and left
	// before looking (its client went away mid-look), or a deadline woke it
	// and it found messages (more may be due, and the next poll must learn
	// the next deadline).
	pass := false
	parked := false // counted in the parked gauge
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if w != nil {
			b.hub.leave(w, pass)
		}
		if parked {
			b.metrics.Parked(p.Tenant, req.Queue, -1)
		}
	}()
	for {
		if b.popMaintenance.Load() {
			return nil, nil
		}
		select {
		case <-b.stopping:
			return nil, nil
		default:
		}
		if w != nil {
			b.hub.park(w)
		}
		woke := cause
		cause = 0
		pass = woke != 0 // owed to the others until the look is done
		if parked {
			b.metrics.PopRechecks.Inc()
		}
		p.Now = b.now()
		b.subscribe(p, req)
		res, err := b.store.LanePop(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil // the client left; nothing was claimed
			}
			return nil, err
		}
		if len(res.Messages) > 0 {
			if key != anyQueue && !res.LeaseExpiresAt.IsZero() {
				// Should the lease be neither acknowledged nor extended,
				// the polls of the group must look again when it expires.
				b.hub.deadline(key, p.ConsumerGroup, res.LeaseExpiresAt)
			}
			pass = woke == wokenByDeadline
			b.openPayloads(res.Messages) // encryption at rest (encrypt.go)
			b.metrics.Popped(p.Tenant, res.Messages, p.Now)
			return &PopResponse{ConsumerGroup: p.ConsumerGroup, LeaseID: p.LeaseID, Messages: res.Messages}, nil
		}
		pass = false
		remaining := deadline.Sub(b.now())
		if !req.Wait || remaining <= 0 {
			b.metrics.PopEmpty(p.Tenant, req.Queue)
			return nil, nil
		}
		step := min(remaining, b.safetyPoll)
		if key == anyQueue {
			// A namespace/task poll cannot ask for its deadlines (they are
			// per queue): it keeps looking every PollFallback.
			step = min(step, b.fallback)
		} else {
			var err error
			if backoff, err = b.nextDeadline(ctx, p, backoff); err != nil {
				if ctx.Err() != nil {
					return nil, nil
				}
				return nil, err
			}
			if backoff > 0 {
				step = min(step, backoff)
			}
		}
		if !parked {
			// Counted once it sleeps: its deadline is known.
			parked = true
			b.metrics.Parked(p.Tenant, req.Queue, 1)
		}
		if timer == nil {
			timer = time.NewTimer(step)
		} else {
			timer.Reset(step)
		}
		select {
		case cause = <-w.ch:
			b.metrics.PopWakeups.WithLabelValues(cause.String()).Inc()
		case <-timer.C:
		case <-ctx.Done():
			return nil, nil
		case <-b.stopping:
			return nil, nil
		}
	}
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
