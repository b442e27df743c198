package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Stream queries (store.StreamStore); the tables are migration 010's.
//
// Locks. A cycle takes, in this order: the query's lock, shared; its
// shard's row (streams_shards, upserted first), which serialises the cycles
// of one (query, partition) across brokers; then, through the push path,
// the sink partitions' rows; then, through the ack path, the source lane.
// That is the driver's order (partitions before lanes), so cycles, pushes,
// acks and transactions cannot deadlock one another. Resetting or deleting
// a query takes the query's lock exclusively: it waits for the cycles in
// flight, and the cycles after it read the query afresh, so no cycle writes
// under a state key that is being freed.
//
// The query's lock is the advisory lock (20819, hashtext of its uuid): the
// class is 0x5153, "QS", written literally in the statements; the two-int
// form lives apart from every bigint advisory lock, and a hash collision
// between two queries only makes a reset wait for the other query's cycles.

// A cycle's first round trip: the query's shared lock, the shard's row
// (returning the state key, no row for an unknown query), and the source
// partition's queue.
const (
	sqlStreamLockShared = `SELECT pg_advisory_xact_lock_shared(20819, hashtext($1))`
	sqlStreamLock       = `SELECT pg_advisory_xact_lock(20819, hashtext($1))`
	sqlStreamShardLock  = `INSERT INTO streams_shards (state_key, partition_id, updated_at)
		SELECT q.state_key, $3, $4 FROM streams_queries q WHERE q.uuid = $1 AND q.tenant = $2
		ON CONFLICT (state_key, partition_id) DO UPDATE SET updated_at = excluded.updated_at
		RETURNING state_key`
	sqlStreamPartitionQueue = `SELECT q.name FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE p.uuid = $1 AND q.tenant = $2`
	// Apply the last op of every key ($4 keys in order, $5 deletes, $6
	// values, $7 window ends) to shard ($3) of the query's state key, and
	// count the change in the shard: rows gain the upserts and lose the keys
	// that existed; bytes gain the upserts' and lose those keys' old bytes.
	// The shard's row is locked by this transaction, so old is exact.
	//
	// old finds the existing keys with one primary-key probe per key, and
	// gone deletes by the rows' ctids. As joins, a planner whose statistics
	// predate a shard of 100,000 keys scanned the shard whole and filtered
	// it (80 ms per cycle instead of a fraction of a millisecond); OFFSET 0
	// keeps each probe a subquery of its own, parameterised by its key.
	sqlStreamStateApply = `WITH k AS (
			SELECT state_key FROM streams_queries WHERE uuid = $1 AND tenant = $2
		), o AS (
			SELECT * FROM unnest($4::text[], $5::boolean[], $6::bytea[], $7::float8[]) AS o(key, del, value, window_end)
		), old AS MATERIALIZED (
			SELECT o.del, s.ctid AS row, octet_length(s.key) + octet_length(s.value) AS size
			FROM k CROSS JOIN o CROSS JOIN LATERAL (
				SELECT s.ctid, s.key, s.value FROM streams_state s
				WHERE s.state_key = k.state_key AND s.partition_id = $3 AND s.key = o.key OFFSET 0) s
		), up AS (
			INSERT INTO streams_state (state_key, partition_id, key, value, window_end, updated_at)
			SELECT k.state_key, $3, o.key, o.value, o.window_end, $8 FROM k, o WHERE NOT o.del ORDER BY o.key
			ON CONFLICT (state_key, partition_id, key) DO UPDATE
				SET value = excluded.value, window_end = excluded.window_end, updated_at = excluded.updated_at
		), gone AS (
			DELETE FROM streams_state WHERE ctid = ANY(ARRAY(SELECT row FROM old WHERE del))
		)
		UPDATE streams_shards sh SET
			rows = sh.rows + (SELECT count(*) FROM o WHERE NOT o.del) - (SELECT count(*) FROM old),
			bytes = sh.bytes + (SELECT COALESCE(sum(octet_length(o.key) + octet_length(o.value)), 0) FROM o WHERE NOT o.del)
				- (SELECT COALESCE(sum(size), 0) FROM old)
		FROM k WHERE sh.state_key = k.state_key AND sh.partition_id = $3`
	// The keys of $4 missing from the shard ($3) of the query: a flush's
	// deletes, which must all exist (store.FlushDeletes). The shard's row
	// lock, taken before, keeps the other cycles of the shard out.
	sqlStreamStateMissing = `SELECT o.key FROM unnest($4::text[]) AS o(key)
		WHERE NOT EXISTS (SELECT 1 FROM streams_queries q JOIN streams_state s ON s.state_key = q.state_key
			WHERE q.uuid = $1 AND q.tenant = $2 AND s.partition_id = $3 AND s.key = o.key)
		ORDER BY o.key LIMIT 1`
	// Whether the lane of a flush (partition $1, group $2) holds a live
	// lease at $3, its row locked to the commit: a pop skips a locked lane,
	// so none leases it before the flush commits. At the ack's place in the
	// lock order (partitions before lanes).
	sqlStreamLaneLeased = `SELECT l.lease_id IS NOT NULL AND l.lease_expires_at > $3
		FROM lanes l JOIN partitions p ON p.id = l.partition_id
		WHERE p.uuid = $1 AND l.consumer_group = $2
		FOR UPDATE OF l`
	// Release the lease of a lane this transaction has locked (the ack's).
	sqlStreamLaneRelease = `UPDATE lanes l SET lease_id = NULL, lease_expires_at = 0, batch_end = 0
		FROM partitions p WHERE p.uuid = $1 AND l.partition_id = p.id AND l.consumer_group = $2
			AND l.lease_id IS NOT NULL
		RETURNING 1`
)

