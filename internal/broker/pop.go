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
	var timer *time.Timer
	waiting := false
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if waiting {
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
		wake := b.hub.wait(key)
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
			b.openPayloads(res.Messages) // encryption at rest (encrypt.go)
			b.metrics.Popped(p.Tenant, res.Messages, p.Now)
			return &PopResponse{ConsumerGroup: p.ConsumerGroup, LeaseID: p.LeaseID, Messages: res.Messages}, nil
		}
		remaining := deadline.Sub(b.now())
		if !req.Wait || remaining <= 0 {
			b.metrics.PopEmpty(p.Tenant, req.Queue)
			return nil, nil
		}
		if !waiting {
			waiting = true
			b.metrics.Parked(p.Tenant, req.Queue, 1)
		}
		step := min(remaining, b.fallback)
		if timer == nil {
			timer = time.NewTimer(step)
		} else {
			timer.Reset(step)
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			return nil, nil
		case <-b.stopping:
			return nil, nil
		}
	}
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
