// Package transfersql is the part of store.TransferStore that both engines
// run alike over sqlq: the export and import of the broker's own features
// (timers, ephemeral queues' definitions, stream queries with their state,
// webhook documents) and their counts. Exports are keyset pages in byte-wise
// key order (the key columns are COLLATE "C" on PostgreSQL, BINARY on
// SQLite); imports write one row per statement inside the engine's
// transaction, which the engine opens. What differs stays with the engine:
// how a text column takes bytes (Dialect.Text) and how the next stream
// state key is moved past the imported ones (Dialect.StateKeysPast).
package transfersql

import (
	"database/sql"
	"fmt"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// Dialect is what an engine answers for.
type Dialect struct {
	// Text is how bytes are bound to a text column (timers.payload):
	// SQLite stores a string, PostgreSQL's bytea takes the bytes.
	Text func([]byte) any
	// StateKeysPast is the statement that makes the engine's stream
	// state keys continue after $1.
	StateKeysPast string
}

// reachable: a state key some query holds; state of an older key waits for
// the purge and is not copied.
const reachable = `EXISTS (SELECT 1 FROM streams_queries q WHERE q.state_key = s.state_key)`

// The statements.
const (
	Counts = `SELECT (SELECT count(*) FROM timers), (SELECT count(*) FROM ephemeral_queues),
		(SELECT count(*) FROM streams_queries),
		(SELECT count(*) FROM streams_state s WHERE ` + reachable + `),
		(SELECT count(*) FROM webhook_docs)`

	timers = `SELECT id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			COALESCE(producer_sub, ''), payload, sealed, fire_at, status, COALESCE(error, ''), created_at, finished_at
		FROM timers WHERE id > $1 ORDER BY id LIMIT $2`
	timerInsert = `INSERT INTO timers (id, tenant, queue, partition, transaction_id, message_id, namespace, task,
			producer_sub, payload, sealed, fire_at, status, error, created_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), $10, $11, $12, $13, NULLIF($14, ''), $15, $16)`

	ephemeral = `SELECT tenant, name, ttl_ms, max_messages, created_at, expires_at FROM ephemeral_queues
		WHERE (tenant, name) > ($1, $2) ORDER BY tenant, name LIMIT $3`
	ephemeralInsert = `INSERT INTO ephemeral_queues (tenant, name, ttl_ms, max_messages, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`

	queries = `SELECT uuid, tenant, name, source_queue, sink_queue, config_hash, state_key, created_at, updated_at
		FROM streams_queries WHERE uuid > $1 ORDER BY uuid LIMIT $2`
	queryInsert = `INSERT INTO streams_queries
			(uuid, tenant, name, source_queue, sink_queue, config_hash, state_key, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

	state = `SELECT s.state_key, s.partition_id, s.key, s.value, s.window_end, s.updated_at FROM streams_state s
		WHERE (s.state_key, s.partition_id, s.key) > ($1, $2, $3) AND ` + reachable + `
		ORDER BY s.state_key, s.partition_id, s.key LIMIT $4`
	stateInsert = `INSERT INTO streams_state (state_key, partition_id, key, value, window_end, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)`

	shards = `SELECT s.state_key, s.partition_id, s.rows, s.bytes, s.updated_at FROM streams_shards s
		WHERE (s.state_key, s.partition_id) > ($1, $2) AND ` + reachable + `
		ORDER BY s.state_key, s.partition_id LIMIT $3`
	shardInsert = `INSERT INTO streams_shards (state_key, partition_id, rows, bytes, updated_at)
		VALUES ($1, $2, $3, $4, $5)`

	webhooks = `SELECT tenant, kind, id, queue, doc, created_at, updated_at FROM webhook_docs
		WHERE (tenant, kind, id) > ($1, $2, $3) ORDER BY tenant, kind, id LIMIT $4`
	webhookInsert = `INSERT INTO webhook_docs (tenant, kind, id, queue, doc, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
)

// ReadCounts adds the features' counts to c.
func ReadCounts(q sqlq.Q, c *store.TransferCounts) error {
	return q.Row(Counts).Scan(&c.Timers, &c.EphemeralQueues, &c.StreamsQueries, &c.StreamsState, &c.Webhooks)
}

// ExportTimers reads a page of timers.
func ExportTimers(q sqlq.Q, after string, limit int) ([]store.TransferTimer, error) {
	return sqlq.Collect(q, timers, []any{after, limit}, func(r sqlq.Row) (store.TransferTimer, error) {
		var t store.TransferTimer
		err := r.Scan(&t.ID, &t.Tenant, &t.Queue, &t.Partition, &t.TransactionID, &t.MessageID, &t.Namespace, &t.Task,
			&t.ProducerSub, &t.Payload, &t.Sealed, &t.FireAt, &t.Status, &t.Error, &t.CreatedAt, &t.FinishedAt)
		return t, err
	})
}

// ImportTimers writes timers as they were.
func ImportTimers(q sqlq.Q, d Dialect, rows []store.TransferTimer) error {
	for _, t := range rows {
		if _, err := q.Exec(timerInsert, t.ID, t.Tenant, t.Queue, t.Partition, t.TransactionID, t.MessageID, t.Namespace,
			t.Task, t.ProducerSub, d.Text(t.Payload), int64(t.Sealed), t.FireAt, t.Status, t.Error, t.CreatedAt,
			t.FinishedAt); err != nil {
			return fmt.Errorf("insert timer %s: %w", t.ID, err)
		}
	}
	return nil
}

// ExportEphemeralQueues reads a page of ephemeral queues' definitions.
func ExportEphemeralQueues(q sqlq.Q, after store.TransferEphemeralQueue, limit int) ([]store.TransferEphemeralQueue, error) {
	return sqlq.Collect(q, ephemeral, []any{after.Tenant, after.Name, limit},
		func(r sqlq.Row) (store.TransferEphemeralQueue, error) {
			var e store.TransferEphemeralQueue
			err := r.Scan(&e.Tenant, &e.Name, &e.TTLMs, &e.MaxMessages, &e.CreatedAt, &e.ExpiresAt)
			return e, err
		})
}

// ImportEphemeralQueues writes ephemeral queues' definitions; the target
// mints their row ids.
func ImportEphemeralQueues(q sqlq.Q, rows []store.TransferEphemeralQueue) error {
	for _, e := range rows {
		if _, err := q.Exec(ephemeralInsert, e.Tenant, e.Name, e.TTLMs, e.MaxMessages, e.CreatedAt, e.ExpiresAt); err != nil {
			return fmt.Errorf("insert ephemeral queue %q: %w", e.Name, err)
		}
	}
	return nil
}

// ExportStreamsQueries reads a page of stream queries.
func ExportStreamsQueries(q sqlq.Q, after string, limit int) ([]store.TransferStreamsQuery, error) {
	return sqlq.Collect(q, queries, []any{after, limit}, func(r sqlq.Row) (store.TransferStreamsQuery, error) {
		var s store.TransferStreamsQuery
		err := r.Scan(&s.ID, &s.Tenant, &s.Name, &s.SourceQueue, &s.SinkQueue, &s.ConfigHash, &s.StateKey,
			&s.CreatedAt, &s.UpdatedAt)
		return s, err
	})
}

// ImportStreamsQueries writes stream queries with their state keys, and
// moves the engine's next state key past them.
func ImportStreamsQueries(q sqlq.Q, d Dialect, rows []store.TransferStreamsQuery) error {
	var top int64
	for _, s := range rows {
		if _, err := q.Exec(queryInsert, s.ID, s.Tenant, s.Name, s.SourceQueue, s.SinkQueue, s.ConfigHash, s.StateKey,
			s.CreatedAt, s.UpdatedAt); err != nil {
			return fmt.Errorf("insert stream query %q: %w", s.Name, err)
		}
		top = max(top, s.StateKey)
	}
	if top == 0 {
		return nil
	}
	if _, err := q.Exec(d.StateKeysPast, top); err != nil {
		return fmt.Errorf("move the state keys past %d: %w", top, err)
	}
	return nil
}

// ExportStreamsState reads a page of reachable state.
func ExportStreamsState(q sqlq.Q, after store.TransferStreamsState, limit int) ([]store.TransferStreamsState, error) {
	return sqlq.Collect(q, state, []any{after.StateKey, after.PartitionID, after.Key, limit},
		func(r sqlq.Row) (store.TransferStreamsState, error) {
			var s store.TransferStreamsState
			var end sql.NullFloat64
			err := r.Scan(&s.StateKey, &s.PartitionID, &s.Key, &s.Value, &end, &s.UpdatedAt)
			if end.Valid {
				s.WindowEnd = &end.Float64
			}
			return s, err
		})
}

// ImportStreamsState writes state rows as they were.
func ImportStreamsState(q sqlq.Q, rows []store.TransferStreamsState) error {
	for _, s := range rows {
		var end any
		if s.WindowEnd != nil {
			end = *s.WindowEnd
		}
		if _, err := q.Exec(stateInsert, s.StateKey, s.PartitionID, s.Key, s.Value, end, s.UpdatedAt); err != nil {
			return fmt.Errorf("insert state key %q: %w", s.Key, err)
		}
	}
	return nil
}

// ExportStreamsShards reads a page of reachable shard sizes.
func ExportStreamsShards(q sqlq.Q, after store.TransferStreamsShard, limit int) ([]store.TransferStreamsShard, error) {
	return sqlq.Collect(q, shards, []any{after.StateKey, after.PartitionID, limit},
		func(r sqlq.Row) (store.TransferStreamsShard, error) {
			var s store.TransferStreamsShard
			err := r.Scan(&s.StateKey, &s.PartitionID, &s.Rows, &s.Bytes, &s.UpdatedAt)
			return s, err
		})
}

// ImportStreamsShards writes shard sizes as they were.
func ImportStreamsShards(q sqlq.Q, rows []store.TransferStreamsShard) error {
	for _, s := range rows {
		if _, err := q.Exec(shardInsert, s.StateKey, s.PartitionID, s.Rows, s.Bytes, s.UpdatedAt); err != nil {
			return fmt.Errorf("insert shard %d/%s: %w", s.StateKey, s.PartitionID, err)
		}
	}
	return nil
}

// ExportWebhooks reads a page of webhook documents.
func ExportWebhooks(q sqlq.Q, after store.TransferWebhook, limit int) ([]store.TransferWebhook, error) {
	return sqlq.Collect(q, webhooks, []any{after.Tenant, after.Kind, after.ID, limit},
		func(r sqlq.Row) (store.TransferWebhook, error) {
			var w store.TransferWebhook
			err := r.Scan(&w.Tenant, &w.Kind, &w.ID, &w.Queue, &w.Doc, &w.CreatedAt, &w.UpdatedAt)
			return w, err
		})
}

// ImportWebhooks writes webhook documents as they were.
func ImportWebhooks(q sqlq.Q, rows []store.TransferWebhook) error {
	for _, w := range rows {
		if _, err := q.Exec(webhookInsert, w.Tenant, w.Kind, w.ID, w.Queue, w.Doc, w.CreatedAt, w.UpdatedAt); err != nil {
			return fmt.Errorf("insert webhook %s %q: %w", w.Kind, w.ID, err)
		}
	}
	return nil
}