// Registrations and deletions.
const (
	sqlStreamQueryInsert = `INSERT INTO streams_queries
			(uuid, tenant, name, source_queue, sink_queue, config_hash, state_key, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, nextval('streams_state_keys'), $7, $7)
		ON CONFLICT (tenant, name) DO NOTHING
		RETURNING uuid`
	sqlStreamQueryByName = `SELECT id, uuid, config_hash, state_key FROM streams_queries
		WHERE tenant = $1 AND name = $2 FOR UPDATE`
	sqlStreamQueryUpdate = `UPDATE streams_queries SET source_queue = $2, sink_queue = $3, updated_at = $4 WHERE id = $1`
	sqlStreamQueryReset  = `UPDATE streams_queries SET source_queue = $2, sink_queue = $3, updated_at = $4,
		config_hash = $5, state_key = nextval('streams_state_keys') WHERE id = $1`
	sqlStreamQueryDelete = `DELETE FROM streams_queries WHERE id = $1`
	sqlStreamPurgeAdd    = `INSERT INTO streams_purge (state_key, partition_id, queued_at) VALUES ($1, '', $2)
		ON CONFLICT DO NOTHING`
)

// Purging unreachable state, each statement bounded.
const (
	sqlStreamPurgeNext  = `SELECT state_key, partition_id FROM streams_purge ORDER BY state_key, partition_id LIMIT 16`
	sqlStreamPurgeState = `DELETE FROM streams_state WHERE (state_key, partition_id, key) IN (
		SELECT state_key, partition_id, key FROM streams_state
		WHERE state_key = $1 AND ($2 = '' OR partition_id = $2) LIMIT $3)`
	sqlStreamPurgeShards = `DELETE FROM streams_shards WHERE state_key = $1 AND ($2 = '' OR partition_id = $2)`
	sqlStreamPurgeDone   = `DELETE FROM streams_purge WHERE state_key = $1 AND partition_id = $2`
	sqlStreamPurgeMore   = `SELECT EXISTS (SELECT 1 FROM streams_purge)`
)

