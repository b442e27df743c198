package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// QueueConfigure creates the queue if needed and replaces all its options.
func (s *Store) QueueConfigure(ctx context.Context, p *store.QueueConfigureParams) (*store.Queue, error) {
	opts := store.EncodeQueueOptions(p.Options)
	name := queueName{store.TenantOrDefault(p.Tenant), p.Name}
	var out *store.Queue
	err := s.inTx(ctx, "configure queue", func(t *txn) error {
		q := queueRef{}
		if err := t.tx.QueryRow(t.ctx, sqlQueueUpsert, newUUID(), name.tenant, p.Name, p.Namespace, p.Task,
			p.Options.Priority, opts, p.Now.UnixMilli()).Scan(&q.id, &q.uuid); err != nil {
			return fmt.Errorf("upsert queue: %w", err)
		}
		t.learn(func(c *cache) { c.putQueue(name, q) })
		k := partKey{q.id, store.DefaultPartition}
		parts, err := t.partitions([]partKey{k}, p.Now.UnixMilli())
		if err != nil {
			return err
		}
		out = &store.Queue{
			ID: q.uuid, Name: p.Name, Namespace: p.Namespace, Task: p.Task,
			Options: p.Options, DefaultPartitionID: parts[k].uuid, Tenant: name.tenant,
		}
		// A shorter delay, window or lease may make messages poppable
		// sooner than the deadlines the long polls of other brokers sleep
		// until: wake them all.
		t.wakeAfterCommit(store.Wake{Key: store.QueueKey(name.tenant, p.Name)})
		return nil
	})
	return out, err
}

// QueueDelete removes a queue with its partitions, messages, lanes and DLQ.
func (s *Store) QueueDelete(ctx context.Context, p *store.QueueDeleteParams) (bool, error) {
	name := queueName{store.TenantOrDefault(p.Tenant), p.Name}
	var existed bool
	err := s.inTx(ctx, "delete queue", func(t *txn) error {
		existed = false
		var id int64
		err := t.tx.QueryRow(t.ctx, sqlQueueLockByName, name.tenant, name.name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock queue: %w", err)
		}
		existed = true
		// Deleting the partitions first waits for pushes in flight on them;
		// the statements after it then see those pushes' messages.
		rows, _ := t.tx.Query(t.ctx, sqlPartitionsDelete, id)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("delete partitions: %w", err)
		}
		b := &pgx.Batch{}
		b.Queue(sqlPurgeList, ids, p.Now.UnixMilli())
		b.Queue(sqlQueueDeleteGroups, id)
		b.Queue(sqlQueueDeleteRow, id)
		if err := t.execBatch(b); err != nil {
			return fmt.Errorf("delete queue: %w", err)
		}
		t.learn(func(c *cache) { c.forgetQueue(name) })
		return nil
	})
	return existed, err
}

// newQueue is a queue a push may have to create.
type newQueue struct {
	namespace, task string
	atMs            int64
}

