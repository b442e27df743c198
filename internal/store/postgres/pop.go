package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// maxPopRounds bounds how many times one queue's pop asks for more
// candidates when the lanes it got had nothing deliverable (all messages
// still delayed, or a lane still marked ready after being drained).
const maxPopRounds = 4

// LanePop claims lanes and reads their messages in one transaction: in the
// steady state two round trips, BEGIN with one statement that refreshes the
// queue's options, locks candidate lanes and reads their messages, then the
// lane writes with COMMIT (see lazyTx).
func (s *Store) LanePop(ctx context.Context, p *store.LanePopParams) (*store.PopResult, error) {
	var out *store.PopResult
	err := s.inRelaxedTx(ctx, "pop", func(t *txn) error {
		var err error
		out, err = t.pop(p)
		return err
	})
	return out, err
}

// popState is the progress of one pop across queues.
type popState struct {
	p      *store.LanePopParams
	nowMs  int64
	budget int // messages still wanted
	lanes  int // lanes still allowed
	res    *store.PopResult
}

// popQueue is what a pop needs of a queues row: of its options only
// WindowBuffer, DelayedProcessing, RetryLimit, LeaseTime and
// MaxWaitTimeSeconds are read.
type popQueue struct {
	id   int64
	name string
	opts store.QueueOptions
}

// candidate is a lane locked for this pop.
type candidate struct {
	partitionID int64
	uuid, name  string
	lastOffset  int64
	state       lane.State
}

// fetched is a message read after a lane's cursor.
type fetched struct {
	seq       int64
	createdAt int64
	msg       store.Message
}

func (t *txn) pop(p *store.LanePopParams) (*store.PopResult, error) {
	ps := &popState{p: p, nowMs: p.Now.UnixMilli(), budget: max(p.Batch, 1), lanes: max(p.Partitions, 1),
		res: &store.PopResult{}}
	if p.Partition != "" {
		ps.lanes = 1
	}
	if p.Queue != "" {
		return ps.res, t.popFrom(ps, p.Queue, 0)
	}
	queues, err := t.queuesMatching(store.TenantOrDefault(p.Tenant), p.Namespace, p.Task)
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		if ps.budget == 0 || ps.lanes == 0 {
			break
		}
		if err := t.popFrom(ps, q.name, q.id); err != nil {
			return nil, err
		}
	}
	return ps.res, nil
}

// namedQueue is a queue matched by a namespace/task pop.
type namedQueue struct {
	name string
	id   int64
}

