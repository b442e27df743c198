package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
	"github.com/queen-go/queen/internal/store/transfersql"
)

// The migration's reads and writes (store.TransferStore). Offsets are per
// partition and dense from its floor, so an imported partition holds its
// messages at 1..n; positions cross the interface as counts of messages all
// the same, so that the import does not rely on it.
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

	sqlXQueues     = `SELECT tenant, name, namespace, task, options::text, created_at FROM queues ORDER BY tenant, name`
	sqlXQueueID    = `SELECT id FROM queues WHERE tenant = $1 AND name = $2`
	sqlXPartitions = `SELECT p.uuid, p.name, p.created_at FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = $1 AND q.name = $2 ORDER BY p.name`
	sqlXPartition = `SELECT id, queue_id, cleared_offset, last_offset FROM partitions WHERE uuid = $1`
	sqlXMessages  = `SELECT seq, id, transaction_id, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), payload, created_at,
			sealed
		FROM messages WHERE partition_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	sqlXGroups = `SELECT g.consumer_group, max(g.subscribed_from), max(g.created_at) FROM (
			SELECT consumer_group, subscribed_from, created_at FROM consumer_groups WHERE queue_id = $1
			UNION ALL SELECT consumer_group, 0, 0 FROM lanes WHERE queue_id = $1) g
		GROUP BY g.consumer_group ORDER BY g.consumer_group`
	sqlXLanes = `SELECT l.consumer_group, p.uuid, greatest(l.cursor, p.cleared_offset)
		FROM lanes l JOIN partitions p ON p.id = l.partition_id WHERE l.queue_id = $1 AND p.queue_id = l.queue_id`
	sqlXDeadLetters = `SELECT d.id, m.transaction_id, d.consumer_group, d.error, d.retry_count, d.failed_at
		FROM dead_letters d JOIN messages m ON m.partition_id = d.partition_id AND m.seq = d.message_seq
		WHERE d.partition_id = $1 AND d.id > $2 AND d.message_seq > $3 ORDER BY d.id LIMIT $4`

	sqlXQueueInsert = `INSERT INTO queues (uuid, tenant, name, namespace, task, priority, options, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	sqlXPartitionInsert = `INSERT INTO partitions (uuid, queue_id, name, created_at) VALUES ($1, $2, $3, $4) RETURNING id`
	sqlXPartitionLock   = `SELECT id, last_offset FROM partitions WHERE uuid = $1 FOR NO KEY UPDATE`
	sqlXMessagesInsert  = `INSERT INTO messages (partition_id, seq, id, transaction_id, trace_id, producer_sub, payload, created_at,
			sealed)
		SELECT $1, $2 + u.ord, u.id, u.txn, NULLIF(u.trace, ''), NULLIF(u.sub, ''), u.payload, u.at, u.sealed
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::bigint[], $9::smallint[])
			WITH ORDINALITY AS u(id, txn, trace, sub, payload, at, sealed, ord)`
	sqlXPartitionMoved = `UPDATE partitions SET last_offset = $2, last_message_at = greatest(last_message_at, $3) WHERE id = $1`
	sqlXLanesReady     = `UPDATE lanes SET ready = true WHERE partition_id = $1 AND NOT ready AND cursor < $2`
	sqlXGroupInsert    = `INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`
	// A lane per partition of queue $1 for group $2, after the first n
	// messages of each (n from the arrays, 0 for a partition they leave
	// out), or at the partition's end when it holds fewer.
	sqlXLanesInsert = `INSERT INTO lanes (partition_id, consumer_group, queue_id, cursor, ready)
		SELECT p.id, $2, p.queue_id, c.cursor, p.last_offset > c.cursor
		FROM partitions p
		LEFT JOIN unnest($3::text[], $4::bigint[]) AS u(uuid, n) ON u.uuid = p.uuid
		CROSS JOIN LATERAL (SELECT CASE WHEN COALESCE(u.n, 0) <= 0 THEN 0
			ELSE COALESCE((SELECT m.seq FROM messages m WHERE m.partition_id = p.id
				ORDER BY m.seq OFFSET u.n - 1 LIMIT 1), p.last_offset) END AS cursor) c
		WHERE p.queue_id = $1
		ORDER BY p.id
		ON CONFLICT (partition_id, consumer_group) DO UPDATE SET cursor = excluded.cursor, ready = excluded.ready`
	sqlXDeadLettersInsert = `INSERT INTO dead_letters (partition_id, message_seq, consumer_group, error, retry_count, failed_at)
		SELECT $1, m.seq, u.grp, u.err, u.retries, u.at
		FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::bigint[]) AS u(txn, grp, err, retries, at)
		JOIN messages m ON m.partition_id = $1 AND m.transaction_id = u.txn`
)

