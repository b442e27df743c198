package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/store"
)

// QueueConfigure creates the queue if needed and replaces all its options.
func (s *Store) QueueConfigure(ctx context.Context, p *store.QueueConfigureParams) (*store.Queue, error) {
	var out *store.Queue
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		q, err := t.queue(queueName{store.TenantOrDefault(p.Tenant), p.Name}, p.Namespace, p.Task, p.Now)
		if err != nil {
			return err
		}
		opts := store.EncodeQueueOptions(p.Options)
		if _, err := t.exec(sqlQueueUpdate, p.Namespace, p.Task, p.Options.Priority, string(opts), q.id); err != nil {
			return fmt.Errorf("update queue: %w", err)
		}
		q.namespace, q.task, q.opts = p.Namespace, p.Task, p.Options
		// Counts of unconsumed messages are kept only while a queue has a
		// cap: a queue whose cap comes back must count afresh.
		t.cache.unconsumed.Purge()
		part, err := t.partition(q, store.DefaultPartition, p.Now)
		if err != nil {
			return err
		}
		out = &store.Queue{
			ID: q.uuid, Name: q.name, Namespace: q.namespace, Task: q.task,
			Options: q.opts, DefaultPartitionID: part.uuid, Tenant: q.tenant,
		}
		return nil
	})
	return out, err
}

// QueueDelete removes a queue with its partitions, messages, lanes and DLQ.
func (s *Store) QueueDelete(ctx context.Context, p *store.QueueDeleteParams) (bool, error) {
	name := queueName{store.TenantOrDefault(p.Tenant), p.Name}
	var existed bool
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		q, err := t.existingQueue(name)
		if err != nil || q == nil {
			return err
		}
		existed = true
		for _, stmt := range sqlQueueDelete {
			if _, err := tx.ExecContext(t.ctx, stmt, q.id, p.Now.UnixMilli()); err != nil {
				return fmt.Errorf("delete queue: %w", err)
			}
		}
		t.cache.reset()
		return nil
	})
	return existed, err
}

// QueuePurge frees the rows of deleted queues, at most p.Limit messages and
// dead letters in one writer job, so that pushes and pops queued behind it
// wait only for a short step.
func (s *Store) QueuePurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.QueuePurgeResult{}
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		out.Deleted = 0
		rows, err := tx.QueryContext(ctx, sqlPurgeNext)
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		var pids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			pids = append(pids, id)
		}
		rows.Close()
		budget := limit
		for _, pid := range pids {
			done, n, err := purgePartition(ctx, tx, pid, budget)
			out.Deleted += n
			budget -= n
			if err != nil {
				return err
			}
			if !done || budget <= 0 {
				break
			}
		}
		return tx.QueryRowContext(ctx, sqlPurgeMore).Scan(&out.More)
	})
	return out, err
}

// purgePartition deletes up to budget messages, dead letters and traces of a
// deleted partition, and when none are left its lanes and the partition itself. It
// reports whether the partition is gone and how many rows it deleted.
func purgePartition(ctx context.Context, tx *sql.Tx, pid int64, budget int) (bool, int, error) {
	deleted := 0
	for _, q := range []string{sqlPurgeMessages, sqlPurgeDeadLetters} {
		res, err := tx.ExecContext(ctx, q, pid, budget-deleted)
		if err != nil {
			return false, deleted, fmt.Errorf("purge: %w", err)
		}
		n, _ := res.RowsAffected()
		deleted += int(n)
		if deleted >= budget {
			return false, deleted, nil
		}
	}
	n, err := deleteTraces(ctx, tx, pid, nil, budget-deleted)
	if deleted += n; err != nil || deleted >= budget {
		return false, deleted, err
	}
	for _, q := range []string{sqlPurgeLanes, sqlPurgePartition, sqlPurgeDone} {
		if _, err := tx.ExecContext(ctx, q, pid); err != nil {
			return false, deleted, fmt.Errorf("purge: %w", err)
		}
	}
	return true, deleted, nil
}

