package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// LanePop claims lanes and reads their messages in one transaction.
func (s *Store) LanePop(ctx context.Context, p *store.LanePopParams) (*store.PopResult, error) {
	var out *store.PopResult
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		var err error
		out, err = s.txn(tx).pop(p)
		return err
	})
	return out, err
}

// candidate is a ready lane that may have deliverable messages.
type candidate struct {
	part       *partitionRow
	lastOffset int64 // the partition's
	state      lane.State
}

func (t *txn) pop(p *store.LanePopParams) (*store.PopResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	names := []string{p.Queue}
	if p.Queue == "" {
		var err error
		if names, err = t.queuesMatching(tenant, p.Namespace, p.Task); err != nil {
			return nil, err
		}
	}
	res := &store.PopResult{}
	budget, lanes := p.Batch, p.Partitions
	if p.Partition != "" {
		lanes = 1
	}
	for _, name := range names {
		q, err := t.existingQueue(queueName{tenant, name})
		if err != nil {
			return nil, err
		}
		if q == nil {
			continue
		}
		if err := t.join(q, p); err != nil {
			return nil, err
		}
		var pinned int64
		if p.Partition != "" {
			part, err := t.existingPartition(q, p.Partition)
			if err != nil || part == nil {
				return res, err
			}
			pinned = part.id
		}
		limit := max(2*lanes, 16)
		cands, err := t.candidates(q, p, pinned, limit)
		if err != nil {
			return nil, err
		}
		tried := make(map[int64]bool, len(cands))
		for {
			for i := range cands {
				if tried[cands[i].part.id] {
					continue
				}
				tried[cands[i].part.id] = true
				msgs, err := t.claim(q, &cands[i], p, budget)
				if err != nil {
					return nil, err
				}
				if len(msgs) == 0 {
					continue
				}
				res.Messages = append(res.Messages, msgs...)
				if !p.AutoAck { // the lease claim took (see claim)
					at := time.UnixMilli(p.Now.UnixMilli() + q.opts.LeaseDuration().Milliseconds())
					if res.LeaseExpiresAt.IsZero() || at.Before(res.LeaseExpiresAt) {
						res.LeaseExpiresAt = at
					}
				}
				budget -= len(msgs)
				lanes--
				if budget == 0 || lanes == 0 {
					return res, nil
				}
			}
			// A full list whose lanes were all empty (rare: the query skips
			// lanes whose head is still inside delayedProcessing, and ready
			// is exact) must not hide the lanes after it: walk the rest
			// until candidates run out, as Queen does (message-plane.md
			// §4.5: a LIMIT caused starvation). LIMIT -1 is SQLite for no
			// limit.
			if limit < 0 || len(cands) < limit {
				break
			}
			limit = -1
			if cands, err = t.candidates(q, p, pinned, limit); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

func (t *txn) queuesMatching(tenant, namespace, task string) ([]string, error) {
	rows, err := t.query(sqlQueuesMatching, tenant, namespace, task)
	if err != nil {
		return nil, fmt.Errorf("match queues: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// candidates lists the ready lanes of q worth trying, or just the pinned one.
func (t *txn) candidates(q *queueRow, p *store.LanePopParams, pinned int64, limit int) ([]candidate, error) {
	nowMs := p.Now.UnixMilli()
	settled := nowMs - int64(q.opts.WindowBuffer)*1000
	var rows *sql.Rows
	var err error
	if pinned != 0 {
		rows, err = t.query(sqlLanePinned, p.ConsumerGroup, nowMs, settled, pinned)
	} else {
		var due int64 // 0: no delay
		if q.opts.DelayedProcessing > 0 {
			due = nowMs - int64(q.opts.DelayedProcessing)*1000
		}
		rows, err = t.query(sqlLaneCandidates, q.id, p.ConsumerGroup, nowMs, settled, limit, due)
	}
	if err != nil {
		return nil, fmt.Errorf("list lanes: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		c := candidate{part: &partitionRow{queue: q}}
		if err := rows.Scan(&c.part.id, &c.part.uuid, &c.part.name, &c.lastOffset, &c.state.Cursor,
			&c.state.LeaseID, &c.state.LeaseExpiresAt, &c.state.BatchEnd, &c.state.HeadAttempts); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// join records group p.ConsumerGroup's first pop from q and creates its
// lanes on every partition of q, seeded from its subscription (queue mode,
// recorded as a group too, always reads from the beginning). Partitions
// created later get their lanes when they are created, read from their
// beginning.
func (t *txn) join(q *queueRow, p *store.LanePopParams) error {
	key := groupKey{q.id, p.ConsumerGroup}
	if _, ok := t.cache.groups.Get(key); ok {
		return nil
	}
	var from int64
	err := t.queryRow(sqlGroupGet, q.id, p.ConsumerGroup).Scan(&from)
	if errors.Is(err, sql.ErrNoRows) {
		if p.ConsumerGroup != store.QueueMode && p.Subscription.Mode == store.SubscribeFrom {
			from = p.Subscription.From.UnixMilli()
		}
		if _, err := t.exec(sqlGroupInsert, q.id, p.ConsumerGroup, from, p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("record consumer group: %w", err)
		}
		if _, err := t.exec(sqlJoinLanes, q.id, p.ConsumerGroup, from); err != nil {
			return fmt.Errorf("create lanes: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read consumer group: %w", err)
	}
	t.cache.groups.Add(key, from)
	return nil
}

// claim settles a stale lease on the lane, reads up to budget visible
// messages after its cursor and leases them (or commits them, for autoAck).
func (t *txn) claim(q *queueRow, c *candidate, p *store.LanePopParams, budget int) ([]store.Message, error) {
	nowMs := p.Now.UnixMilli()
	st := &c.state
	dirty := false
	if st.Stale(nowMs) {
		var head int64
		err := t.queryRow(sqlMessageHead, c.part.id, st.Cursor).Scan(&head)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read head: %w", err)
		}
		if dl := st.ExpireStale(nowMs, head, q.opts.RetryLimit); dl != nil {
			if err := t.deadLetter(c.part.id, p.ConsumerGroup, dl, nowMs); err != nil {
				return nil, err
			}
		}
		dirty = true
	}
	visibleUntil := nowMs - int64(q.opts.DelayedProcessing)*1000
	exp := lane.NewExpiry(q.opts.MaxWaitTimeSeconds, nowMs)
	msgs, read, last, err := t.readAfter(q, c, st.Cursor, budget, visibleUntil, &exp)
	if err != nil {
		return nil, err
	}
	if n := len(exp.Offsets); n > 0 {
		// Messages that waited longer than maxWaitTimeSeconds are evicted
		// here, as the sweep would have (see lane.Expiry). Only when
		// everything read had expired does the pop read on.
		readOn := n == read && read == budget
		if readOn {
			if err := t.expiredAfter(c, exp.Offsets[n-1], lane.PopEvictMax-n, &exp); err != nil {
				return nil, err
			}
		}
		for _, dl := range st.Evict(exp.Offsets, nowMs) {
			if err := t.deadLetter(c.part.id, p.ConsumerGroup, &dl, nowMs); err != nil {
				return nil, err
			}
		}
		dirty = true
		if readOn && exp.Ended() && st.Cursor == exp.Offsets[len(exp.Offsets)-1] {
			inTime := lane.NewExpiry(0, nowMs)
			if msgs, _, last, err = t.readAfter(q, c, st.Cursor, budget, visibleUntil, &inTime); err != nil {
				return nil, err
			}
		}
	}
	claimedAt := int64(0)
	if len(msgs) > 0 {
		claimedAt, dirty = t.cache.nextClaim(nowMs), true
		if p.AutoAck {
			st.Commit(last)
		} else {
			st.Claim(p.LeaseID, nowMs+q.opts.LeaseDuration().Milliseconds(), last)
		}
	}
	if dirty {
		if err := t.saveLane(c.part.id, p.ConsumerGroup, q.id, st, claimedAt); err != nil {
			return nil, err
		}
	} else if st.Cursor >= c.lastOffset {
		if _, err := t.exec(sqlLaneSettle, c.part.id, p.ConsumerGroup, c.lastOffset); err != nil {
			return nil, fmt.Errorf("settle lane: %w", err)
		}
	}
	return msgs, nil
}

// readAfter reads up to budget messages after cursor and returns the
// visible ones that follow the expired head (exp collects its offsets), how
// many rows it read and the offset of the last message returned.
func (t *txn) readAfter(q *queueRow, c *candidate, cursor int64, budget int, visibleUntil int64, exp *lane.Expiry) (
	msgs []store.Message, read int, last int64, err error) {
	rows, err := t.query(sqlMessagesAfter, c.part.id, cursor, budget)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("read messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m store.Message
		var traceID, producerSub sql.NullString
		var seq, createdAt int64
		if err := rows.Scan(&seq, &m.ID, &m.TransactionID, &traceID, &producerSub, &m.Payload, &createdAt, &m.Sealed); err != nil {
			return nil, 0, 0, err
		}
		read++
		if exp.Expired(seq, createdAt) {
			continue
		}
		if createdAt > visibleUntil {
			break // not due yet, and neither is anything after it
		}
		last = seq
		m.TraceID, m.ProducerSub = traceID.String, producerSub.String
		m.CreatedAt = time.UnixMilli(createdAt).UTC()
		m.Queue, m.Partition, m.PartitionID = q.name, c.part.name, c.part.uuid
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("read messages: %w", err)
	}
	return msgs, read, last, nil
}

// expiredAfter feeds exp the offsets and created times of up to n messages
// after offset from in lane c, until one still in time ends the expired
// head.
func (t *txn) expiredAfter(c *candidate, from int64, n int, exp *lane.Expiry) error {
	if n <= 0 {
		return nil
	}
	rows, err := t.query(sqlMessagesAfterTimes, c.part.id, from, n)
	if err != nil {
		return fmt.Errorf("read expired messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() && !exp.Ended() {
		var seq, createdAt int64
		if err := rows.Scan(&seq, &createdAt); err != nil {
			return fmt.Errorf("read expired messages: %w", err)
		}
		exp.Expired(seq, createdAt)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read expired messages: %w", err)
	}
	return nil
}

// saveLane writes a lane's state and whether it is ready (has messages after
// its cursor), creating its row if needed.
func (t *txn) saveLane(partitionID int64, group string, queueID int64, st *lane.State, claimedAt int64) error {
	_, err := t.exec(sqlLaneUpsert, partitionID, group, queueID, st.Cursor, nullString(st.LeaseID),
		st.LeaseExpiresAt, st.BatchEnd, st.HeadAttempts, claimedAt, st.RetryAt)
	if err != nil {
		return fmt.Errorf("save lane: %w", err)
	}
	return nil
}

func (t *txn) deadLetter(partitionID int64, group string, dl *lane.DeadLetter, nowMs int64) error {
	if _, err := t.exec(sqlDeadLetterInsert, partitionID, dl.Offset, group, dl.Error, dl.Attempts, nowMs); err != nil {
		return fmt.Errorf("write dead letter: %w", err)
	}
	return nil
}

// LaneNextReady reads the earliest time a lane of the queue with unread
// messages may become claimable (see store.LaneStore).
func (s *Store) LaneNextReady(ctx context.Context, p *store.LanePopParams) (time.Time, error) {
	var at int64
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		t := s.txn(tx)
		q, err := t.existingQueue(queueName{store.TenantOrDefault(p.Tenant), p.Queue})
		if err != nil || q == nil {
			return err
		}
		var pinned int64
		if p.Partition != "" {
			part, err := t.existingPartition(q, p.Partition)
			if err != nil || part == nil {
				return err
			}
			pinned = part.id
		}
		return t.queryRow(sqlLaneNextReady, q.id, p.ConsumerGroup, pinned, int64(q.opts.WindowBuffer)*1000,
			int64(q.opts.DelayedProcessing)*1000).Scan(&at)
	})
	if err != nil || at == 0 {
		return time.Time{}, err
	}
	return time.UnixMilli(at), nil
}