var _ store.TransferStore = (*Store)(nil)

// TransferQueueCount counts the queues of every tenant.
func (s *Store) TransferQueueCount(ctx context.Context) (int64, error) {
	if err := s.readable(ctx); err != nil {
		return 0, err
	}
	var n int64
	if err := s.pool.QueryRow(ctx, sqlXQueueCount).Scan(&n); err != nil {
		return 0, wrapErr("postgres: count queues", err)
	}
	return n, nil
}

// TransferCounts counts what a migration copies.
func (s *Store) TransferCounts(ctx context.Context) (store.TransferCounts, error) {
	var c store.TransferCounts
	if err := s.readable(ctx); err != nil {
		return c, err
	}
	err := s.pool.QueryRow(ctx, sqlXCounts).Scan(&c.Queues, &c.Partitions, &c.Messages, &c.ConsumerGroups, &c.DeadLetters, &c.KV)
	if err == nil {
		err = transfersql.ReadCounts(s.poolQ(ctx), &c)
	}
	if err != nil {
		return c, wrapErr("postgres: count rows", err)
	}
	return c, nil
}

// exportSQL is this engine's part of the export; transfersql reads the
// rows.
var exportSQL = transfersql.Export{
	Queues: sqlXQueues, Partitions: sqlXPartitions, Partition: sqlXPartition, QueueID: sqlXQueueID,
	Messages: sqlXMessages, Groups: sqlXGroups, Lanes: sqlXLanes, DeadLetters: sqlXDeadLetters, KV: sqlXKV,
}

// ExportQueues calls fn with every queue.
func (s *Store) ExportQueues(ctx context.Context, fn func(store.TransferQueue) error) error {
	if err := s.readable(ctx); err != nil {
		return err
	}
	qs, err := exportSQL.ReadQueues(s.poolQ(ctx))
	return transfersql.Each(qs, exportErr("export queues", err), fn)
}

// ExportPartitions calls fn with every partition of a queue.
func (s *Store) ExportPartitions(ctx context.Context, q store.TransferQueueRef, fn func(store.TransferPartition) error) error {
	ps, err := exportSQL.ReadPartitions(s.poolQ(ctx), q)
	return transfersql.Each(ps, exportErr("export partitions", err), fn)
}

// ExportMessages returns a page of a partition's messages after offset after.
func (s *Store) ExportMessages(ctx context.Context, partitionID string, after int64, limit int) ([]store.TransferMessage, error) {
	out, err := exportSQL.ReadMessages(s.poolQ(ctx), partitionID, after, limit)
	return out, exportErr("export messages", err)
}

// ExportGroups returns a queue's groups with their cursors.
func (s *Store) ExportGroups(ctx context.Context, q store.TransferQueueRef) ([]store.TransferGroup, error) {
	out, err := exportSQL.ReadGroups(s.poolQ(ctx), q)
	return out, exportErr("export groups", err)
}