// The control plane's listing: a page of queries by name with the size of
// their state, summed over their shards (one row per partition, never the
// state itself).
const (
	sqlStreamQueryColumns = `q.uuid, q.name, q.source_queue, q.sink_queue, q.config_hash, q.created_at, q.updated_at,
			COALESCE(z.partitions, 0), COALESCE(z.rows, 0), COALESCE(z.bytes, 0)
		FROM streams_queries q LEFT JOIN LATERAL (
			SELECT count(*) FILTER (WHERE s.rows > 0) AS partitions, sum(s.rows)::bigint AS rows,
				sum(s.bytes)::bigint AS bytes
			FROM streams_shards s WHERE s.state_key = q.state_key) z ON true`
	sqlStreamQueryPage  = `SELECT ` + sqlStreamQueryColumns + ` WHERE q.tenant = $1 ORDER BY q.name LIMIT $2 OFFSET $3`
	sqlStreamQueryOne   = `SELECT ` + sqlStreamQueryColumns + ` WHERE q.tenant = $1 AND q.name = $2`
	sqlStreamQueryCount = `SELECT count(*) FROM streams_queries WHERE tenant = $1`
)

// errStreamReplay rolls back a cycle whose ack is a duplicate commit: the
// cycle already committed, and writing its state and pushes again would
// apply them twice.
var errStreamReplay = errors.New("stream cycle replayed")

// StreamCycle runs a cycle in one transaction.
func (s *Store) StreamCycle(ctx context.Context, p *store.StreamCycleParams) (*store.StreamCycleResult, error) {
	var out *store.StreamCycleResult
	var queue string
	err := s.inTx(ctx, "stream cycle", func(t *txn) error {
		var err error
		out, err = t.streamCycle(p, &queue)
		return err
	})
	var ce *store.StreamCycleError
	switch {
	case errors.Is(err, errStreamReplay):
		return &store.StreamCycleResult{Ack: &store.StreamAckResult{}, Pushes: []store.PushResult{}, Queue: queue,
			Replay: true}, nil
	case errors.As(err, &ce):
		return nil, ce
	case err != nil:
		return nil, err
	}
	return out, nil
}

// streamCycle writes a cycle: lock and state ops in one round trip, then
// the pushes and the ack through their own paths.
func (t *txn) streamCycle(p *store.StreamCycleParams, queue *string) (*store.StreamCycleResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	nowMs := p.Now.UnixMilli()
	b := &pgx.Batch{}
	b.Queue(sqlStreamLockShared, p.QueryID)
	b.Queue(sqlStreamShardLock, p.QueryID, tenant, p.PartitionID, nowMs)
	b.Queue(sqlStreamPartitionQueue, p.PartitionID, tenant)
	var mustExist []string
	for k := range store.FlushDeletes(p) {
		mustExist = append(mustExist, k)
	}
	if len(mustExist) > 0 {
		b.Queue(sqlStreamStateMissing, p.QueryID, tenant, p.PartitionID, mustExist)
	}
	if len(p.StateOps) > 0 {
		ops := store.LastStateOps(p.StateOps)
		keys, dels, values, ends := make([]string, len(ops)), make([]bool, len(ops)), make([][]byte, len(ops)),
			make([]*float64, len(ops))
		for i, op := range ops {
			keys[i], dels[i], ends[i] = op.Key, op.Delete, op.WindowEnd
			if !op.Delete {
				values[i] = op.Value
			}
		}
		b.Queue(sqlStreamStateApply, p.QueryID, tenant, p.PartitionID, keys, dels, values, ends, nowMs)
	}
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("lock stream query: %w", err)
	}
	keys, err := pgx.CollectRows(must(br.Query()), pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("lock stream shard: %w", err)
	}
	names, err := pgx.CollectRows(must(br.Query()), pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("resolve partition: %w", err)
	}
	if len(names) > 0 {
		*queue = names[0]
	}
	if len(keys) == 0 {
		return nil, &store.StreamCycleError{Reason: api.TextQueryNotFound}
	}
	if len(mustExist) > 0 {
		gone, err := pgx.CollectRows(must(br.Query()), pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("read stream state: %w", err)
		}
		if len(gone) > 0 {
			return nil, store.FlushStateGone(gone[0])
		}
	}
	if len(p.StateOps) > 0 {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("write stream state: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("write stream state: %w", err)
	}
	out := &store.StreamCycleResult{Queue: *queue, Pushes: []store.PushResult{}, StateOpsApplied: len(p.StateOps)}
	if len(p.Pushes) > 0 {
		entries := make([]pushEntry, len(p.Pushes))
		for i := range p.Pushes {
			entries[i] = pushEntry{item: &p.Pushes[i], atMs: nowMs}
		}
		if out.Pushes, err = t.push(entries); err != nil {
			return nil, err
		}
		if refused := store.CyclePushRefused(p.Pushes, out.Pushes); refused != nil {
			return nil, refused
		}
	}
	if p.Ack != nil {
		if out.Ack, err = t.streamAck(tenant, p, *queue); err != nil {
			return nil, err
		}
	} else if *queue != "" {
		// A flush gives way to the lease holder (store.FlushDeletes).
		rows, _ := t.tx.Query(t.ctx, sqlStreamLaneLeased, p.PartitionID, p.ConsumerGroup, nowMs)
		leased, err := pgx.CollectRows(rows, pgx.RowTo[bool])
		if err != nil {
			return nil, fmt.Errorf("read lane: %w", err)
		}
		if len(leased) > 0 && leased[0] {
			return nil, store.ErrFlushLeased
		}
	}
	return out, nil
}

