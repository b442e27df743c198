package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
	"github.com/queen-go/queen/internal/store/transfersql"
)

// The migration's reads and writes (store.TransferStore). Offsets here are
// the table-wide rowids of messages.seq; positions cross the interface as
// counts of messages, which the import turns back into cursors.
const (
	sqlXQueueCount = `SELECT count(*) FROM queues`
	sqlXCounts     = `SELECT
		(SELECT count(*) FROM queues),
		(SELECT count(*) FROM partitions p JOIN queues q ON q.id = p.queue_id),
		(SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id JOIN queues q ON q.id = p.queue_id
			WHERE m.seq > p.cleared_offset),
		(SELECT count(*) FROM (SELECT queue_id, consumer_group FROM consumer_groups
			UNION SELECT queue_id, consumer_group FROM lanes) g JOIN queues q ON q.id = g.queue_id),
		(SELECT count(*) FROM dead_letters d JOIN partitions p ON p.id = d.partition_id
			JOIN queues q ON q.id = p.queue_id WHERE d.message_seq > p.cleared_offset),
		(SELECT count(*) FROM kv)`

	sqlXQueues     = `SELECT tenant, name, namespace, task, options, created_at FROM queues ORDER BY tenant, name`
	sqlXPartitions = `SELECT p.uuid, p.name, p.created_at FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = ? AND q.name = ? ORDER BY p.name`
	sqlXPartition = `SELECT id, queue_id, cleared_offset, last_offset FROM partitions WHERE uuid = ? AND queue_id > 0`
	sqlXQueueID   = `SELECT id FROM queues WHERE tenant = ? AND name = ?`
	sqlXMessages  = `SELECT seq, id, transaction_id, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), payload, created_at,
			sealed
		FROM messages WHERE partition_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	sqlXGroups = `SELECT g.consumer_group, max(g.subscribed_from), max(g.created_at) FROM (
			SELECT consumer_group, subscribed_from, created_at FROM consumer_groups WHERE queue_id = ?1
			UNION ALL SELECT consumer_group, 0, 0 FROM lanes WHERE queue_id = ?1) g
		GROUP BY g.consumer_group ORDER BY g.consumer_group`
	sqlXLanes = `SELECT l.consumer_group, p.uuid, max(l.cursor, p.cleared_offset)
		FROM lanes l JOIN partitions p ON p.id = l.partition_id WHERE l.queue_id = ? AND p.queue_id = l.queue_id`
	sqlXDeadLetters = `SELECT d.id, m.transaction_id, d.consumer_group, d.error, d.retry_count, d.failed_at
		FROM dead_letters d JOIN messages m ON m.seq = d.message_seq
		WHERE d.partition_id = ?1 AND d.id > ?2 AND d.message_seq > ?3 ORDER BY d.id LIMIT ?4`

	sqlXPartitionInsert = `INSERT INTO partitions (uuid, queue_id, name, created_at) VALUES (?, ?, ?, ?)`
	sqlXPartitionMoved  = `UPDATE partitions SET last_offset = ?1, last_message_at = max(last_message_at, ?2) WHERE id = ?3`
	sqlXQueuePartitions = `SELECT id, uuid FROM partitions WHERE queue_id = ?`
	// The cursor after the first n (?2 > 0) messages of partition ?1, or
	// its last offset when it holds fewer.
	sqlXCursorAfter = `SELECT COALESCE((SELECT seq FROM messages WHERE partition_id = ?1 ORDER BY seq LIMIT 1 OFFSET ?2 - 1),
		(SELECT last_offset FROM partitions WHERE id = ?1))`
	sqlXLaneInsert = `INSERT INTO lanes (partition_id, consumer_group, queue_id, cursor, ready)
		VALUES (?1, ?2, ?3, ?4, (SELECT last_offset FROM partitions WHERE id = ?1) > ?4)
		ON CONFLICT (partition_id, consumer_group) DO UPDATE SET cursor = excluded.cursor, ready = excluded.ready`
	sqlXGroupInsert = `INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlXDeadLetterInsert = `INSERT INTO dead_letters
		(partition_id, message_seq, consumer_group, error, retry_count, failed_at)
		SELECT ?1, seq, ?3, ?4, ?5, ?6 FROM messages WHERE partition_id = ?1 AND transaction_id = ?2`
)

