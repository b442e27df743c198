package transfersql

import (
	"fmt"

	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// Export is an engine's statements for the export of queues and what hangs
// off them, where the dialects differ (casts, greatest or max, how a
// detached partition is told). The reading of their rows is written once
// here; each read is a page (or a queue's few rows), read whole before the
// caller acts on it, on the Q the engine gives (a read transaction, or the
// pool).
type Export struct {
	// Queues answers every queue: tenant, name, namespace, task, options
	// (JSON text), created at.
	Queues string
	// Partitions answers the partitions of queue ($1 tenant, $2 name):
	// id, name, created at.
	Partitions string
	// Partition answers one partition by id ($1): row id, queue row id,
	// cleared offset, last offset.
	Partition string
	// QueueID answers a queue's row id ($1 tenant, $2 name).
	QueueID string
	// Messages answers a page of a partition's messages ($1 row id, $2
	// after offset, $3 limit): offset, id, transaction id, trace id,
	// producer sub, payload, created at, seal.
	Messages string
	// Groups answers the groups of a queue ($1 queue row id): name,
	// subscribed from, created at.
	Groups string
	// Lanes answers the cursors of a queue's groups ($1 queue row id):
	// group, partition id, cursor.
	Lanes string
	// DeadLetters answers a page of a partition's dead letters ($1 row id,
	// $2 after id, $3 cleared offset, $4 limit): id, transaction id, group,
	// error, retry count, failed at.
	DeadLetters string
	// KV answers a page of key/value rows ($1, $2, $3 the last row's
	// tenant, namespace and key, $4 limit).
	KV string
}

// Partition is a partition's row as the migration needs it.
type Partition struct {
	ID, QueueID, Cleared, Last int64
}

// Each calls fn with each of rows, unless err.
func Each[T any](rows []T, err error, fn func(T) error) error {
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// ReadQueues reads every queue with its options.
func (x Export) ReadQueues(q sqlq.Q) ([]store.TransferQueue, error) {
	return sqlq.Collect(q, x.Queues, nil, func(r sqlq.Row) (store.TransferQueue, error) {
		var t store.TransferQueue
		var opts string
		var at int64
		if err := r.Scan(&t.Tenant, &t.Name, &t.Namespace, &t.Task, &opts, &at); err != nil {
			return t, err
		}
		o, err := store.DecodeQueueOptions([]byte(opts))
		if err != nil {
			return t, fmt.Errorf("queue %q: %w", t.Name, err)
		}
		t.Options, t.CreatedAt = o, fromMs(at)
		return t, nil
	})
}

// ReadPartitions reads the partitions of a queue, by name.
func (x Export) ReadPartitions(q sqlq.Q, ref store.TransferQueueRef) ([]store.TransferPartition, error) {
	return sqlq.Collect(q, x.Partitions, []any{store.TenantOrDefault(ref.Tenant), ref.Name},
		func(r sqlq.Row) (store.TransferPartition, error) {
			var p store.TransferPartition
			var at int64
			err := r.Scan(&p.ID, &p.Name, &at)
			p.CreatedAt = fromMs(at)
			return p, err
		})
}

// ReadPartition reads a partition's row; store.ErrNotFound when there is
// none.
func (x Export) ReadPartition(q sqlq.Q, id string) (Partition, error) {
	var p Partition
	if err := q.Row(x.Partition, id).Scan(&p.ID, &p.QueueID, &p.Cleared, &p.Last); err != nil {
		return p, fmt.Errorf("partition %s: %w", id, err)
	}
	return p, nil
}

// ReadMessages reads a page of a partition's messages after offset after
// (and after its cleared ones).
func (x Export) ReadMessages(q sqlq.Q, partitionID string, after int64, limit int) ([]store.TransferMessage, error) {
	p, err := x.ReadPartition(q, partitionID)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(q, x.Messages, []any{p.ID, max(after, p.Cleared), limit},
		func(r sqlq.Row) (store.TransferMessage, error) {
			var m store.TransferMessage
			var at int64
			err := r.Scan(&m.Offset, &m.ID, &m.TransactionID, &m.TraceID, &m.ProducerSub, &m.Payload, &at, &m.Sealed)
			m.CreatedAt = fromMs(at)
			return m, err
		})
}

// ReadGroups reads a queue's groups with their cursor in each partition.
func (x Export) ReadGroups(q sqlq.Q, ref store.TransferQueueRef) ([]store.TransferGroup, error) {
	var qid int64
	if err := q.Row(x.QueueID, store.TenantOrDefault(ref.Tenant), ref.Name).Scan(&qid); err != nil {
		return nil, fmt.Errorf("queue %q: %w", ref.Name, err)
	}
	out, err := sqlq.Collect(q, x.Groups, []any{qid}, func(r sqlq.Row) (store.TransferGroup, error) {
		var g store.TransferGroup
		var from, at int64
		err := r.Scan(&g.Name, &from, &at)
		g.SubscribedFrom, g.CreatedAt, g.Cursors = fromMs(from), fromMs(at), map[string]int64{}
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	byName := make(map[string]int, len(out))
	for i, g := range out {
		byName[g.Name] = i
	}
	err = q.Each(x.Lanes, []any{qid}, func(r sqlq.Row) error {
		var group, part string
		var cursor int64
		if err := r.Scan(&group, &part, &cursor); err != nil {
			return err
		}
		if i, ok := byName[group]; ok {
			out[i].Cursors[part] = cursor
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lanes: %w", err)
	}
	return out, nil
}

// ReadDeadLetters reads a page of a partition's dead letters after id
// afterID, those of cleared messages left out.
func (x Export) ReadDeadLetters(q sqlq.Q, partitionID string, afterID int64, limit int) ([]store.TransferDeadLetter, error) {
	p, err := x.ReadPartition(q, partitionID)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(q, x.DeadLetters, []any{p.ID, afterID, p.Cleared, limit},
		func(r sqlq.Row) (store.TransferDeadLetter, error) {
			var d store.TransferDeadLetter
			var at int64
			err := r.Scan(&d.ID, &d.TransactionID, &d.Group, &d.Error, &d.RetryCount, &at)
			d.FailedAt = fromMs(at)
			return d, err
		})
}

// ReadKV reads a page of key/value rows after after.
func (x Export) ReadKV(q sqlq.Q, after store.TransferKV, limit int) ([]store.TransferKV, error) {
	return sqlq.Collect(q, x.KV, []any{after.Tenant, after.Namespace, after.Key, limit},
		func(r sqlq.Row) (store.TransferKV, error) {
			var k store.TransferKV
			err := r.Scan(&k.Tenant, &k.Namespace, &k.Key, &k.Value, &k.Version, &k.ExpiresAt, &k.CreatedAt, &k.UpdatedAt)
			return k, err
		})
}

// fromMs is a Unix ms column as a time, 0 the zero time.
func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