// ExportDeadLetters returns a page of a partition's dead letters.
func (s *Store) ExportDeadLetters(ctx context.Context, partitionID string, afterID int64, limit int) ([]store.TransferDeadLetter, error) {
	out, err := exportSQL.ReadDeadLetters(s.poolQ(ctx), partitionID, afterID, limit)
	return out, exportErr("export dead letters", err)
}

// ImportQueue creates a queue with its settings.
func (s *Store) ImportQueue(ctx context.Context, q store.TransferQueue) error {
	return s.inTx(ctx, "import queue", func(t *txn) error {
		_, err := t.tx.Exec(t.ctx, sqlXQueueInsert, newUUID(), store.TenantOrDefault(q.Tenant), q.Name, q.Namespace, q.Task,
			q.Options.Priority, string(store.EncodeQueueOptions(q.Options)), q.CreatedAt.UnixMilli())
		return err
	})
}

// queueID resolves a queue in t.
func (t *txn) transferQueueID(q store.TransferQueueRef) (int64, error) {
	var id int64
	err := t.tx.QueryRow(t.ctx, sqlXQueueID, store.TenantOrDefault(q.Tenant), q.Name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("queue %q: %w", q.Name, store.ErrNotFound)
	}
	return id, err
}

// ImportPartition creates a partition of a queue, keeping p.ID when set.
func (s *Store) ImportPartition(ctx context.Context, q store.TransferQueueRef, p store.TransferPartition) (string, error) {
	id := p.ID
	if id == "" {
		id = newUUID()
	}
	err := s.inTx(ctx, "import partition", func(t *txn) error {
		qid, err := t.transferQueueID(q)
		if err != nil {
			return err
		}
		var pid int64
		if err := t.tx.QueryRow(t.ctx, sqlXPartitionInsert, id, qid, p.Name, p.CreatedAt.UnixMilli()).Scan(&pid); err != nil {
			return fmt.Errorf("create partition %q: %w", p.Name, err)
		}
		if _, err := t.tx.Exec(t.ctx, sqlLanesForNewPartitions, []int64{pid}); err != nil {
			return fmt.Errorf("create lanes: %w", err)
		}
		return nil
	})
	return id, err
}