// streamAck commits the cycle's ack through the ack path of MessageAckMany.
// An ack that does not apply fails the cycle; a duplicate commit is a
// replay. With ReleaseLease, a completed ack that left messages of the
// leased batch after the cursor releases the lease as well.
func (t *txn) streamAck(tenant string, p *store.StreamCycleParams, queue string) (*store.StreamAckResult, error) {
	a := p.Ack
	res, err := t.ack(tenant, []store.Ack{{ConsumerGroup: p.ConsumerGroup, Error: a.Error, LeaseID: a.LeaseID,
		PartitionID: p.PartitionID, Status: a.Status, TransactionID: a.TransactionID}}, p.Now.UnixMilli())
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
	rows, _ := t.tx.Query(t.ctx, sqlStreamLaneRelease, p.PartitionID, p.ConsumerGroup)
	released, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("release lease: %w", err)
	}
	if len(released) > 0 {
		out.LeaseReleased = true
		t.wakeAfterCommit(store.Wake{Key: store.QueueKey(tenant, queue), Count: len(released)})
	}
	return out, nil
}

// StreamQueryRegister creates or updates a query in one transaction.
func (s *Store) StreamQueryRegister(ctx context.Context, p *store.StreamQueryRegisterParams) (*store.StreamQueryRegisterResult, error) {
	var out *store.StreamQueryRegisterResult
	tenant := store.TenantOrDefault(p.Tenant)
	err := s.inTx(ctx, "register stream query", func(t *txn) error {
		out = &store.StreamQueryRegisterResult{}
		nowMs := p.Now.UnixMilli()
		rows, _ := t.tx.Query(t.ctx, sqlStreamQueryInsert, newUUID(), tenant, p.Name, p.SourceQueue, p.SinkQueue,
			p.ConfigHash, nowMs)
		created, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("create stream query: %w", err)
		}
		if len(created) > 0 {
			out.QueryID, out.Fresh = created[0], true
			return nil
		}
		var id, stateKey int64
		var hash string
		if err := t.tx.QueryRow(t.ctx, sqlStreamQueryByName, tenant, p.Name).Scan(&id, &out.QueryID, &hash,
			&stateKey); err != nil {
			return fmt.Errorf("read stream query: %w", err) // deleted meanwhile: an error, retried by the client
		}
		switch {
		case hash == p.ConfigHash:
			_, err = t.tx.Exec(t.ctx, sqlStreamQueryUpdate, id, p.SourceQueue, p.SinkQueue, nowMs)
			return wrapStream("update stream query", err)
		case !p.Reset:
			out.Mismatch = true
			return nil
		}
		b := &pgx.Batch{}
		b.Queue(sqlStreamLock, out.QueryID)
		b.Queue(sqlStreamPurgeAdd, stateKey, nowMs)
		b.Queue(sqlStreamQueryReset, id, p.SourceQueue, p.SinkQueue, nowMs, p.ConfigHash)
		if err := t.execBatch(b); err != nil {
			return fmt.Errorf("reset stream query: %w", err)
		}
		out.Reset = true
		return nil
	})
	return out, err
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
	tenant := store.TenantOrDefault(p.Tenant)
	err := s.inTx(ctx, "delete stream query", func(t *txn) error {
		existed = false
		var id, stateKey int64
		var uuid, hash string
		err := t.tx.QueryRow(t.ctx, sqlStreamQueryByName, tenant, p.Name).Scan(&id, &uuid, &hash, &stateKey)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stream query: %w", err)
		}
		b := &pgx.Batch{}
		b.Queue(sqlStreamLock, uuid)
		b.Queue(sqlStreamPurgeAdd, stateKey, p.Now.UnixMilli())
		b.Queue(sqlStreamQueryDelete, id)
		if err := t.execBatch(b); err != nil {
			return fmt.Errorf("delete stream query: %w", err)
		}
		existed = true
		return nil
	})
	return existed, err
}