// existingQueue returns the named queue, or nil if there is none.
func (t *txn) existingQueue(name queueName) (*queueRow, error) {
	if q, ok := t.cache.queues.Get(name); ok {
		return q, nil
	}
	q := &queueRow{tenant: name.tenant, name: name.name}
	var opts string
	err := t.queryRow(sqlQueueByName, name.tenant, name.name).Scan(&q.id, &q.uuid, &q.namespace, &q.task, &opts)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	if q.opts, err = store.DecodeQueueOptions([]byte(opts)); err != nil {
		return nil, fmt.Errorf("queue %q: %w", name.name, err)
	}
	t.cache.queues.Add(name, q)
	return q, nil
}

// queue returns the named queue, creating it with default options and the
// given namespace and task if it does not exist.
func (t *txn) queue(name queueName, namespace, task string, now time.Time) (*queueRow, error) {
	q, err := t.existingQueue(name)
	if err != nil || q != nil {
		return q, err
	}
	q = &queueRow{
		uuid: mustUUID(), tenant: name.tenant, name: name.name, namespace: namespace, task: task,
		opts: store.DefaultQueueOptions(),
	}
	opts := store.EncodeQueueOptions(q.opts)
	res, err := t.exec(sqlQueueInsert, q.uuid, name.tenant, name.name, namespace, task, q.opts.Priority,
		string(opts), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("create queue: %w", err)
	}
	if q.id, err = res.LastInsertId(); err != nil {
		return nil, err
	}
	t.cache.queues.Add(name, q)
	return q, nil
}

// partition returns the named partition of q, creating it if needed with a
// lane for every group that has joined q.
func (t *txn) partition(q *queueRow, name string, now time.Time) (*partitionRow, error) {
	p, err := t.existingPartition(q, name)
	if err != nil || p != nil {
		return p, err
	}
	p = &partitionRow{name: name, queue: q, uuid: mustUUID()}
	res, err := t.exec(sqlPartitionInsert, p.uuid, q.id, name, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("create partition: %w", err)
	}
	if p.id, err = res.LastInsertId(); err != nil {
		return nil, err
	}
	if _, err := t.exec(sqlLanesForPartition, p.id, q.id); err != nil {
		return nil, fmt.Errorf("create lanes: %w", err)
	}
	t.cache.addPartition(p)
	return p, nil
}

// existingPartition returns the named partition of q, or nil.
func (t *txn) existingPartition(q *queueRow, name string) (*partitionRow, error) {
	if p, ok := t.cache.partitions.Get(partitionKey{q.id, name}); ok {
		p.queue = q // the queue's current row (see cache)
		return p, nil
	}
	p := &partitionRow{name: name, queue: q}
	err := t.queryRow(sqlPartitionByName, q.id, name).Scan(&p.id, &p.uuid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read partition: %w", err)
	}
	t.cache.addPartition(p)
	return p, nil
}

// partitionByUUID resolves a client-supplied partitionId, or returns nil.
func (t *txn) partitionByUUID(id string) (*partitionRow, error) {
	if p, ok := t.cache.byUUID.Get(id); ok {
		// The queue's current row (see cache); the same id, since a
		// deleted queue resets the cache.
		q, err := t.existingQueue(queueName{p.queue.tenant, p.queue.name})
		if err != nil {
			return nil, err
		}
		if q != nil && q.id == p.queue.id {
			p.queue = q
		}
		return p, nil
	}
	p := &partitionRow{uuid: id}
	var qn queueName
	err := t.queryRow(sqlPartitionByUUID, id).Scan(&p.id, &p.name, &qn.tenant, &qn.name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read partition: %w", err)
	}
	if p.queue, err = t.existingQueue(qn); err != nil {
		return nil, err
	}
	t.cache.addPartition(p)
	return p, nil
}

func mustUUID() string {
	return uuid.Must(uuid.NewV7()).String()
}