// ImportMessages appends messages to a partition in one statement, at the
// offsets after its last one.
func (s *Store) ImportMessages(ctx context.Context, partitionID string, ms []store.TransferMessage) error {
	if len(ms) == 0 {
		return nil
	}
	ids, txns, traces, subs := make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms)), make([]string, len(ms))
	payloads, ats, sealed := make([][]byte, len(ms)), make([]int64, len(ms)), make([]int16, len(ms))
	var newest int64
	for i, m := range ms {
		sealed[i] = int16(m.Sealed)
		ids[i], txns[i], traces[i], subs[i], payloads[i] = m.ID, m.TransactionID, m.TraceID, m.ProducerSub, m.Payload
		ats[i] = m.CreatedAt.UnixMilli()
		newest = max(newest, ats[i])
	}
	return s.inTx(ctx, "import messages", func(t *txn) error {
		var pid, last int64
		err := t.tx.QueryRow(t.ctx, sqlXPartitionLock, partitionID).Scan(&pid, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("partition %s: %w", partitionID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := t.tx.Exec(t.ctx, sqlXMessagesInsert, pid, last, ids, txns, traces, subs, payloads, ats,
			sealed); err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		end := last + int64(len(ms))
		if _, err := t.tx.Exec(t.ctx, sqlXPartitionMoved, pid, end, newest); err != nil {
			return fmt.Errorf("advance partition: %w", err)
		}
		if _, err := t.tx.Exec(t.ctx, sqlXLanesReady, pid, end); err != nil {
			return fmt.Errorf("mark lanes ready: %w", err)
		}
		return nil
	})
}

// ImportGroup records a group with a lane per partition of the queue.
func (s *Store) ImportGroup(ctx context.Context, q store.TransferQueueRef, g store.TransferGroup) error {
	parts, counts := make([]string, 0, len(g.Consumed)), make([]int64, 0, len(g.Consumed))
	for p, n := range g.Consumed {
		parts, counts = append(parts, p), append(counts, n)
	}
	created := g.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	var from int64
	if !g.SubscribedFrom.IsZero() {
		from = g.SubscribedFrom.UnixMilli()
	}
	return s.inTx(ctx, "import group", func(t *txn) error {
		qid, err := t.transferQueueID(q)
		if err != nil {
			return err
		}
		if _, err := t.tx.Exec(t.ctx, sqlJoinLock, qid); err != nil {
			return err
		}
		if _, err := t.tx.Exec(t.ctx, sqlXGroupInsert, qid, g.Name, from, created.UnixMilli()); err != nil {
			return fmt.Errorf("record group: %w", err)
		}
		if _, err := t.tx.Exec(t.ctx, sqlXLanesInsert, qid, g.Name, parts, counts); err != nil {
			return fmt.Errorf("write lanes: %w", err)
		}
		return nil
	})
}

// ImportDeadLetters records dead letters of a partition's messages.
func (s *Store) ImportDeadLetters(ctx context.Context, partitionID string, ds []store.TransferDeadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	txns, groups, errs := make([]string, len(ds)), make([]string, len(ds)), make([]string, len(ds))
	retries, ats := make([]int32, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		txns[i], groups[i], errs[i], retries[i], ats[i] = d.TransactionID, d.Group, d.Error, int32(d.RetryCount), d.FailedAt.UnixMilli()
	}
	return s.inTx(ctx, "import dead letters", func(t *txn) error {
		p, err := exportSQL.ReadPartition(t.q(), partitionID)
		if err != nil {
			return err
		}
		tag, err := t.tx.Exec(t.ctx, sqlXDeadLettersInsert, p.ID, txns, groups, errs, retries, ats)
		if err != nil {
			return fmt.Errorf("insert dead letters: %w", err)
		}
		if n := tag.RowsAffected(); n != int64(len(ds)) {
			return fmt.Errorf("dead letters of partition %s: %d of %d name a message it holds", partitionID, n, len(ds))
		}
		return nil
	})
}

const (
	sqlXKV = `SELECT tenant, namespace, key, value, version, expires_at, created_at, updated_at FROM kv
		WHERE (tenant, namespace, key) > ($1, $2, $3) ORDER BY tenant, namespace, key LIMIT $4`
	sqlXKVInsert = `INSERT INTO kv (tenant, namespace, key, value, version, expires_at, created_at, updated_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])`
)

// ExportKV returns a page of key/value rows.
func (s *Store) ExportKV(ctx context.Context, after store.TransferKV, limit int) ([]store.TransferKV, error) {
	out, err := exportSQL.ReadKV(s.poolQ(ctx), after, limit)
	return out, exportErr("export kv", err)
}

// ImportKV writes key/value rows as they were.
func (s *Store) ImportKV(ctx context.Context, rows []store.TransferKV) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	ts, ns, ks, vs := make([]string, n), make([]string, n), make([]string, n), make([][]byte, n)
	vers, exps, cs, us := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, k := range rows {
		ts[i], ns[i], ks[i], vs[i], vers[i], exps[i], cs[i], us[i] = k.Tenant, k.Namespace, k.Key, k.Value, k.Version, k.ExpiresAt, k.CreatedAt, k.UpdatedAt
	}
	return s.inTx(ctx, "import kv", func(t *txn) error {
		_, err := t.tx.Exec(t.ctx, sqlXKVInsert, ts, ns, ks, vs, vers, exps, cs, us)
		return err
	})
}

// The broker's own features: the SQL is transfersql's, shared with the
// other engine.

// transferDialect is what transfersql needs of this engine.
var transferDialect = transfersql.Dialect{
	Text:          func(b []byte) any { return b },
	StateKeysPast: `SELECT setval('streams_state_keys', greatest($1::bigint, (SELECT last_value FROM streams_state_keys)))`,
}