var _ store.TransferStore = (*Store)(nil)

// TransferQueueCount counts the queues of every tenant.
func (s *Store) TransferQueueCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(ctx, "count queues", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, sqlXQueueCount).Scan(&n)
	})
	return n, err
}

// TransferCounts counts what a migration copies.
func (s *Store) TransferCounts(ctx context.Context) (store.TransferCounts, error) {
	var c store.TransferCounts
	err := s.read(ctx, "count rows", func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, sqlXCounts).Scan(&c.Queues, &c.Partitions, &c.Messages, &c.ConsumerGroups,
			&c.DeadLetters, &c.KV); err != nil {
			return err
		}
		return transfersql.ReadCounts(txQ(ctx, tx), &c)
	})
	return c, err
}

// exportSQL is this engine's part of the export; transfersql reads the
// rows.
var exportSQL = transfersql.Export{
	Queues: sqlXQueues, Partitions: sqlXPartitions, Partition: sqlXPartition, QueueID: sqlXQueueID,
	Messages: sqlXMessages, Groups: sqlXGroups, Lanes: sqlXLanes, DeadLetters: sqlXDeadLetters, KV: sqlXKV,
}

// exportRead runs read in one read transaction.
func exportRead[T any](s *Store, ctx context.Context, op string, read func(sqlq.Q) ([]T, error)) ([]T, error) {
	var out []T
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		var err error
		out, err = read(txQ(ctx, tx))
		return err
	})
	return out, err
}

// ExportQueues calls fn with every queue. Queues are few: they are read
// whole before fn runs.
func (s *Store) ExportQueues(ctx context.Context, fn func(store.TransferQueue) error) error {
	qs, err := exportRead(s, ctx, "export queues", exportSQL.ReadQueues)
	return transfersql.Each(qs, err, fn)
}

// ExportPartitions calls fn with every partition of a queue.
func (s *Store) ExportPartitions(ctx context.Context, q store.TransferQueueRef, fn func(store.TransferPartition) error) error {
	ps, err := exportRead(s, ctx, "export partitions", func(tx sqlq.Q) ([]store.TransferPartition, error) {
		return exportSQL.ReadPartitions(tx, q)
	})
	return transfersql.Each(ps, err, fn)
}

// ExportMessages returns a page of a partition's messages after offset after.
func (s *Store) ExportMessages(ctx context.Context, partitionID string, after int64, limit int) ([]store.TransferMessage, error) {
	return exportRead(s, ctx, "export messages", func(tx sqlq.Q) ([]store.TransferMessage, error) {
		return exportSQL.ReadMessages(tx, partitionID, after, limit)
	})
}

// ExportGroups returns a queue's groups with their cursors.
func (s *Store) ExportGroups(ctx context.Context, q store.TransferQueueRef) ([]store.TransferGroup, error) {
	return exportRead(s, ctx, "export groups", func(tx sqlq.Q) ([]store.TransferGroup, error) {
		return exportSQL.ReadGroups(tx, q)
	})
}

// ExportDeadLetters returns a page of a partition's dead letters.
func (s *Store) ExportDeadLetters(ctx context.Context, partitionID string, afterID int64, limit int) ([]store.TransferDeadLetter, error) {
	return exportRead(s, ctx, "export dead letters", func(tx sqlq.Q) ([]store.TransferDeadLetter, error) {
		return exportSQL.ReadDeadLetters(tx, partitionID, afterID, limit)
	})
}

