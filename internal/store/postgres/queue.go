package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// QueueConfigure creates the queue if needed and replaces all its options.
func (s *Store) QueueConfigure(ctx context.Context, p *store.QueueConfigureParams) (*store.Queue, error) {
	opts, err := json.Marshal(p.Options)
	if err != nil {
		return nil, err
	}
	var out *store.Queue
	err = s.inTx(ctx, "configure queue", func(t *txn) error {
		q := queueRef{}
		if err := t.tx.QueryRow(t.ctx, sqlQueueUpsert, newUUID(), p.Name, p.Namespace, p.Task,
			p.Options.Priority, opts, p.Now.UnixMilli()).Scan(&q.id, &q.uuid); err != nil {
			return fmt.Errorf("upsert queue: %w", err)
		}
		t.learn(func(c *cache) { c.putQueue(p.Name, q) })
		k := partKey{q.id, store.DefaultPartition}
		parts, err := t.partitions([]partKey{k}, p.Now.UnixMilli())
		if err != nil {
			return err
		}
		out = &store.Queue{
			ID: q.uuid, Name: p.Name, Namespace: p.Namespace, Task: p.Task,
			Options: p.Options, DefaultPartitionID: parts[k].uuid,
		}
		return nil
	})
	return out, err
}

// QueueDelete removes a queue with its partitions, messages, lanes and DLQ.
func (s *Store) QueueDelete(ctx context.Context, p *store.QueueDeleteParams) (bool, error) {
	name := p.Name
	var existed bool
	err := s.inTx(ctx, "delete queue", func(t *txn) error {
		existed = false
		var id int64
		err := t.tx.QueryRow(t.ctx, sqlQueueLockByName, name).Scan(&id)
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
		for _, q := range sqlQueueDeleteByPartitions {
			b.Queue(q, ids)
		}
		for _, q := range sqlQueueDeleteByQueue {
			b.Queue(q, id)
		}
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
func (t *txn) queues(want map[string]newQueue) (map[string]queueRef, error) {
	out := make(map[string]queueRef, len(want))
	var missing []string
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
	sort.Strings(missing)
	uuids, namespaces, tasks, ats := make([]string, len(missing)), make([]string, len(missing)),
		make([]string, len(missing)), make([]int64, len(missing))
	for i, name := range missing {
		nq := want[name]
		uuids[i], namespaces[i], tasks[i], ats[i] = newUUID(), nq.namespace, nq.task, nq.atMs
	}
	defaults, _ := json.Marshal(store.DefaultQueueOptions())
	b := &pgx.Batch{}
	b.Queue(sqlQueuesInsert, uuids, missing, namespaces, tasks, defaults, ats)
	b.Queue(sqlQueuesByName, missing)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("create queues: %w", err)
	}
	rows, _ := br.Query()
	var name string
	var q queueRef
	_, err := pgx.ForEachRow(rows, []any{&q.id, &q.uuid, &name}, func() error {
		out[name] = q
		n, ref := name, q
		t.learn(func(c *cache) { c.putQueue(n, ref) })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	for _, name := range missing {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("queue %q: %w", name, errStale) // deleted meanwhile
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