func (t *txn) queuesMatching(tenant, namespace, task string) ([]namedQueue, error) {
	rows, _ := t.tx.Query(t.ctx, sqlQueuesMatching, tenant, namespace, task)
	var out []namedQueue
	var q namedQueue
	_, err := pgx.ForEachRow(rows, []any{&q.name, &q.id}, func() error {
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("match queues: %w", err)
	}
	return out, nil
}

// popFrom claims lanes of one queue (id 0: look it up by name, through the
// cache): ask for candidate lanes and their messages until the pop is
// satisfied or none are left, joining the group on its first pop.
func (t *txn) popFrom(ps *popState, queue string, id int64) error {
	name := queueName{store.TenantOrDefault(ps.p.Tenant), queue}
	fromCache := false
	if id == 0 {
		var err error
		if id, fromCache, err = t.queueID(name); err != nil || id == 0 {
			return err
		}
	}
	q := &popQueue{id: id, name: queue}
	w := &laneWrites{}
	tried := []int64{}
	rounds := maxPopRounds
	if ps.p.Partition != "" {
		rounds = 1
	}
	joined := false
	for r := 0; r < rounds && ps.budget > 0 && ps.lanes > 0; r++ {
		cr, err := t.claimRead(q, ps, tried)
		if err != nil {
			return err
		}
		if !cr.found {
			if r == 0 && fromCache {
				// The cached id is gone: another broker deleted the queue
				// (and may have created it again).
				t.s.cache.forgetQueue(name)
				fromCache = false
				if q.id, _, err = t.queueID(name); err != nil || q.id == 0 {
					return err
				}
				r--
				continue
			}
			break
		}
		if !cr.joined {
			if joined {
				break // cannot happen: the join is visible to later statements
			}
			if err := t.join(q, ps); err != nil {
				return err
			}
			joined = true
			r--
			continue
		}
		if len(cr.cands) == 0 {
			break
		}
		for i := range cr.cands {
			c := &cr.cands[i]
			tried = append(tried, c.partitionID)
			if ps.budget > 0 && ps.lanes > 0 {
				if err := t.claim(q, c, cr.msgs[c.partitionID], ps, w); err != nil {
					return err
				}
			}
		}
	}
	return t.writeLanes(w)
}

// queueID returns the id of the queue called name, 0 if there is none, and
// whether it came from the cache. Ids are never reused: a cached id either
// names the queue or no row at all (claimRead then finds no queue).
func (t *txn) queueID(name queueName) (int64, bool, error) {
	if ref, ok := t.s.cache.queue(name); ok {
		return ref.id, true, nil
	}
	var ref queueRef
	err := t.tx.QueryRow(t.ctx, sqlQueueByName, name.tenant, name.name).Scan(&ref.id, &ref.uuid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read queue: %w", err)
	}
	t.learn(func(c *cache) { c.putQueue(name, ref) })
	return ref.id, false, nil
}

// join records the group's first pop from q and creates its lanes, seeded
// from its subscription (queue mode always reads from the beginning). Under
// the exclusive join lock, in one round trip; if another pop joined first,
// the inserts do nothing.
func (t *txn) join(q *popQueue, ps *popState) error {
	group := ps.p.ConsumerGroup
	var from int64
	if group != store.QueueMode && ps.p.Subscription.Mode == store.SubscribeFrom {
		from = ps.p.Subscription.From.UnixMilli()
	}
	b := &pgx.Batch{}
	b.Queue(sqlJoinLock, q.id)
	b.Queue(sqlJoinGroup, q.id, group, from, ps.nowMs)
	b.Queue(sqlJoinLanes, q.id, group, from)
	if err := t.execBatch(b); err != nil {
		return fmt.Errorf("join group %q: %w", group, err)
	}
	return nil
}

// claimed is what one claim-and-read statement returned.
type claimed struct {
	found  bool // the queue exists
	joined bool // the group has joined it
	cands  []candidate
	msgs   map[int64][]fetched
}

// claimRead locks up to ps.lanes claimable lanes of q not tried yet (or the
// pinned lane) and reads up to ps.budget+1 messages after each one's
// cursor, in one statement that also refreshes q's options.
func (t *txn) claimRead(q *popQueue, ps *popState, tried []int64) (*claimed, error) {
	var rows pgx.Rows
	limit := ps.budget + 1
	if ps.p.Partition != "" {
		rows, _ = t.tx.Query(t.ctx, sqlPopClaimPinned, q.id, ps.p.ConsumerGroup, ps.nowMs, ps.p.Partition, limit)
	} else {
		rows, _ = t.tx.Query(t.ctx, sqlPopClaim, q.id, ps.p.ConsumerGroup, ps.nowMs, tried, ps.lanes, limit)
	}
	out := &claimed{}
	var windowBuffer, delayed, retryLimit, leaseTime, maxWait int64
	var c candidate
	var f fetched
	_, err := pgx.ForEachRow(rows, []any{&windowBuffer, &delayed, &retryLimit, &leaseTime, &maxWait, &out.joined,
		&c.partitionID, &c.uuid, &c.name, &c.lastOffset, &c.state.Cursor, &c.state.LeaseID,
		&c.state.LeaseExpiresAt, &c.state.BatchEnd, &c.state.HeadAttempts, &c.state.RetryAt,
		&f.seq, &f.msg.ID, &f.msg.TransactionID, &f.msg.TraceID, &f.msg.ProducerSub, &f.msg.Payload,
		&f.createdAt, &f.msg.Sealed}, func() error {
		out.found = true
		if c.partitionID == 0 {
			return nil
		}
		if n := len(out.cands); n == 0 || out.cands[n-1].partitionID != c.partitionID {
			out.cands = append(out.cands, c)
		}
		if f.seq != 0 {
			if out.msgs == nil {
				out.msgs = make(map[int64][]fetched)
			}
			m := f
			m.msg.CreatedAt = time.UnixMilli(f.createdAt).UTC()
			m.msg.PartitionID, m.msg.Partition = c.uuid, c.name
			out.msgs[c.partitionID] = append(out.msgs[c.partitionID], m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim lanes: %w", err)
	}
	q.opts = store.QueueOptions{WindowBuffer: int(windowBuffer), DelayedProcessing: int(delayed),
		RetryLimit: int(retryLimit), LeaseTime: int(leaseTime), MaxWaitTimeSeconds: int(maxWait)}
	return out, nil
}

// claim applies the lane rules to one locked lane: settle a stale lease
// (charging the head message), then lease (or, for autoAck, commit) the
// visible messages after the cursor, up to the pop's budget. msgs are the
// messages claimRead read after the cursor (up to the budget plus one).
func (t *txn) claim(q *popQueue, c *candidate, msgs []fetched, ps *popState, w *laneWrites) error {
	st := &c.state
	group := ps.p.ConsumerGroup
	dirty := false
	if st.Stale(ps.nowMs) {
		var head int64
		if len(msgs) > 0 {
			head = msgs[0].seq
		}
		if dl := st.ExpireStale(ps.nowMs, head, q.opts.RetryLimit); dl != nil {
			w.deadLetter(c.partitionID, group, dl, ps.nowMs)
		}
		dirty = true
	}
	for len(msgs) > 0 && msgs[0].seq <= st.Cursor {
		msgs = msgs[1:] // dead-lettered just now
	}
	if q.opts.MaxWaitTimeSeconds > 0 {
		var evicted bool
		var err error
		if msgs, evicted, err = t.evictExpired(q, c, msgs, ps, w); err != nil {
			return err
		}
		dirty = dirty || evicted
	}
	// Deliver the visible prefix: a message still inside delayedProcessing
	// holds back the ones after it, so a commit never skips it.
	visibleUntil := ps.nowMs - int64(q.opts.DelayedProcessing)*1000
	n := 0
	for n < len(msgs) && n < ps.budget && msgs[n].createdAt <= visibleUntil {
		msgs[n].msg.Queue = q.name
		ps.res.Messages = append(ps.res.Messages, msgs[n].msg)
		n++
	}
	var claimedAt int64
	if n > 0 {
		last := msgs[n-1].seq
		if ps.p.AutoAck {
			st.Commit(last)
		} else {
			exp := ps.nowMs + q.opts.LeaseDuration().Milliseconds()
			st.Claim(ps.p.LeaseID, exp, last)
			if at := time.UnixMilli(exp); ps.res.LeaseExpiresAt.IsZero() || at.Before(ps.res.LeaseExpiresAt) {
				ps.res.LeaseExpiresAt = at
			}
		}
		claimedAt, dirty = t.s.nextClaim(ps.nowMs), true
		ps.budget -= n
		ps.lanes--
	}
	if dirty {
		w.save(c.partitionID, group, st, claimedAt)
	}
	if st.Cursor >= c.lastOffset {
		w.settle(c.partitionID, group)
	}
	return nil
}

// evictExpired evicts the lane's expired head (see lane.Expiry) and
// returns the messages that follow it (msgs are those claimRead read) and
// whether it evicted any. Only when everything read had expired does it read
// on: the offsets and created times of what follows, up to lane.PopEvictMax
// in all, then, if a message still in time ends the head, the messages to
// deliver after it.
func (t *txn) evictExpired(q *popQueue, c *candidate, msgs []fetched, ps *popState, w *laneWrites) (
	[]fetched, bool, error) {
	st := &c.state
	exp := lane.NewExpiry(q.opts.MaxWaitTimeSeconds, ps.nowMs)
	k := 0
	for k < len(msgs) && exp.Expired(msgs[k].seq, msgs[k].createdAt) {
		k++
	}
	if k == 0 {
		return msgs, false, nil
	}
	readOn := k == len(msgs)
	if readOn {
		if err := t.expiredAfter(c, msgs[k-1].seq, lane.PopEvictMax-k, &exp); err != nil {
			return nil, false, err
		}
	}
	for _, dl := range st.Evict(exp.Offsets, ps.nowMs) {
		w.deadLetter(c.partitionID, ps.p.ConsumerGroup, &dl, ps.nowMs)
	}
	msgs = msgs[k:]
	if readOn && exp.Ended() && st.Cursor == exp.Offsets[len(exp.Offsets)-1] {
		var err error
		if msgs, err = t.readMore(c, st.Cursor, ps.budget+1); err != nil {
			return nil, false, err
		}
	}
	return msgs, true, nil
}

// expiredAfter feeds exp the offsets and created times of up to n messages
// after offset from in the locked lane c, until one still in time ends the
// expired head.
func (t *txn) expiredAfter(c *candidate, from int64, n int, exp *lane.Expiry) error {
	if n <= 0 {
		return nil
	}
	rows, _ := t.tx.Query(t.ctx, sqlPopExpiredAfter, c.partitionID, from, n)
	var seq, createdAt int64
	_, err := pgx.ForEachRow(rows, []any{&seq, &createdAt}, func() error {
		if !exp.Ended() {
			exp.Expired(seq, createdAt)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read expired messages: %w", err)
	}
	return nil
}

// readMore reads up to n messages after cursor in the locked lane c.
func (t *txn) readMore(c *candidate, cursor int64, n int) ([]fetched, error) {
	rows, _ := t.tx.Query(t.ctx, sqlPopReadMore, c.partitionID, cursor, n)
	var out []fetched
	var f fetched
	_, err := pgx.ForEachRow(rows, []any{&f.seq, &f.msg.ID, &f.msg.TransactionID, &f.msg.TraceID,
		&f.msg.ProducerSub, &f.msg.Payload, &f.createdAt, &f.msg.Sealed}, func() error {
		m := f
		m.msg.CreatedAt = time.UnixMilli(f.createdAt).UTC()
		m.msg.PartitionID, m.msg.Partition = c.uuid, c.name
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	return out, nil
}

// LaneNextReady reads, in one statement, the earliest time a lane of the
// queue with unread messages may become claimable: the latest of the
// deadlines that hold it back now (lease, retry delay, window buffer, a
// delayed head message), the earliest over the lanes. It mirrors the
// conditions of sqlPopClaim.
func (s *Store) LaneNextReady(ctx context.Context, p *store.LanePopParams) (time.Time, error) {
	if s.closed() {
		return time.Time{}, store.ErrClosed
	}
	if err := s.ready(ctx); err != nil {
		return time.Time{}, err
	}
	// One statement outside any transaction: a read, which resolves the
	// queue's name itself rather than trusting the cache.
	var at int64
	err := s.pool.QueryRow(ctx, sqlLaneNextReady, store.TenantOrDefault(p.Tenant), p.Queue, p.ConsumerGroup,
		p.Partition).Scan(&at)
	if err != nil {
		return time.Time{}, wrapErr("next ready lane", err)
	}
	if at == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(at), nil
}