// ImportQueue creates a queue with its settings.
func (s *Store) ImportQueue(ctx context.Context, q store.TransferQueue) error {
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		name := queueName{store.TenantOrDefault(q.Tenant), q.Name}
		if existing, err := t.existingQueue(name); err != nil || existing != nil {
			if err == nil {
				err = fmt.Errorf("queue %q exists already", q.Name)
			}
			return err
		}
		row, err := t.queue(name, q.Namespace, q.Task, q.CreatedAt)
		if err != nil {
			return err
		}
		opts := store.EncodeQueueOptions(q.Options)
		if _, err := t.exec(sqlQueueUpdate, q.Namespace, q.Task, q.Options.Priority, string(opts), row.id); err != nil {
			return fmt.Errorf("set queue options: %w", err)
		}
		row.opts = q.Options
		return nil
	})
}

// ImportPartition creates a partition of a queue, keeping p.ID when set.
func (s *Store) ImportPartition(ctx context.Context, q store.TransferQueueRef, p store.TransferPartition) (string, error) {
	id := p.ID
	if id == "" {
		id = mustUUID()
	}
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		row, err := t.existingQueue(queueName{store.TenantOrDefault(q.Tenant), q.Name})
		if err != nil {
			return err
		}
		if row == nil {
			return fmt.Errorf("queue %q: %w", q.Name, store.ErrNotFound)
		}
		res, err := tx.ExecContext(ctx, sqlXPartitionInsert, id, row.id, p.Name, p.CreatedAt.UnixMilli())
		if err != nil {
			return fmt.Errorf("create partition %q: %w", p.Name, err)
		}
		pid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := t.exec(sqlLanesForPartition, pid, row.id); err != nil {
			return fmt.Errorf("create lanes: %w", err)
		}
		return nil
	})
	return id, err
}

// ImportMessages appends messages to a partition in one transaction, at
// offsets from the writer's counter, each with its own creation time; the
// partition's last offset (and so its message count, by trigger) moves once.
func (s *Store) ImportMessages(ctx context.Context, partitionID string, ms []store.TransferMessage) error {
	if len(ms) == 0 {
		return nil
	}
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		p, err := exportSQL.ReadPartition(txQ(ctx, tx), partitionID)
		if err != nil {
			return err
		}
		var last, newest int64
		for rest := ms; len(rest) > 0; {
			n := min(len(rest), maxInsertRows)
			for n&(n-1) != 0 { // statements exist for powers of two rows
				n &= n - 1
			}
			args := make([]any, 0, 9*n)
			for _, m := range rest[:n] {
				last = t.takeSeq()
				at := m.CreatedAt.UnixMilli()
				newest = max(newest, at)
				args = append(args, last, p.ID, m.ID, m.TransactionID, nullString(m.TraceID), nullString(m.ProducerSub),
					m.Payload, at, int64(m.Sealed))
			}
			res, err := t.exec(t.st.insertRows[n], args...)
			if err != nil {
				return fmt.Errorf("insert messages: %w", err)
			}
			if k, err := res.RowsAffected(); err != nil || int(k) != n {
				return fmt.Errorf("insert messages: %d of %d stored (a transactionId repeats in the partition): %v", k, n, err)
			}
			rest = rest[n:]
		}
		if _, err := tx.ExecContext(ctx, sqlXPartitionMoved, last, newest, p.ID); err != nil {
			return fmt.Errorf("advance partition: %w", err)
		}
		if _, err := t.exec(sqlLanesMarkReady, p.ID); err != nil {
			return fmt.Errorf("mark lanes ready: %w", err)
		}
		t.forgetUnconsumed(p.ID)
		return nil
	})
}