// StreamPurge frees up to p.Limit unreachable state rows in one transaction
// that does not wait for its WAL flush (a step lost to a crash is done
// again).
func (s *Store) StreamPurge(ctx context.Context, p *store.StreamPurgeParams) (*store.QueuePurgeResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.QueuePurgeResult{}
	err := s.inRelaxedTx(ctx, "purge stream state", func(t *txn) error {
		out.Deleted = 0
		type entry struct {
			key int64
			pid string
		}
		rows, _ := t.tx.Query(t.ctx, sqlStreamPurgeNext)
		var e entry
		var entries []entry
		if _, err := pgx.ForEachRow(rows, []any{&e.key, &e.pid}, func() error {
			entries = append(entries, e)
			return nil
		}); err != nil {
			return fmt.Errorf("stream purge: %w", err)
		}
		for _, e := range entries {
			budget := limit - out.Deleted
			tag, err := t.tx.Exec(t.ctx, sqlStreamPurgeState, e.key, e.pid, budget)
			if err != nil {
				return fmt.Errorf("stream purge: %w", err)
			}
			out.Deleted += int(tag.RowsAffected())
			if int(tag.RowsAffected()) >= budget {
				break
			}
			b := &pgx.Batch{}
			b.Queue(sqlStreamPurgeShards, e.key, e.pid)
			b.Queue(sqlStreamPurgeDone, e.key, e.pid)
			if err := t.execBatch(b); err != nil {
				return fmt.Errorf("stream purge: %w", err)
			}
		}
		if err := t.tx.QueryRow(t.ctx, sqlStreamPurgeMore).Scan(&out.More); err != nil {
			return fmt.Errorf("stream purge: %w", err)
		}
		return nil
	})
	return out, err
}

