package postgres

import (
	"context"
	"encoding/json"
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

// Pop claims lanes and reads their messages in one transaction.
func (s *Store) Pop(ctx context.Context, p *store.PopParams) (*store.PopResult, error) {
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
	p      *store.PopParams
	nowMs  int64
	budget int // messages still wanted
	lanes  int // lanes still allowed
	res    *store.PopResult
}

// popQueue is what a pop needs of a queues row.
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

func (t *txn) pop(p *store.PopParams) (*store.PopResult, error) {
	ps := &popState{p: p, nowMs: p.Now.UnixMilli(), budget: max(p.Batch, 1), lanes: max(p.Partitions, 1),
		res: &store.PopResult{}}
	if p.Partition != "" {
		ps.lanes = 1
	}
	names := []string{p.Queue}
	if p.Queue == "" {
		var err error
		if names, err = t.queuesMatching(p.Namespace, p.Task); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		if ps.budget == 0 || ps.lanes == 0 {
			break
		}
		if err := t.popFrom(ps, name); err != nil {
			return nil, err
		}
	}
	return ps.res, nil
}

func (t *txn) queuesMatching(namespace, task string) ([]string, error) {
	rows, _ := t.tx.Query(t.ctx, sqlQueuesMatching, namespace, task)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("match queues: %w", err)
	}
	return names, nil
}

// popFrom claims lanes of one queue: join the group on its first pop, then
// ask for candidate lanes until the pop is satisfied or none are left.
func (t *txn) popFrom(ps *popState, name string) error {
	q, joined, err := t.queueForPop(name, ps.p.ConsumerGroup)
	if err != nil || q == nil {
		return err
	}
	if !joined {
		if err := t.join(q, ps); err != nil {
			return err
		}
	}
	w := &laneWrites{}
	tried := []int64{}
	rounds := maxPopRounds
	if ps.p.Partition != "" {
		rounds = 1
	}
	for r := 0; r < rounds && ps.budget > 0 && ps.lanes > 0; r++ {
		cands, err := t.candidates(q, ps, tried)
		if err != nil {
			return err
		}
		if len(cands) == 0 {
			break
		}
		msgs, err := t.messagesAfter(cands, ps.budget+1)
		if err != nil {
			return err
		}
		for i := range cands {
			c := &cands[i]
			tried = append(tried, c.partitionID)
			if ps.budget > 0 && ps.lanes > 0 {
				t.claim(q, c, msgs[c.partitionID], ps, w)
			}
		}
	}
	return t.writeLanes(w)
}

// queueForPop reads the queue's options (fresh: another broker may have
// reconfigured it) and whether the group has joined it; nil if no queue.
func (t *txn) queueForPop(name, group string) (*popQueue, bool, error) {
	q := &popQueue{name: name}
	var opts []byte
	var joined bool
	err := t.tx.QueryRow(t.ctx, sqlQueueForPop, name, group).Scan(&q.id, &opts, &joined)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read queue: %w", err)
	}
	if err := json.Unmarshal(opts, &q.opts); err != nil {
		return nil, false, fmt.Errorf("queue %q options: %w", name, err)
	}
	return q, joined, nil
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

// candidates locks up to ps.lanes claimable lanes of q not tried yet (or the
// pinned lane).
func (t *txn) candidates(q *popQueue, ps *popState, tried []int64) ([]candidate, error) {
	settled := ps.nowMs - int64(q.opts.WindowBuffer)*1000
	var rows pgx.Rows
	if ps.p.Partition != "" {
		rows, _ = t.tx.Query(t.ctx, sqlLanePinned, q.id, ps.p.ConsumerGroup, ps.nowMs, settled, ps.p.Partition)
	} else {
		var due int64 // 0: no delay
		if q.opts.DelayedProcessing > 0 {
			due = ps.nowMs - int64(q.opts.DelayedProcessing)*1000
		}
		rows, _ = t.tx.Query(t.ctx, sqlLaneCandidates, q.id, ps.p.ConsumerGroup, ps.nowMs, settled, tried,
			ps.lanes, due)
	}
	var out []candidate
	var c candidate
	_, err := pgx.ForEachRow(rows, []any{&c.partitionID, &c.uuid, &c.name, &c.lastOffset, &c.state.Cursor,
		&c.state.LeaseID, &c.state.LeaseExpiresAt, &c.state.BatchEnd, &c.state.HeadAttempts}, func() error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim lanes: %w", err)
	}
	return out, nil
}

// messagesAfter reads up to limit messages after each candidate's cursor,
// for all candidates in one query.
func (t *txn) messagesAfter(cands []candidate, limit int) (map[int64][]fetched, error) {
	ids, cursors := make([]int64, len(cands)), make([]int64, len(cands))
	byID := make(map[int64]*candidate, len(cands))
	for i := range cands {
		ids[i], cursors[i] = cands[i].partitionID, cands[i].state.Cursor
		byID[ids[i]] = &cands[i]
	}
	rows, _ := t.tx.Query(t.ctx, sqlMessagesAfter, ids, cursors, limit)
	out := make(map[int64][]fetched, len(cands))
	var pid int64
	var f fetched
	_, err := pgx.ForEachRow(rows, []any{&pid, &f.seq, &f.msg.ID, &f.msg.TransactionID, &f.msg.TraceID,
		&f.msg.ProducerSub, &f.msg.Payload, &f.createdAt}, func() error {
		c := byID[pid]
		m := f
		m.msg.CreatedAt = time.UnixMilli(f.createdAt).UTC()
		m.msg.PartitionID, m.msg.Partition = c.uuid, c.name
		out[pid] = append(out[pid], m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	return out, nil
}

// claim applies the lane rules to one locked lane: settle a stale lease
// (charging the head message), then lease (or, for autoAck, commit) the
// visible messages after the cursor, up to the pop's budget.
func (t *txn) claim(q *popQueue, c *candidate, msgs []fetched, ps *popState, w *laneWrites) {
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
			st.Claim(ps.p.LeaseID, ps.nowMs+q.opts.LeaseDuration().Milliseconds(), last)
		}
		claimedAt, dirty = ps.nowMs, true
		ps.budget -= n
		ps.lanes--
	}
	if dirty {
		w.save(c.partitionID, group, st, claimedAt)
	}
	if st.Cursor >= c.lastOffset {
		w.settle(c.partitionID, group)
	}
}