// ImportGroup records a group with a lane per partition of the queue.
func (s *Store) ImportGroup(ctx context.Context, q store.TransferQueueRef, g store.TransferGroup) error {
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		row, err := t.existingQueue(queueName{store.TenantOrDefault(q.Tenant), q.Name})
		if err != nil {
			return err
		}
		if row == nil {
			return fmt.Errorf("queue %q: %w", q.Name, store.ErrNotFound)
		}
		created := g.CreatedAt
		if created.IsZero() {
			created = time.Now()
		}
		if _, err := tx.ExecContext(ctx, sqlXGroupInsert, row.id, g.Name, msOrZero(g.SubscribedFrom), created.UnixMilli()); err != nil {
			return fmt.Errorf("record group: %w", err)
		}
		type part struct {
			id   int64
			uuid string
		}
		parts, err := sqlq.Collect(txQ(ctx, tx), sqlXQueuePartitions, []any{row.id}, func(r sqlq.Row) (part, error) {
			var p part
			err := r.Scan(&p.id, &p.uuid)
			return p, err
		})
		if err != nil {
			return err
		}
		for _, p := range parts {
			var cursor int64
			if n := g.Consumed[p.uuid]; n > 0 {
				if err := tx.QueryRowContext(ctx, sqlXCursorAfter, p.id, n).Scan(&cursor); err != nil {
					return fmt.Errorf("find cursor: %w", err)
				}
			}
			if _, err := tx.ExecContext(ctx, sqlXLaneInsert, p.id, g.Name, row.id, cursor); err != nil {
				return fmt.Errorf("write lane: %w", err)
			}
			t.forgetUnconsumed(p.id)
		}
		return nil
	})
}

// ImportDeadLetters records dead letters of a partition's messages.
func (s *Store) ImportDeadLetters(ctx context.Context, partitionID string, ds []store.TransferDeadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		p, err := exportSQL.ReadPartition(txQ(ctx, tx), partitionID)
		if err != nil {
			return err
		}
		for _, d := range ds {
			res, err := tx.ExecContext(ctx, sqlXDeadLetterInsert, p.ID, d.TransactionID, d.Group, d.Error, d.RetryCount,
				d.FailedAt.UnixMilli())
			if err != nil {
				return fmt.Errorf("insert dead letter: %w", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("dead letter of transactionId %q: no such message in partition %s", d.TransactionID, partitionID)
			}
		}
		return nil
	})
}

// msOrZero is t in Unix ms, 0 for the zero time.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