// queues returns the rows of the named queues, creating missing ones with
// default options and the namespace and task given for them.
func (t *txn) queues(want map[queueName]newQueue) (map[queueName]queueRef, error) {
	out := make(map[queueName]queueRef, len(want))
	var missing []queueName
	for name := range want {
		if q, ok := t.s.cache.queue(name); ok {
			out[name] = q
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	sort.Slice(missing, func(i, j int) bool {
		if missing[i].tenant != missing[j].tenant {
			return missing[i].tenant < missing[j].tenant
		}
		return missing[i].name < missing[j].name
	})
	n := len(missing)
	uuids, tenants, names, namespaces, tasks, ats := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]int64, n)
	for i, qn := range missing {
		nq := want[qn]
		uuids[i], tenants[i], names[i], namespaces[i], tasks[i], ats[i] =
			newUUID(), qn.tenant, qn.name, nq.namespace, nq.task, nq.atMs
	}
	defaults := store.EncodeQueueOptions(store.DefaultQueueOptions())
	b := &pgx.Batch{}
	b.Queue(sqlQueuesInsert, uuids, tenants, names, namespaces, tasks, defaults, ats)
	b.Queue(sqlQueuesByName, tenants, names)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("create queues: %w", err)
	}
	rows, _ := br.Query()
	var qn queueName
	var q queueRef
	_, err := pgx.ForEachRow(rows, []any{&q.id, &q.uuid, &qn.tenant, &qn.name}, func() error {
		out[qn] = q
		k, ref := qn, q
		t.learn(func(c *cache) { c.putQueue(k, ref) })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	for _, qn := range missing {
		if _, ok := out[qn]; !ok {
			return nil, fmt.Errorf("queue %q: %w", qn.name, errStale) // deleted meanwhile
		}
	}
	return out, br.Close()
}

// partitions returns the rows of the given partitions, creating missing
// ones. A created partition gets a lane for every group that has joined its
// queue.
func (t *txn) partitions(keys []partKey, nowMs int64) (map[partKey]partRef, error) {
	out := make(map[partKey]partRef, len(keys))
	var missing []partKey
	seen := make(map[partKey]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if p, ok := t.s.cache.partition(k); ok {
			out[k] = p
		} else {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	created, err := t.createPartitions(missing, nowMs, out)
	if err != nil {
		return nil, err
	}
	if len(created) > 0 {
		if err := t.addLanesForPartitions(created, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// createPartitions inserts the missing partitions (ON CONFLICT DO NOTHING),
// reads all of them back into out and returns the ids it created.
func (t *txn) createPartitions(missing []partKey, nowMs int64, out map[partKey]partRef) ([]int64, error) {
	n := len(missing)
	uuids, qids, names, ats := make([]string, n), make([]int64, n), make([]string, n), make([]int64, n)
	for i, k := range missing {
		uuids[i], qids[i], names[i], ats[i] = newUUID(), k.queueID, k.name, nowMs
	}
	b := &pgx.Batch{}
	b.Queue(sqlPartitionsInsert, uuids, qids, names, ats)
	b.Queue(sqlPartitionsByName, qids, names)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	rows, _ := br.Query()
	created, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("create partitions: %w", err)
	}
	rows, _ = br.Query()
	var p partRef
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&p.id, &p.uuid, &p.queueID, &name}, func() error {
		k, ref := partKey{p.queueID, name}, p
		out[k] = ref
		t.learn(func(c *cache) { c.putPartition(k, ref) })
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read partitions: %w", err)
	}
	for _, k := range missing {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("partition %q: %w", k.name, errStale)
		}
	}
	return created, br.Close()
}

// addLanesForPartitions gives new partitions a lane per joined group. The
// shared join lock makes a concurrent join either finish first (its group is
// then visible here) or wait for this transaction (and then see the
// partitions).
func (t *txn) addLanesForPartitions(ids []int64, parts map[partKey]partRef) error {
	isNew := make(map[int64]bool, len(ids))
	for _, id := range ids {
		isNew[id] = true
	}
	var qids []int64
	for _, p := range parts {
		if isNew[p.id] {
			qids = append(qids, p.queueID)
		}
	}
	b := &pgx.Batch{}
	b.Queue(sqlJoinLockShared, qids)
	b.Queue(sqlLanesForNewPartitions, ids)
	if err := t.execBatch(b); err != nil {
		return fmt.Errorf("create lanes: %w", err)
	}
	return nil
}

func newUUID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// QueuePurge frees the rows of deleted queues, at most p.Limit messages and
// dead letters per call, in one transaction that does not wait for its WAL
// flush (a purge lost to a crash is simply done again).
func (s *Store) QueuePurge(ctx context.Context, p *store.QueuePurgeParams) (*store.QueuePurgeResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.QueuePurgeResult{}
	err := s.inRelaxedTx(ctx, "purge deleted queues", func(t *txn) error {
		out.Deleted = 0
		rows, _ := t.tx.Query(t.ctx, sqlPurgeNext)
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		budget := limit
		for _, pid := range pids {
			done, n, err := t.purgePartition(pid, budget)
			out.Deleted += n
			budget -= n
			if err != nil {
				return err
			}
			if !done || budget <= 0 {
				break
			}
		}
		if err := t.tx.QueryRow(t.ctx, sqlPurgeMore).Scan(&out.More); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		return nil
	})
	return out, err
}

// purgePartition deletes up to budget messages, dead letters and traces of a
// deleted partition, and when none are left its lanes and its purge entry. It
// reports whether the partition is finished and how many rows it deleted.
func (t *txn) purgePartition(pid int64, budget int) (bool, int, error) {
	deleted := 0
	for _, q := range []string{sqlPurgeMessages, sqlPurgeDeadLetters} {
		tag, err := t.tx.Exec(t.ctx, q, pid, budget-deleted)
		if err != nil {
			return false, deleted, fmt.Errorf("purge: %w", err)
		}
		deleted += int(tag.RowsAffected())
		if deleted >= budget {
			return false, deleted, nil
		}
	}
	n, err := t.deleteTraces(pid, nil, budget-deleted)
	if deleted += n; err != nil || deleted >= budget {
		return false, deleted, err
	}
	b := &pgx.Batch{}
	b.Queue(sqlPurgeLanes, pid)
	b.Queue(sqlPurgeGaps, pid)
	b.Queue(sqlPurgeDone, pid)
	if err := t.execBatch(b); err != nil {
		return false, deleted, fmt.Errorf("purge: %w", err)
	}
	return true, deleted, nil
}
