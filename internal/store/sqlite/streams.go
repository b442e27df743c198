package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// Stream queries (store.StreamStore); the tables are migration 010's.
// Registrations, cycles, deletions and purge steps are writer jobs like
// every write, so the single writer serialises the cycles of a (query,
// partition) by itself, and a cycle is one savepoint: its state ops, its
// pushes (the push path of MessagePushMany) and its ack (the ack path of
// MessageAckMany) commit or roll back together. State reads and the query
// listing run on the read-only pool.

// The statements of a cycle, prepared with the driver's others.
const (
	sqlStreamQueryState = `SELECT state_key FROM streams_queries WHERE uuid = ? AND tenant = ?`
	// The stored length of a key's value (a BLOB: bytes).
	sqlStreamStateLen    = `SELECT length(value) FROM streams_state WHERE state_key = ? AND partition_id = ? AND key = ?`
	sqlStreamStateUpsert = `INSERT INTO streams_state (state_key, partition_id, key, value, window_end, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6)
		ON CONFLICT (state_key, partition_id, key) DO UPDATE SET value = ?4, window_end = ?5, updated_at = ?6`
	sqlStreamStateDelete = `DELETE FROM streams_state WHERE state_key = ? AND partition_id = ? AND key = ?`
	// Count a cycle's changes (?3 rows, ?4 bytes) in its shard.
	sqlStreamShardAdd = `INSERT INTO streams_shards (state_key, partition_id, rows, bytes, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT (state_key, partition_id) DO UPDATE SET rows = rows + ?3, bytes = bytes + ?4, updated_at = ?5`
)