const (
	sqlXKV = `SELECT tenant, namespace, key, value, version, expires_at, created_at, updated_at FROM kv
		WHERE (tenant, namespace, key) > (?, ?, ?) ORDER BY tenant, namespace, key LIMIT ?`
	sqlXKVInsert = `INSERT INTO kv (tenant, namespace, key, value, version, expires_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
)

// ExportKV returns a page of key/value rows.
func (s *Store) ExportKV(ctx context.Context, after store.TransferKV, limit int) ([]store.TransferKV, error) {
	return exportRead(s, ctx, "export kv", func(tx sqlq.Q) ([]store.TransferKV, error) {
		return exportSQL.ReadKV(tx, after, limit)
	})
}

// ImportKV writes key/value rows as they were.
func (s *Store) ImportKV(ctx context.Context, rows []store.TransferKV) error {
	if len(rows) == 0 {
		return nil
	}
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		for _, k := range rows {
			if _, err := tx.ExecContext(ctx, sqlXKVInsert, k.Tenant, k.Namespace, k.Key, string(k.Value), k.Version,
				k.ExpiresAt, k.CreatedAt, k.UpdatedAt); err != nil {
				return fmt.Errorf("insert key %q: %w", k.Key, err)
			}
		}
		return nil
	})
}

// The broker's own features: the SQL is transfersql's, shared with the
// other engine.

// transferDialect is what transfersql needs of this engine.
var transferDialect = transfersql.Dialect{
	Text:          func(b []byte) any { return string(b) },
	StateKeysPast: `INSERT OR IGNORE INTO streams_state_keys (id) VALUES ($1)`,
}

// ExportTimers returns a page of timers.
func (s *Store) ExportTimers(ctx context.Context, afterID string, limit int) ([]store.TransferTimer, error) {
	out, err := transfersql.ExportTimers(s.readQ(ctx), afterID, limit)
	return out, exportErr("export timers", err)
}

// ImportTimers writes timers as they were.
func (s *Store) ImportTimers(ctx context.Context, rows []store.TransferTimer) error {
	return s.transferWrite(ctx, "import timers", len(rows), func(q sqlq.Q) error { return transfersql.ImportTimers(q, transferDialect, rows) })
}

// ExportEphemeralQueues returns a page of ephemeral queues' definitions.
func (s *Store) ExportEphemeralQueues(ctx context.Context, after store.TransferEphemeralQueue, limit int) ([]store.TransferEphemeralQueue, error) {
	out, err := transfersql.ExportEphemeralQueues(s.readQ(ctx), after, limit)
	return out, exportErr("export ephemeral queues", err)
}

// ImportEphemeralQueues writes ephemeral queues' definitions.
func (s *Store) ImportEphemeralQueues(ctx context.Context, rows []store.TransferEphemeralQueue) error {
	return s.transferWrite(ctx, "import ephemeral queues", len(rows), func(q sqlq.Q) error { return transfersql.ImportEphemeralQueues(q, rows) })
}

// ExportStreamsQueries returns a page of stream queries.
func (s *Store) ExportStreamsQueries(ctx context.Context, afterID string, limit int) ([]store.TransferStreamsQuery, error) {
	out, err := transfersql.ExportStreamsQueries(s.readQ(ctx), afterID, limit)
	return out, exportErr("export stream queries", err)
}

// ImportStreamsQueries writes stream queries with their state keys.
func (s *Store) ImportStreamsQueries(ctx context.Context, rows []store.TransferStreamsQuery) error {
	return s.transferWrite(ctx, "import stream queries", len(rows), func(q sqlq.Q) error {
		return transfersql.ImportStreamsQueries(q, transferDialect, rows)
	})
}

// ExportStreamsState returns a page of reachable stream state.
func (s *Store) ExportStreamsState(ctx context.Context, after store.TransferStreamsState, limit int) ([]store.TransferStreamsState, error) {
	out, err := transfersql.ExportStreamsState(s.readQ(ctx), after, limit)
	return out, exportErr("export stream state", err)
}

// ImportStreamsState writes stream state as it was.
func (s *Store) ImportStreamsState(ctx context.Context, rows []store.TransferStreamsState) error {
	return s.transferWrite(ctx, "import stream state", len(rows), func(q sqlq.Q) error { return transfersql.ImportStreamsState(q, rows) })
}

// ExportStreamsShards returns a page of reachable shard sizes.
func (s *Store) ExportStreamsShards(ctx context.Context, after store.TransferStreamsShard, limit int) ([]store.TransferStreamsShard, error) {
	out, err := transfersql.ExportStreamsShards(s.readQ(ctx), after, limit)
	return out, exportErr("export stream shards", err)
}

// ImportStreamsShards writes shard sizes as they were.
func (s *Store) ImportStreamsShards(ctx context.Context, rows []store.TransferStreamsShard) error {
	return s.transferWrite(ctx, "import stream shards", len(rows), func(q sqlq.Q) error { return transfersql.ImportStreamsShards(q, rows) })
}

// ExportWebhooks returns a page of webhook documents.
func (s *Store) ExportWebhooks(ctx context.Context, after store.TransferWebhook, limit int) ([]store.TransferWebhook, error) {
	out, err := transfersql.ExportWebhooks(s.readQ(ctx), after, limit)
	return out, exportErr("export webhooks", err)
}

// ImportWebhooks writes webhook documents as they were.
func (s *Store) ImportWebhooks(ctx context.Context, rows []store.TransferWebhook) error {
	return s.transferWrite(ctx, "import webhooks", len(rows), func(q sqlq.Q) error { return transfersql.ImportWebhooks(q, rows) })
}

// exportErr names a failed export and marks it an outage.
func exportErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlite: %s: %w", op, unavailable(err))
}

// transferWrite runs fn on a durable writer transaction, unless there are
// no rows.
func (s *Store) transferWrite(ctx context.Context, op string, n int, fn func(sqlq.Q) error) error {
	if n == 0 {
		return nil
	}
	err := s.run(ctx, durable, func(tx *sql.Tx) error { return fn(txQ(ctx, tx)) })
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return nil
}
