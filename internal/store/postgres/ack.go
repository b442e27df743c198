package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/kvop"
	"github.com/queen-go/queen/internal/store/lane"
)

// MessageAckMany commits a batch of acknowledgements in one transaction.
func (s *Store) MessageAckMany(ctx context.Context, p *store.MessageAckManyParams) ([]store.AckResult, error) {
	var out []store.AckResult
	err := s.inRelaxedTx(ctx, "ack", func(t *txn) error {
		var err error
		out, err = t.ack(store.TenantOrDefault(p.Tenant), p.Acks, p.Now.UnixMilli())
		return err
	})
	return out, err
}

type laneKey struct {
	pid   int64
	group string
}

// ackTarget is an ack resolved to its partition, queue and offset.
type ackTarget struct {
	pid, queueID, lastOffset, seq int64
	queue                         string
	policy                        lane.Policy
}

// laneAcks gathers the acks of one call that target one lane.
type laneAcks struct {
	key     laneKey
	target  *ackTarget // of the first ack; partition and queue are shared
	indexes []int
	acks    []lane.Ack
}

// ack resolves every ack and locks every lane it touches in two pipelined
// statements, applies the lane rules to each lane once with all of its
// acks, and writes lanes, dead letters and wake-ups in one more round trip.
func (t *txn) ack(tenant string, acks []store.Ack, nowMs int64) ([]store.AckResult, error) {
	out := make([]store.AckResult, len(acks))
	targets, states, err := t.resolveAcks(tenant, acks)
	if err != nil {
		return nil, err
	}
	byLane := make(map[laneKey]*laneAcks)
	var order []*laneAcks
	for i, a := range acks {
		tg := targets[i]
		if tg == nil {
			out[i] = store.AckResult{Noop: true, Error: api.ReasonUnresolvable}
			continue
		}
		k := laneKey{tg.pid, a.ConsumerGroup}
		la := byLane[k]
		if la == nil {
			la = &laneAcks{key: k, target: tg}
			byLane[k] = la
			order = append(order, la)
		}
		la.indexes = append(la.indexes, i)
		la.acks = append(la.acks, lane.Ack{Offset: tg.seq, Status: a.Status, LeaseID: a.LeaseID, Error: a.Error})
	}
	w := &laneWrites{}
	for _, la := range order {
		applyAcks(tenant, la, states[la.key], nowMs, out, w)
	}
	if err := t.writeLanes(w); err != nil {
		return nil, err
	}
	return out, nil
}

// applyAcks runs lane.Apply on one lane and records verdicts and writes.
func applyAcks(tenant string, la *laneAcks, st lane.State, nowMs int64, out []store.AckResult, w *laneWrites) {
	before := st
	verdicts, dead := lane.ApplyPolicy(&st, la.acks, la.target.policy, nowMs)
	for j, v := range verdicts {
		out[la.indexes[j]] = store.AckResult{
			Success: v.Success, Error: v.Error, Noop: v.Noop,
			LeaseReleased: v.LeaseReleased, DLQ: v.DLQ, Queue: la.target.queue,
		}
		if v.LeaseReleased {
			w.wakeQueue(store.QueueKey(tenant, la.target.queue))
		}
	}
	for k := range dead {
		w.deadLetter(la.key.pid, la.key.group, &dead[k], nowMs)
	}
	if st == before {
		return
	}
	w.save(la.key.pid, la.key.group, &st, 0)
	if st.Cursor >= la.target.lastOffset {
		w.settle(la.key.pid, la.key.group)
	}
}

// resolveAcks returns, per ack, its target (nil if the partition is
// unknown), and the state of every lane touched, locked in key order. Lanes
// that have no row yet (a group acking a queue it never popped) are created.
func (t *txn) resolveAcks(tenant string, acks []store.Ack) ([]*ackTarget, map[laneKey]lane.State, error) {
	puuids, txns, groups := make([]string, len(acks)), make([]string, len(acks)), make([]string, len(acks))
	for i, a := range acks {
		puuids[i], txns[i], groups[i] = a.PartitionID, a.TransactionID, a.ConsumerGroup
	}
	b := &pgx.Batch{}
	b.Queue(sqlAckResolve, puuids, txns, tenant)
	b.Queue(sqlLanesLock, puuids, groups, tenant)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	targets, err := readTargets(br, len(acks))
	if err != nil {
		return nil, nil, err
	}
	states, err := readLanes(br)
	if err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("resolve acks: %w", err)
	}
	if missing := missingLanes(acks, targets, states); len(missing.pid) > 0 {
		if states, err = t.createLanes(tenant, missing, puuids, groups); err != nil {
			return nil, nil, err
		}
	}
	return targets, states, nil
}