// StreamStateGet reads state rows in one statement (one snapshot), built
// from the filters given so that each is an index range: a prefix is a
// primary-key range (LIKE on a "C" column), ripeness a range of
// streams_state_ripe, and keys are one primary-key probe each. A planner
// whose statistics predate the shard (it grows from nothing to 100,000 keys
// between two ANALYZEs) otherwise scans the shard whole: as "key =
// ANY($keys)", or with the ripeness filter under ORDER BY key (the primary
// key's order saves a sort), it filtered 100,000 rows (50 to 160 ms instead
// of under 1 ms). OFFSET 0 keeps each key's probe a subquery of its own,
// and the ripe rows a subquery sorted afterwards.
func (s *Store) StreamStateGet(ctx context.Context, p *store.StreamStateGetParams) ([]store.StreamStateRow, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	args := []any{p.QueryID, store.TenantOrDefault(p.Tenant), p.PartitionID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	const shard = `s.state_key = (SELECT state_key FROM streams_queries WHERE uuid = $1 AND tenant = $2)
		AND s.partition_id = $3`
	var filters strings.Builder
	if p.KeyPrefix != "" {
		filters.WriteString(` AND s.key LIKE ` + arg(likePrefix(p.KeyPrefix)))
	}
	if p.RipeAtOrBefore != nil {
		filters.WriteString(` AND s.window_end <= ` + arg(*p.RipeAtOrBefore))
	}
	var q string
	switch {
	case len(p.Keys) > 0:
		q = `SELECT s.key, s.value, s.updated_at
			FROM (SELECT DISTINCT unnest(` + arg(p.Keys) + `::text[]) AS key) k CROSS JOIN LATERAL (
				SELECT s.key, s.value, s.updated_at FROM streams_state s
				WHERE ` + shard + ` AND s.key = k.key` + filters.String() + ` OFFSET 0) s
			ORDER BY s.key`
	case p.RipeAtOrBefore != nil:
		q = `SELECT * FROM (SELECT s.key, s.value, s.updated_at FROM streams_state s
			WHERE ` + shard + filters.String() + ` OFFSET 0) s ORDER BY s.key`
	default:
		q = `SELECT s.key, s.value, s.updated_at FROM streams_state s WHERE ` + shard + filters.String() + ` ORDER BY s.key`
	}
	rows, _ := s.pool.Query(ctx, q, args...)
	out := []store.StreamStateRow{}
	var r store.StreamStateRow
	var at int64
	if _, err := pgx.ForEachRow(rows, []any{&r.Key, &r.Value, &at}, func() error {
		r.UpdatedAt = fromMs(at)
		out = append(out, r)
		r.Value = nil // the next row scans into a fresh slice
		return nil
	}); err != nil {
		if s.closed() {
			return nil, store.ErrClosed
		}
		return nil, wrapErr("postgres: read stream state", err)
	}
	return out, nil
}

// likePrefix is the LIKE pattern of the strings starting with prefix: its
// wildcards and the escape character (backslash) escaped, then %.
func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// StreamQueryList lists queries in one read-only snapshot.
func (s *Store) StreamQueryList(ctx context.Context, p *store.StreamQueryListParams) (*store.StreamQueryListResult, error) {
	out := &store.StreamQueryListResult{Queries: []store.StreamQuery{}}
	tenant := store.TenantOrDefault(p.Tenant)
	err := s.inReadTx(ctx, "list stream queries", func(t *txn) error {
		var rows pgx.Rows
		if p.Name != "" {
			rows, _ = t.tx.Query(t.ctx, sqlStreamQueryOne, tenant, p.Name)
		} else {
			if err := t.tx.QueryRow(t.ctx, sqlStreamQueryCount, tenant).Scan(&out.Total); err != nil {
				return err
			}
			rows, _ = t.tx.Query(t.ctx, sqlStreamQueryPage, tenant, store.PageLimit(p.Limit), p.Offset)
		}
		var q store.StreamQuery
		var created, updated int64
		if _, err := pgx.ForEachRow(rows, []any{&q.ID, &q.Name, &q.SourceQueue, &q.SinkQueue, &q.ConfigHash,
			&created, &updated, &q.State.Partitions, &q.State.Rows, &q.State.Bytes}, func() error {
			q.CreatedAt, q.UpdatedAt = fromMs(created), fromMs(updated)
			out.Queries = append(out.Queries, q)
			return nil
		}); err != nil {
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