// ExportTimers returns a page of timers.
func (s *Store) ExportTimers(ctx context.Context, afterID string, limit int) ([]store.TransferTimer, error) {
	out, err := transfersql.ExportTimers(s.poolQ(ctx), afterID, limit)
	return out, exportErr("export timers", err)
}

// ImportTimers writes timers as they were.
func (s *Store) ImportTimers(ctx context.Context, rows []store.TransferTimer) error {
	return s.transferWrite(ctx, "import timers", len(rows), func(q sqlq.Q) error { return transfersql.ImportTimers(q, transferDialect, rows) })
}

// ExportEphemeralQueues returns a page of ephemeral queues' definitions.
func (s *Store) ExportEphemeralQueues(ctx context.Context, after store.TransferEphemeralQueue, limit int) ([]store.TransferEphemeralQueue, error) {
	out, err := transfersql.ExportEphemeralQueues(s.poolQ(ctx), after, limit)
	return out, exportErr("export ephemeral queues", err)
}

// ImportEphemeralQueues writes ephemeral queues' definitions.
func (s *Store) ImportEphemeralQueues(ctx context.Context, rows []store.TransferEphemeralQueue) error {
	return s.transferWrite(ctx, "import ephemeral queues", len(rows), func(q sqlq.Q) error { return transfersql.ImportEphemeralQueues(q, rows) })
}

// ExportStreamsQueries returns a page of stream queries.
func (s *Store) ExportStreamsQueries(ctx context.Context, afterID string, limit int) ([]store.TransferStreamsQuery, error) {
	out, err := transfersql.ExportStreamsQueries(s.poolQ(ctx), afterID, limit)
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
	out, err := transfersql.ExportStreamsState(s.poolQ(ctx), after, limit)
	return out, exportErr("export stream state", err)
}

// ImportStreamsState writes stream state as it was.
func (s *Store) ImportStreamsState(ctx context.Context, rows []store.TransferStreamsState) error {
	return s.transferWrite(ctx, "import stream state", len(rows), func(q sqlq.Q) error { return transfersql.ImportStreamsState(q, rows) })
}

// ExportStreamsShards returns a page of reachable shard sizes.
func (s *Store) ExportStreamsShards(ctx context.Context, after store.TransferStreamsShard, limit int) ([]store.TransferStreamsShard, error) {
	out, err := transfersql.ExportStreamsShards(s.poolQ(ctx), after, limit)
	return out, exportErr("export stream shards", err)
}

// ImportStreamsShards writes shard sizes as they were.
func (s *Store) ImportStreamsShards(ctx context.Context, rows []store.TransferStreamsShard) error {
	return s.transferWrite(ctx, "import stream shards", len(rows), func(q sqlq.Q) error { return transfersql.ImportStreamsShards(q, rows) })
}

// ExportWebhooks returns a page of webhook documents.
func (s *Store) ExportWebhooks(ctx context.Context, after store.TransferWebhook, limit int) ([]store.TransferWebhook, error) {
	out, err := transfersql.ExportWebhooks(s.poolQ(ctx), after, limit)
	return out, exportErr("export webhooks", err)
}

// ImportWebhooks writes webhook documents as they were.
func (s *Store) ImportWebhooks(ctx context.Context, rows []store.TransferWebhook) error {
	return s.transferWrite(ctx, "import webhooks", len(rows), func(q sqlq.Q) error { return transfersql.ImportWebhooks(q, rows) })
}

// exportErr classifies a failed export.
func exportErr(op string, err error) error {
	return readErr("postgres: "+op, err)
}

// transferWrite runs fn in a transaction, unless there are no rows.
func (s *Store) transferWrite(ctx context.Context, op string, n int, fn func(sqlq.Q) error) error {
	if n == 0 {
		return nil
	}
	return s.inTx(ctx, op, func(t *txn) error { return fn(t.q()) })
}
