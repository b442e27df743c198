package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/kvop"
	"github.com/queen-go/queen/internal/store/lane"
)

// MessageAckMany commits a batch of acknowledgements in one transaction.
func (s *Store) MessageAckMany(ctx context.Context, p *store.MessageAckManyParams) ([]store.AckResult, error) {
	var out []store.AckResult
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		var err error
		out, err = s.txn(tx).ack(store.TenantOrDefault(p.Tenant), p.Acks, p.Now)
		return err
	})
	return out, err
}

type laneKey struct {
	partitionID int64
	group       string
}

// laneAcks gathers the acks of one call that target one lane.
type laneAcks struct {
	part    *partitionRow
	group   string
	indexes []int // positions in the call
	acks    []lane.Ack
	txns    []string // transactionId of each ack
}

// ack groups the acks by lane, resolves each lane's transactionIds to
// offsets, applies the lane rules to each lane once with all of its acks,
// and writes lanes and dead letters.
func (t *txn) ack(tenant string, acks []store.Ack, now time.Time) ([]store.AckResult, error) {
	out := make([]store.AckResult, len(acks))
	byLane := make(map[laneKey]*laneAcks)
	var order []*laneAcks
	for i := range acks {
		a := &acks[i]
		part, err := t.partitionByUUID(a.PartitionID)
		if err != nil {
			return nil, err
		}
		if part == nil || part.queue == nil || part.queue.tenant != tenant {
			out[i] = store.AckResult{Noop: true, Error: api.ReasonUnresolvable}
			continue
		}
		k := laneKey{part.id, a.ConsumerGroup}
		la := byLane[k]
		if la == nil {
			la = &laneAcks{part: part, group: a.ConsumerGroup}
			byLane[k] = la
			order = append(order, la)
		}
		la.indexes = append(la.indexes, i)
		la.txns = append(la.txns, a.TransactionID)
		la.acks = append(la.acks, lane.Ack{Status: a.Status, LeaseID: a.LeaseID, Error: a.Error})
	}
	nowMs := now.UnixMilli()
	for _, la := range order {
		var st lane.State
		var leaseID sql.NullString
		err := t.queryRow(sqlLaneGet, la.part.id, la.group).Scan(&st.Cursor, &leaseID, &st.LeaseExpiresAt,
			&st.BatchEnd, &st.HeadAttempts, &st.RetryAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read lane: %w", err)
		}
		st.LeaseID = leaseID.String
		if err := t.resolveAcks(la, st.Cursor); err != nil {
			return nil, err
		}
		before := st
		verdicts, dead := lane.ApplyPolicy(&st, la.acks, lane.PolicyOf(la.part.queue.opts), nowMs)
		for j, v := range verdicts {
			out[la.indexes[j]] = store.AckResult{
				Success: v.Success, Error: v.Error, Noop: v.Noop,
				LeaseReleased: v.LeaseReleased, DLQ: v.DLQ, Queue: la.part.queue.name,
			}
		}
		for k := range dead {
			if err := t.deadLetter(la.part.id, la.group, &dead[k], nowMs); err != nil {
				return nil, err
			}
		}
		if st != before {
			if err := t.saveLane(la.part.id, la.group, la.part.queue.id, &st, 0); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// resolveAcks sets the offset of each ack of la (0 when its transactionId is
// not in the partition). Consumers ack what they were just given, the
// messages right after the cursor, so one range read after the cursor
// resolves a whole batch; only what it misses (acks below the cursor,
// unknown ids) is looked up one by one.
func (t *txn) resolveAcks(la *laneAcks, cursor int64) error {
	want := make(map[string][]int, len(la.txns))
	for j, txn := range la.txns {
		want[txn] = append(want[txn], j)
	}
	rows, err := t.query(sqlMessagesAfterIDs, la.part.id, cursor, len(la.txns))
	if err != nil {
		return fmt.Errorf("resolve acks: %w", err)
	}
	for rows.Next() {
		var seq int64
		var txn string
		if err := rows.Scan(&seq, &txn); err != nil {
			rows.Close()
			return fmt.Errorf("resolve acks: %w", err)
		}
		for _, j := range want[txn] {
			la.acks[j].Offset = seq
		}
		delete(want, txn)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("resolve acks: %w", err)
	}
	for txn, js := range want {
		var seq int64
		var id string
		err := t.queryRow(sqlMessageByTxn, la.part.id, txn).Scan(&seq, &id)
		if errors.Is(err, sql.ErrNoRows) {
			continue // unresolvable: Offset stays 0
		}
		if err != nil {
			return fmt.Errorf("resolve ack: %w", err)
		}
		for _, j := range js {
			la.acks[j].Offset = seq
		}
	}
	return nil
}

// LeaseExtend renews every lane held by the lease.
func (s *Store) LeaseExtend(ctx context.Context, p *store.LeaseExtendParams) (*store.LeaseExtendResult, error) {
	out := &store.LeaseExtendResult{}
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		t := s.txn(tx)
		nowMs := p.Now.UnixMilli()
		rows, err := t.query(sqlLaneExtend, nowMs+int64(p.Seconds)*1000, p.LeaseID, nowMs,
			store.TenantOrDefault(p.Tenant))
		if err != nil {
			return fmt.Errorf("extend lease: %w", err)
		}
		defer rows.Close()
		var earliest int64
		for rows.Next() {
			var exp int64
			if err := rows.Scan(&exp); err != nil {
				return err
			}
			if out.Renewed == 0 || exp < earliest {
				earliest = exp
			}
			out.Renewed++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if out.Renewed > 0 {
			at := time.UnixMilli(earliest).UTC()
			out.ExpiresAt = &at
		}
		return nil
	})
	return out, err
}

// TxRun runs pushes, acks and key/value operations in one savepoint: any
// failure rolls back all of them.
func (s *Store) TxRun(ctx context.Context, p *store.TxRunParams) ([]store.TxOpResult, error) {
	var out []store.TxOpResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		nowMs := p.Now.UnixMilli()
		tenant := store.TenantOrDefault(p.Tenant)
		for _, id := range p.RequiredLeases {
			var live int
			if err := t.queryRow(sqlLeaseLive, id, nowMs, tenant).Scan(&live); err != nil {
				return fmt.Errorf("check lease: %w", err)
			}
			if live == 0 {
				return &store.TxAbortError{Reason: fmt.Sprintf("required lease %s is not held", id)}
			}
		}
		var kv kvop.TxOps // key/value operations, applied last (kv.go)
		for i, op := range p.Ops {
			if op.KV != nil {
				kv.Add(i, len(out), *op.KV)
				out = append(out, store.TxOpResult{})
				continue
			}
			if op.Ack != nil {
				res, err := t.ack(tenant, []store.Ack{*op.Ack}, p.Now)
				if err != nil {
					return err
				}
				if !res[0].Success {
					return &store.TxAbortError{Reason: fmt.Sprintf("ack of transactionId %s failed: %s",
						op.Ack.TransactionID, res[0].Error)}
				}
				out = append(out, store.TxOpResult{Ack: &res[0]})
				continue
			}
			res, err := t.push(op.Items, p.Now)
			if err != nil {
				return err
			}
			for i := range res {
				if res[i].Status != store.PushQueued {
					return store.TxPushAbort(op.Items[i], res[i])
				}
				out = append(out, store.TxOpResult{Push: &res[i]})
			}
		}
		if len(kv.Ops) > 0 {
			res, err := t.kvApply(tenant, kv.Ops, nowMs)
			return kv.Finish(res, err, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