// Registrations and deletions.
const (
	sqlStreamQueryByName = `SELECT id, uuid, config_hash, state_key FROM streams_queries WHERE tenant = ? AND name = ?`
	sqlStreamQueryInsert = `INSERT INTO streams_queries
		(uuid, tenant, name, source_queue, sink_queue, config_hash, state_key, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlStreamQueryUpdate = `UPDATE streams_queries SET source_queue = ?, sink_queue = ?, config_hash = ?,
		state_key = ?, updated_at = ? WHERE id = ?`
	sqlStreamQueryDelete = `DELETE FROM streams_queries WHERE id = ?`
	sqlStreamStateKeyNew = `INSERT INTO streams_state_keys DEFAULT VALUES`
	sqlStreamPurgeAdd    = `INSERT INTO streams_purge (state_key, partition_id, queued_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`
)

// Purging unreachable state, each statement bounded.
const (
	sqlStreamPurgeNext  = `SELECT state_key, partition_id FROM streams_purge ORDER BY state_key, partition_id LIMIT 16`
	sqlStreamPurgeState = `DELETE FROM streams_state WHERE (state_key, partition_id, key) IN (
		SELECT state_key, partition_id, key FROM streams_state
		WHERE state_key = ?1 AND (?2 = '' OR partition_id = ?2) LIMIT ?3)`
	sqlStreamPurgeShards = `DELETE FROM streams_shards WHERE state_key = ?1 AND (?2 = '' OR partition_id = ?2)`
	sqlStreamPurgeDone   = `DELETE FROM streams_purge WHERE state_key = ?1 AND partition_id = ?2`
	sqlStreamPurgeMore   = `SELECT EXISTS (SELECT 1 FROM streams_purge)`
)

// The control plane's listing: a page of queries by name with the size of
// their state, summed over their shards (one row per partition, never the
// state itself).
const (
	sqlStreamQueryColumns = `q.uuid, q.name, q.source_queue, q.sink_queue, q.config_hash, q.created_at, q.updated_at,
		(SELECT count(*) FROM streams_shards s WHERE s.state_key = q.state_key AND s.rows > 0),
		COALESCE((SELECT sum(s.rows) FROM streams_shards s WHERE s.state_key = q.state_key), 0),
		COALESCE((SELECT sum(s.bytes) FROM streams_shards s WHERE s.state_key = q.state_key), 0)`
	sqlStreamQueryPage = `SELECT ` + sqlStreamQueryColumns + ` FROM streams_queries q
		WHERE q.tenant = ?1 ORDER BY q.name LIMIT ?2 OFFSET ?3`
	sqlStreamQueryOne = `SELECT ` + sqlStreamQueryColumns + ` FROM streams_queries q
		WHERE q.tenant = ?1 AND q.name = ?2`
	sqlStreamQueryCount = `SELECT count(*) FROM streams_queries WHERE tenant = ?1`
)

// errStreamReplay rolls back a cycle whose ack is a duplicate commit: the
// cycle already committed, and writing its state and pushes again would
// apply them twice.
var errStreamReplay = errors.New("stream cycle replayed")

// StreamCycle runs a cycle as one writer job.
func (s *Store) StreamCycle(ctx context.Context, p *store.StreamCycleParams) (*store.StreamCycleResult, error) {
	var out *store.StreamCycleResult
	var queue string
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		var err error
		out, err = s.txn(tx).streamCycle(p, &queue)
		return err
	})
	if errors.Is(err, errStreamReplay) {
		return &store.StreamCycleResult{Ack: &store.StreamAckResult{}, Pushes: []store.PushResult{}, Queue: queue,
			Replay: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// streamCycle writes a cycle's state ops, pushes and ack, in this order,
// and sets *queue to the source partition's queue as soon as it is known.
func (t *txn) streamCycle(p *store.StreamCycleParams, queue *string) (*store.StreamCycleResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	var stateKey int64
	err := t.queryRow(sqlStreamQueryState, p.QueryID, tenant).Scan(&stateKey)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &store.StreamCycleError{Reason: api.TextQueryNotFound}
	}
	if err != nil {
		return nil, fmt.Errorf("read stream query: %w", err)
	}
	part, err := t.partitionByUUID(p.PartitionID)
	if err != nil {
		return nil, err
	}
	if part != nil && part.queue != nil && part.queue.tenant == tenant {
		*queue = part.queue.name
	} else {
		part = nil // another tenant's partition is no partition of this one
	}
	out := &store.StreamCycleResult{Queue: *queue, Pushes: []store.PushResult{}}
	if len(p.StateOps) > 0 {
		mustExist := store.FlushDeletes(p)
		if err := t.streamState(stateKey, p.PartitionID, p.StateOps, mustExist, p.Now.UnixMilli()); err != nil {
			return nil, err
		}
		out.StateOpsApplied = len(p.StateOps)
	}
	if len(p.Pushes) > 0 {
		if out.Pushes, err = t.push(p.Pushes, p.Now); err != nil {
			return nil, err
		}
		if refused := store.CyclePushRefused(p.Pushes, out.Pushes); refused != nil {
			return nil, refused
		}
	}
	if p.Ack != nil {
		if out.Ack, err = t.streamAck(tenant, p, part); err != nil {
			return nil, err
		}
	} else if part != nil {
		// A flush gives way to the lease holder (store.FlushDeletes); the
		// single writer keeps pops out until it commits.
		var st lane.State
		var leaseID sql.NullString
		err := t.queryRow(sqlLaneGet, part.id, p.ConsumerGroup).Scan(&st.Cursor, &leaseID, &st.LeaseExpiresAt,
			&st.BatchEnd, &st.HeadAttempts, &st.RetryAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read lane: %w", err)
		}
		st.LeaseID = leaseID.String
		if err == nil && st.Leased(p.Now.UnixMilli()) {
			return nil, store.ErrFlushLeased
		}
	}
	return out, nil
}

// streamState applies the last op of every key and counts the change of
// rows and bytes in the shard. A key of mustExist that is missing fails the
// cycle (store.FlushDeletes).
func (t *txn) streamState(stateKey int64, pid string, ops []store.StreamStateOp, mustExist map[string]bool,
	nowMs int64) error {
	var rows, bytes int64
	for _, op := range store.LastStateOps(ops) {
		var old int64
		err := t.queryRow(sqlStreamStateLen, stateKey, pid, op.Key).Scan(&old)
		switch {
		case err == nil:
			rows--
			bytes -= int64(len(op.Key)) + old
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read state: %w", err)
		case mustExist[op.Key]:
			return store.FlushStateGone(op.Key)
		}
		if op.Delete {
			if err == nil {
				if _, err := t.exec(sqlStreamStateDelete, stateKey, pid, op.Key); err != nil {
					return fmt.Errorf("delete state: %w", err)
				}
			}
			continue
		}
		var windowEnd any
		if op.WindowEnd != nil {
			windowEnd = *op.WindowEnd
		}
		if _, err := t.exec(sqlStreamStateUpsert, stateKey, pid, op.Key, op.Value, windowEnd, nowMs); err != nil {
			return fmt.Errorf("write state: %w", err)
		}
		rows++
		bytes += int64(len(op.Key) + len(op.Value))
	}
	if _, err := t.exec(sqlStreamShardAdd, stateKey, pid, rows, bytes, nowMs); err != nil {
		return fmt.Errorf("count state: %w", err)
	}
	return nil
}

// streamAck commits the cycle's ack through the ack path of MessageAckMany.
// An ack that does not apply fails the cycle; a duplicate commit is a
// replay. With ReleaseLease, a completed ack that left messages of the
// leased batch after the cursor releases the lease as well.
func (t *txn) streamAck(tenant string, p *store.StreamCycleParams, part *partitionRow) (*store.StreamAckResult, error) {
	a := p.Ack
	res, err := t.ack(tenant, []store.Ack{{ConsumerGroup: p.ConsumerGroup, Error: a.Error, LeaseID: a.LeaseID,
		PartitionID: p.PartitionID, Status: a.Status, TransactionID: a.TransactionID}}, p.Now)
	if err != nil {
		return nil, err
	}
	v := res[0]
	switch {
	case v.Success && v.Noop:
		return nil, errStreamReplay
	case !v.Success:
		return nil, &store.StreamCycleError{Reason: store.CycleAckReason(v.Error)}
	}
	out := &store.StreamAckResult{DLQ: v.DLQ, LeaseReleased: v.LeaseReleased}
	if a.Status != store.AckCompleted {
		return out, nil
	}
	out.Count = a.Count
	if !p.ReleaseLease || v.LeaseReleased {
		return out, nil
	}
	var st lane.State
	var leaseID sql.NullString
	if err := t.queryRow(sqlLaneGet, part.id, p.ConsumerGroup).Scan(&st.Cursor, &leaseID, &st.LeaseExpiresAt,
		&st.BatchEnd, &st.HeadAttempts, &st.RetryAt); err != nil {
		return nil, fmt.Errorf("read lane: %w", err)
	}
	if !leaseID.Valid || leaseID.String == "" {
		return out, nil
	}
	st.Release()
	if err := t.saveLane(part.id, p.ConsumerGroup, part.queue.id, &st, 0); err != nil {
		return nil, err
	}
	out.LeaseReleased = true
	return out, nil
}

// StreamQueryRegister creates or updates a query in one writer job.
func (s *Store) StreamQueryRegister(ctx context.Context, p *store.StreamQueryRegisterParams) (*store.StreamQueryRegisterResult, error) {
	var out *store.StreamQueryRegisterResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		out = &store.StreamQueryRegisterResult{}
		tenant := store.TenantOrDefault(p.Tenant)
		nowMs := p.Now.UnixMilli()
		var id, stateKey int64
		var hash string
		err := tx.QueryRowContext(ctx, sqlStreamQueryByName, tenant, p.Name).Scan(&id, &out.QueryID, &hash, &stateKey)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if stateKey, err = newStateKey(ctx, tx); err != nil {
				return err
			}
			out.QueryID, out.Fresh = mustUUID(), true
			_, err = tx.ExecContext(ctx, sqlStreamQueryInsert, out.QueryID, tenant, p.Name, p.SourceQueue, p.SinkQueue,
				p.ConfigHash, stateKey, nowMs, nowMs)
			return wrapStream("create stream query", err)
		case err != nil:
			return fmt.Errorf("read stream query: %w", err)
		case hash != p.ConfigHash && !p.Reset:
			out.Mismatch = true
			return nil
		case hash != p.ConfigHash:
			if _, err := tx.ExecContext(ctx, sqlStreamPurgeAdd, stateKey, "", nowMs); err != nil {
				return fmt.Errorf("drop stream state: %w", err)
			}
			if stateKey, err = newStateKey(ctx, tx); err != nil {
				return err
			}
			out.Reset = true
		}
		_, err = tx.ExecContext(ctx, sqlStreamQueryUpdate, p.SourceQueue, p.SinkQueue, p.ConfigHash, stateKey, nowMs, id)
		return wrapStream("update stream query", err)
	})
	return out, err
}

// newStateKey returns a state key never handed out before.
func newStateKey(ctx context.Context, tx *sql.Tx) (int64, error) {
	res, err := tx.ExecContext(ctx, sqlStreamStateKeyNew)
	if err != nil {
		return 0, fmt.Errorf("new state key: %w", err)
	}
	return res.LastInsertId()
}

func wrapStream(op string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// StreamQueryDelete deletes a query; its state is left to StreamPurge.
func (s *Store) StreamQueryDelete(ctx context.Context, p *store.StreamQueryDeleteParams) (bool, error) {
	var existed bool
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		existed = false
		var id, stateKey int64
		var uuid, hash string
		err := tx.QueryRowContext(ctx, sqlStreamQueryByName, store.TenantOrDefault(p.Tenant), p.Name).
			Scan(&id, &uuid, &hash, &stateKey)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stream query: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlStreamPurgeAdd, stateKey, "", p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("drop stream state: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlStreamQueryDelete, id); err != nil {
			return fmt.Errorf("delete stream query: %w", err)
		}
		existed = true
		return nil
	})
	return existed, err
}

// StreamPurge frees up to p.Limit unreachable state rows in one writer job.
func (s *Store) StreamPurge(ctx context.Context, p *store.StreamPurgeParams) (*store.QueuePurgeResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.QueuePurgeResult{}
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		out.Deleted = 0
		type entry struct {
			key int64
			pid string
		}
		rows, err := tx.QueryContext(ctx, sqlStreamPurgeNext)
		if err != nil {
			return fmt.Errorf("stream purge: %w", err)
		}
		var entries []entry
		for rows.Next() {
			var e entry
			if err := rows.Scan(&e.key, &e.pid); err != nil {
				rows.Close()
				return err
			}
			entries = append(entries, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, e := range entries {
			budget := limit - out.Deleted
			res, err := tx.ExecContext(ctx, sqlStreamPurgeState, e.key, e.pid, budget)
			if err != nil {
				return fmt.Errorf("stream purge: %w", err)
			}
			n, _ := res.RowsAffected()
			out.Deleted += int(n)
			if int(n) >= budget {
				break
			}
			for _, q := range []string{sqlStreamPurgeShards, sqlStreamPurgeDone} {
				if _, err := tx.ExecContext(ctx, q, e.key, e.pid); err != nil {
					return fmt.Errorf("stream purge: %w", err)
				}
			}
		}
		return tx.QueryRowContext(ctx, sqlStreamPurgeMore).Scan(&out.More)
	})
	return out, err
}

// StreamStateGet reads state rows on the read-only pool. The statement is
// built from the filters given, so that each is an index range: keys are
// primary-key lookups, a prefix a primary-key range, ripeness a range of
// streams_state_ripe.
func (s *Store) StreamStateGet(ctx context.Context, p *store.StreamStateGetParams) ([]store.StreamStateRow, error) {
	out := []store.StreamStateRow{}
	err := s.read(ctx, "read stream state", func(tx *sql.Tx) error {
		var stateKey int64
		err := tx.QueryRowContext(ctx, sqlStreamQueryState, p.QueryID, store.TenantOrDefault(p.Tenant)).Scan(&stateKey)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var q strings.Builder
		q.WriteString(`SELECT key, value, updated_at FROM streams_state WHERE state_key = ? AND partition_id = ?`)
		args := []any{stateKey, p.PartitionID}
		if len(p.Keys) > 0 {
			keys, _ := json.Marshal(p.Keys)
			q.WriteString(` AND key IN (SELECT value FROM json_each(?))`)
			args = append(args, string(keys))
		}
		if p.KeyPrefix != "" {
			q.WriteString(` AND key >= ?`)
			args = append(args, p.KeyPrefix)
			if end, ok := prefixEnd(p.KeyPrefix); ok {
				q.WriteString(` AND key < ?`)
				args = append(args, end)
			}
		}
		if p.RipeAtOrBefore != nil {
			q.WriteString(` AND window_end <= ?`)
			args = append(args, *p.RipeAtOrBefore)
		}
		q.WriteString(` ORDER BY key`)
		rows, err := tx.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r store.StreamStateRow
			var at int64
			if err := rows.Scan(&r.Key, &r.Value, &at); err != nil {
				return err
			}
			r.UpdatedAt = fromMs(at)
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// prefixEnd returns the least string above every string that starts with
// prefix (compared byte-wise), and false when there is none: the prefix with
// its last byte below 0xFF incremented and the rest cut off. The result may
// not be valid UTF-8; SQLite compares it as bytes.
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// StreamQueryList lists queries on the read-only pool.
func (s *Store) StreamQueryList(ctx context.Context, p *store.StreamQueryListParams) (*store.StreamQueryListResult, error) {
	out := &store.StreamQueryListResult{Queries: []store.StreamQuery{}}
	tenant := store.TenantOrDefault(p.Tenant)
	err := s.read(ctx, "list stream queries", func(tx *sql.Tx) error {
		var rows *sql.Rows
		var err error
		if p.Name != "" {
			rows, err = tx.QueryContext(ctx, sqlStreamQueryOne, tenant, p.Name)
		} else {
			if err := tx.QueryRowContext(ctx, sqlStreamQueryCount, tenant).Scan(&out.Total); err != nil {
				return err
			}
			rows, err = tx.QueryContext(ctx, sqlStreamQueryPage, tenant, store.PageLimit(p.Limit), p.Offset)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q store.StreamQuery
			var created, updated int64
			if err := rows.Scan(&q.ID, &q.Name, &q.SourceQueue, &q.SinkQueue, &q.ConfigHash, &created, &updated,
				&q.State.Partitions, &q.State.Rows, &q.State.Bytes); err != nil {
				return err
			}
			q.CreatedAt, q.UpdatedAt = fromMs(created), fromMs(updated)
			out.Queries = append(out.Queries, q)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if p.Name != "" {
			if len(out.Queries) == 0 {
				return store.ErrQueryNotFound
			}
			out.Total = 1
		}
		return nil
	})
	return out, err
}
