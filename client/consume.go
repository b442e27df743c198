package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/queen-go/queen/api"
)

// Handler processes a batch of messages, all of one partition, in
// partition order. Returning nil acknowledges the batch. Returning an
// error fails it from its first message on: the messages come back later
// (after the queue's retryDelay; dead-lettered after its retryLimit). A
// *BatchError fails it from one message on, acknowledging those before.
// ctx is cancelled when the consumer stops and the handler has had
// ConsumeOptions.StopTimeout to finish.
type Handler func(ctx context.Context, msgs []api.PopMessage) error

// BatchError, returned by a Handler, says that the messages before Index
// were processed and the one at Index failed with Err. The messages after
// it are not acknowledged: the negative acknowledgement stops the cursor at
// Index, so they come back anyway.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("message %d: %v", e.Index, e.Err) }
func (e *BatchError) Unwrap() error { return e.Err }

// ConsumeOptions configure Consume.
type ConsumeOptions struct {
	// Group is the consumer group; "" is queue mode.
	Group string
	// Partition pins the consumer to one partition.
	Partition string
	// Concurrency is the number of batches processed at once, each by its
	// own goroutine; 0 means 1.
	Concurrency int
	// BatchSize is the most messages of one batch; 0 means 1.
	BatchSize int
	// WaitTimeout is each long poll's; 0 means 30 s.
	WaitTimeout time.Duration
	// RenewEvery is how often the lease of a batch whose handler still
	// runs is renewed, and LeaseTime what it is renewed to; 0 means 10 s
	// and 60 s. RenewEvery must be shorter than the queue's leaseTime.
	RenewEvery, LeaseTime time.Duration
	// StopTimeout is how long, once ctx is done, the batches in flight may
	// take to finish; then their handlers' ctx is cancelled and a batch
	// whose handler fails is released (acknowledged "retry", which
	// redelivers it without using its retry budget). 0 means 30 s.
	StopTimeout time.Duration
	// SubscriptionMode and SubscriptionFrom say where a new group starts
	// (PopOptions).
	SubscriptionMode, SubscriptionFrom string
	// OnError, when set, hears the errors Consume survives: a failed pop
	// or acknowledgement, a handler's error.
	OnError func(error)
}

// Consume pops batches of queue and hands each to h, with Concurrency
// goroutines, until ctx is done; then it stops popping, lets the batches
// in flight finish (StopTimeout) and returns nil. It returns early with an
// error the broker will answer again whatever Consume does: 400, 401, 403,
// 404. While a handler runs its batch's lease is renewed every RenewEvery.
func (c *Client) Consume(ctx context.Context, queue string, h Handler, o ConsumeOptions) error {
	if queue == "" {
		return errors.New("client: Consume needs a queue")
	}
	o.Concurrency = max(o.Concurrency, 1)
	o.BatchSize = max(o.BatchSize, 1)
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 30 * time.Second
	}
	if o.RenewEvery <= 0 {
		o.RenewEvery = 10 * time.Second
	}
	if o.LeaseTime <= 0 {
		o.LeaseTime = 60 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 30 * time.Second
	}
	// Handlers run under work, which outlives ctx by StopTimeout.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(o.StopTimeout, cancelWork)
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stop()
	// fatal ends every worker early.
	pollCtx, cancelPoll := context.WithCancel(ctx)
	defer cancelPoll()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		fatal error
	)
	pop := PopOptions{Partition: o.Partition, Group: o.Group, Batch: o.BatchSize, Wait: true,
		Timeout: o.WaitTimeout, SubscriptionMode: o.SubscriptionMode, SubscriptionFrom: o.SubscriptionFrom}
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failures := 0
			for pollCtx.Err() == nil {
				res, err := c.Pop(pollCtx, queue, pop)
				if err != nil {
					if pollCtx.Err() != nil {
						return
					}
					if permanent(err) {
						once.Do(func() { fatal = err; cancelPoll() })
						return
					}
					c.report(o, fmt.Errorf("pop %s: %w", queue, err))
					failures++
					sleep(pollCtx, c.backoff(min(failures, 10)))
					continue
				}
				failures = 0
				if res == nil || len(res.Messages) == 0 {
					continue
				}
				c.process(work, res, h, o)
			}
		}()
	}
	wg.Wait()
	return fatal
}

// permanent is an error the broker will answer again: the request, the
// token or the queue is at fault.
func permanent(err error) bool {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

func (c *Client) report(o ConsumeOptions, err error) {
	if o.OnError != nil {
		o.OnError(err)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// process runs the handler on one batch, renewing its lease meanwhile,
// and acknowledges what it did.
func (c *Client) process(work context.Context, res *api.PopResponse, h Handler, o ConsumeOptions) {
	msgs := res.Messages
	hctx, cancel := context.WithCancel(work)
	defer cancel()
	if res.LeaseID != nil {
		renewed := make(chan struct{})
		defer func() { cancel(); <-renewed }()
		go func() {
			defer close(renewed)
			t := time.NewTicker(o.RenewEvery)
			defer t.Stop()
			for {
				select {
				case <-hctx.Done():
					return
				case <-t.C:
					r, err := c.Extend(hctx, *res.LeaseID, o.LeaseTime)
					if err != nil && hctx.Err() == nil {
						c.report(o, fmt.Errorf("extend lease %s: %w", *res.LeaseID, err))
					} else if err == nil && r.Renewed == 0 {
						c.report(o, fmt.Errorf("extend lease %s: the lease is gone; the batch will be redelivered", *res.LeaseID))
					}
				}
			}
		}()
	}
	err := safeCall(hctx, h, msgs)
	var acks []api.Ack
	switch {
	case err == nil:
		acks = Acks(msgs, api.AckCompleted, "")
	default:
		c.report(o, fmt.Errorf("handler: %w", err))
		at := 0
		var be *BatchError
		if errors.As(err, &be) && be.Index >= 0 && be.Index < len(msgs) {
			at = be.Index
		}
		status := api.AckFailed
		if work.Err() != nil {
			status = api.AckRetry // stopped, not failed: release the batch
		}
		acks = Acks(msgs[:at+1], api.AckCompleted, "")
		acks[at].Status, acks[at].Error = status, err.Error()
	}
	// The acknowledgement must reach the broker even once work is
	// cancelled; it is bounded by the request timeout.
	if _, err := c.AckBatch(context.WithoutCancel(work), acks); err != nil {
		c.report(o, fmt.Errorf("ack: %w", err))
	}
}

// safeCall runs h, turning a panic into an error so that the batch is
// failed rather than the program killed with a lease held.
func safeCall(ctx context.Context, h Handler, msgs []api.PopMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, msgs)
}