func readTargets(br pgx.BatchResults, n int) ([]*ackTarget, error) {
	targets := make([]*ackTarget, n)
	policies := make(map[string]lane.Policy) // per queue, parsed once
	rows, _ := br.Query()
	var ord int64
	var tg ackTarget
	var opts []byte
	_, err := pgx.ForEachRow(rows, []any{&ord, &tg.pid, &tg.queueID, &tg.lastOffset, &tg.queue, &opts, &tg.seq},
		func() error {
			pol, ok := policies[tg.queue]
			if !ok {
				o, err := store.DecodeQueueOptions(opts)
				if err != nil {
					return fmt.Errorf("queue %q: %w", tg.queue, err)
				}
				pol = lane.PolicyOf(o)
				policies[tg.queue] = pol
			}
			r := tg
			r.policy = pol
			targets[ord-1] = &r
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("resolve acks: %w", err)
	}
	return targets, nil
}

func readLanes(br pgx.BatchResults) (map[laneKey]lane.State, error) {
	states := make(map[laneKey]lane.State)
	rows, _ := br.Query()
	var k laneKey
	var st lane.State
	_, err := pgx.ForEachRow(rows, []any{&k.pid, &k.group, &st.Cursor, &st.LeaseID, &st.LeaseExpiresAt,
		&st.BatchEnd, &st.HeadAttempts, &st.RetryAt}, func() error {
		states[k] = st
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock lanes: %w", err)
	}
	return states, nil
}

// newLanes are lane rows to create: partition, group, queue.
type newLanes struct {
	pid, queueID []int64
	group        []string
}

func missingLanes(acks []store.Ack, targets []*ackTarget, states map[laneKey]lane.State) newLanes {
	var m newLanes
	seen := make(map[laneKey]bool)
	for i, tg := range targets {
		if tg == nil {
			continue
		}
		k := laneKey{tg.pid, acks[i].ConsumerGroup}
		if _, ok := states[k]; ok || seen[k] {
			continue
		}
		seen[k] = true
		m.pid = append(m.pid, k.pid)
		m.group = append(m.group, k.group)
		m.queueID = append(m.queueID, tg.queueID)
	}
	return m
}

// createLanes inserts the missing lanes and locks all lanes again (those
// already locked cost nothing more).
func (t *txn) createLanes(tenant string, m newLanes, puuids, groups []string) (map[laneKey]lane.State, error) {
	b := &pgx.Batch{}
	b.Queue(sqlLanesCreate, m.pid, m.group, m.queueID)
	b.Queue(sqlLanesLock, puuids, groups, tenant)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("create lanes: %w", err)
	}
	states, err := readLanes(br)
	if err != nil {
		return nil, err
	}
	return states, br.Close()
}

// LeaseExtend renews every lane held by the lease, never shortening it.
func (s *Store) LeaseExtend(ctx context.Context, p *store.LeaseExtendParams) (*store.LeaseExtendResult, error) {
	var out *store.LeaseExtendResult
	err := s.inRelaxedTx(ctx, "extend lease", func(t *txn) error {
		out = &store.LeaseExtendResult{}
		nowMs := p.Now.UnixMilli()
		rows, _ := t.tx.Query(t.ctx, sqlLeaseExtend, nowMs+int64(p.Seconds)*1000, p.LeaseID, nowMs,
			store.TenantOrDefault(p.Tenant))
		var earliest, exp int64
		_, err := pgx.ForEachRow(rows, []any{&exp}, func() error {
			if out.Renewed == 0 || exp < earliest {
				earliest = exp
			}
			out.Renewed++
			return nil
		})
		if err != nil {
			return fmt.Errorf("extend lease: %w", err)
		}
		if out.Renewed > 0 {
			at := time.UnixMilli(earliest).UTC()
			out.ExpiresAt = &at
		}
		return nil
	})
	return out, err
}

// TxRun runs pushes, acks and key/value operations in one database
// transaction: any failure rolls back all of them.
func (s *Store) TxRun(ctx context.Context, p *store.TxRunParams) ([]store.TxOpResult, error) {
	var out []store.TxOpResult
	err := s.inTx(ctx, "transaction", func(t *txn) error {
		out = nil
		nowMs := p.Now.UnixMilli()
		tenant := store.TenantOrDefault(p.Tenant)
		if err := t.requireLeases(tenant, p.RequiredLeases, nowMs); err != nil {
			return err
		}
		var kv kvop.TxOps // key/value operations, applied last (kv.go)
		for i, op := range p.Ops {
			if op.KV != nil {
				kv.Add(i, len(out), *op.KV)
				out = append(out, store.TxOpResult{})
				continue
			}
			res, err := t.txOp(tenant, op, nowMs)
			if err != nil {
				return err
			}
			out = append(out, res...)
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

// requireLeases locks the lanes of the required leases and fails the
// transaction if any lease is not live.
func (t *txn) requireLeases(tenant string, ids []string, nowMs int64) error {
	if len(ids) == 0 {
		return nil
	}
	rows, _ := t.tx.Query(t.ctx, sqlLeasesLive, ids, nowMs, tenant)
	live, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("check leases: %w", err)
	}
	held := make(map[string]bool, len(live))
	for _, id := range live {
		held[id] = true
	}
	for _, id := range ids {
		if !held[id] {
			return &store.TxAbortError{Reason: fmt.Sprintf("required lease %s is not held", id)}
		}
	}
	return nil
}

// txOp runs one operation of a transaction and turns a logical failure into
// a *store.TxAbortError.
func (t *txn) txOp(tenant string, op store.TxOp, nowMs int64) ([]store.TxOpResult, error) {
	if op.Ack != nil {
		res, err := t.ack(tenant, []store.Ack{*op.Ack}, nowMs)
		if err != nil {
			return nil, err
		}
		if !res[0].Success {
			return nil, &store.TxAbortError{Reason: fmt.Sprintf("ack of transactionId %s failed: %s",
				op.Ack.TransactionID, res[0].Error)}
		}
		return []store.TxOpResult{{Ack: &res[0]}}, nil
	}
	if len(op.Items) == 0 {
		return nil, nil
	}
	entries := make([]pushEntry, len(op.Items))
	for i := range op.Items {
		entries[i] = pushEntry{item: &op.Items[i], atMs: nowMs}
	}
	res, err := t.push(entries)
	if err != nil {
		return nil, err
	}
	out := make([]store.TxOpResult, len(res))
	for i := range res {
		if res[i].Status != store.PushQueued {
			return nil, store.TxPushAbort(op.Items[i], res[i])
		}
		out[i] = store.TxOpResult{Push: &res[i]}
	}
	return out, nil
}
