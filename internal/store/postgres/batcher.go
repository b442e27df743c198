package postgres

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/queen-go/queen/internal/store"
)

// maxFlushItems bounds the messages of one merged push transaction, which
// bounds the latency a call can add to the others in its flush.
const maxFlushItems = 500

// pushCall is one PushMany waiting for its flush.
type pushCall struct {
	ctx  context.Context
	p    *store.MessagePushManyParams
	res  []store.PushResult
	err  error
	done chan struct{}
}

// batcher merges concurrent PushMany calls into shared transactions: a
// commit (and its fsync) is the dominant cost of a push, so while every
// flush slot is busy the calls arriving meanwhile wait and then go out
// together, up to maxFlushItems. With a slot free, a call is flushed at once:
// merging never adds latency at low load.
type batcher struct {
	s       *Store
	in      chan *pushCall
	slots   chan struct{} // one token per flush in flight
	stopped chan struct{} // closed once every accepted call has been answered
}

func newBatcher(s *Store, inFlight int) *batcher {
	b := &batcher{
		s:       s,
		in:      make(chan *pushCall, 1024),
		slots:   make(chan struct{}, inFlight),
		stopped: make(chan struct{}),
	}
	go b.loop()
	return b
}

// push hands p to the batcher and waits for its result.
func (b *batcher) push(ctx context.Context, p *store.MessagePushManyParams) ([]store.PushResult, error) {
	c := &pushCall{ctx: ctx, p: p, done: make(chan struct{})}
	select {
	case <-b.s.closing:
		return nil, store.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	case b.in <- c:
	}
	// Once accepted, the call is flushed: wait for it even if ctx ends, so a
	// caller never reports failure for a write that then commits.
	select {
	case <-c.done:
		return c.res, c.err
	case <-b.stopped:
		select {
		case <-c.done:
			return c.res, c.err
		default:
			return nil, store.ErrClosed // arrived after the final drain
		}
	}
}

// stop flushes what was accepted and waits for every flush to finish.
func (b *batcher) stop() { <-b.stopped }

func (b *batcher) loop() {
	defer close(b.stopped)
	var pending []*pushCall
	for {
		if len(pending) == 0 {
			select {
			case c := <-b.in:
				pending = append(pending, c)
			case <-b.s.closing:
				b.finish(nil)
				return
			}
		}
		select {
		case b.slots <- struct{}{}:
			var batch []*pushCall
			batch, pending = take(b.drain(pending))
			go b.flush(batch)
		case c := <-b.in:
			pending = append(pending, c)
		case <-b.s.closing:
			b.finish(pending)
			return
		}
	}
}

// drain appends every call already queued, without waiting.
func (b *batcher) drain(pending []*pushCall) []*pushCall {
	for {
		select {
		case c := <-b.in:
			pending = append(pending, c)
		default:
			return pending
		}
	}
}

// take splits off the calls of the next flush: at least one, then more
// while they fit in maxFlushItems.
func take(pending []*pushCall) (batch, rest []*pushCall) {
	n, items := 1, len(pending[0].p.Items)
	for n < len(pending) && items+len(pending[n].p.Items) <= maxFlushItems {
		items += len(pending[n].p.Items)
		n++
	}
	batch = append([]*pushCall(nil), pending[:n]...)
	return batch, pending[n:]
}

// finish flushes everything accepted before Close, then waits for the
// flushes in flight.
func (b *batcher) finish(pending []*pushCall) {
	for {
		pending = b.drain(pending)
		if len(pending) == 0 {
			break
		}
		var batch []*pushCall
		batch, pending = take(pending)
		b.slots <- struct{}{}
		go b.flush(batch)
	}
	for range cap(b.slots) {
		b.slots <- struct{}{}
	}
}

// flush writes the calls in one transaction and answers each. If a merged
// flush fails for a reason other than an outage, each call is retried on
// its own, so that one bad call cannot fail its neighbours.
func (b *batcher) flush(calls []*pushCall) {
	defer func() { <-b.slots }()
	live := calls[:0]
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err // abandoned before it started: nothing written
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	err := b.write(live)
	if err != nil && len(live) > 1 && !unavailable(err) {
		for _, c := range live {
			c.err = b.write([]*pushCall{c})
		}
	} else {
		for _, c := range live {
			c.err = err
		}
	}
	for _, c := range live {
		close(c.done)
	}
}

// write pushes the calls' items in one transaction and fills in each call's
// results. A panic is the flush's error (the transaction rolled back): a
// flush runs on a goroutine of its own, where a panic would stop the
// process, and the calls merged with the one that panics are then retried
// alone, as after any error.
func (b *batcher) write(calls []*pushCall) (err error) {
	defer func() {
		if v := recover(); v != nil {
			b.s.log.Error("panic recovered in a push", "calls", len(calls), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("postgres: a push panicked: %v", v)
		}
	}()
	var entries []pushEntry
	for _, c := range calls {
		at := c.p.Now.UnixMilli()
		for i := range c.p.Items {
			entries = append(entries, pushEntry{item: &c.p.Items[i], atMs: at})
		}
	}
	var res []store.PushResult
	err = b.s.runTx(context.Background(), "push", durable, func(t *txn) error {
		var err error
		res, err = t.push(entries)
		return err
	})
	if err != nil {
		return err
	}
	for _, c := range calls {
		c.res, res = res[:len(c.p.Items):len(c.p.Items)], res[len(c.p.Items):]
	}
	return nil
}
