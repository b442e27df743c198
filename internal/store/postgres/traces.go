package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
	"github.com/queen-go/queen/internal/store/tracesql"
)

// Trace names keep summaries (trace_name_stats, trace_totals) exact under
// concurrency: every writer locks the summary rows of the names it touches
// in (tenant, name) order before it looks at trace_names, and trace_totals
// last. A writer that then checks whether a name already traces a message
// therefore sees every trace of that name committed before it.

const (
	// The message a trace is for (not a cleared one): its partition.
	sqlTraceTarget = `SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
		JOIN messages m ON m.partition_id = p.id AND m.transaction_id = $3 AND m.seq > p.cleared_offset
		WHERE p.uuid = $1 AND q.tenant = $2`
	sqlTraceInsert = `INSERT INTO traces (uuid, partition_id, transaction_id, consumer_group, event_type, data,
			worker_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8)
		RETURNING id`
	// One more trace under a name; reports whether the name is new.
	sqlTraceStatsAdd = `INSERT INTO trace_name_stats AS s (tenant, name, trace_count, message_count, last_seen)
		VALUES ($1, $2, 1, 0, $3)
		ON CONFLICT (tenant, name) DO UPDATE SET trace_count = s.trace_count + 1,
			last_seen = greatest(s.last_seen, excluded.last_seen)
		RETURNING xmax = 0`
	sqlTraceNameTraces = `SELECT EXISTS (SELECT 1 FROM trace_names
		WHERE tenant = $1 AND name = $2 AND partition_id = $3 AND transaction_id = $4)`
	sqlTraceStatsMessage = `UPDATE trace_name_stats SET message_count = message_count + 1
		WHERE tenant = $1 AND name = $2`
	sqlTraceTotalsAdd = `INSERT INTO trace_totals AS t (tenant, names) VALUES ($1, $2)
		ON CONFLICT (tenant) DO UPDATE SET names = t.names + excluded.names`

	// The names of some traces.
	sqlTraceNamesOf = `SELECT trace_id, name FROM trace_names WHERE trace_id = ANY($1::bigint[])
		ORDER BY trace_id, name`
	// A page of a name's traces, oldest first, of queues that still exist,
	// with their message's payload while it can be read (not once cleared).
	sqlTraceByName = `SELECT t.id, t.uuid, t.transaction_id, t.consumer_group, t.event_type, t.data,
			COALESCE(t.worker_id, ''), t.created_at, p.uuid, p.name, q.name, m.payload, COALESCE(m.sealed, 0)
		FROM trace_names n
		JOIN traces t ON t.id = n.trace_id
		JOIN partitions p ON p.id = n.partition_id
		JOIN queues q ON q.id = p.queue_id AND q.tenant = n.tenant
		LEFT JOIN messages m ON m.partition_id = t.partition_id AND m.transaction_id = t.transaction_id
			AND m.seq > p.cleared_offset
		WHERE n.tenant = $1 AND n.name = $2
		ORDER BY n.created_at, n.trace_id
		LIMIT $3 OFFSET $4`
	sqlTraceNames = `SELECT name, trace_count, message_count, last_seen FROM trace_name_stats
		WHERE tenant = $1 ORDER BY last_seen DESC, name DESC LIMIT $2 OFFSET $3`

	// Deleting a bounded batch of a partition's traces (or of some of its
	// messages', by transactionId along traces_message) and their names.
	sqlTracesDelete = `DELETE FROM traces WHERE id IN (SELECT id FROM traces WHERE partition_id = $1 LIMIT $2)
		RETURNING id`
	sqlTracesDeleteOf = `DELETE FROM traces WHERE id IN (
			SELECT id FROM traces WHERE partition_id = $1 AND transaction_id = ANY($2::text[]) LIMIT $3)
		RETURNING id`
	// The transactionIds of the first $4 messages of partition $1 with an
	// offset in ($2, $3], oldest first; none when the partition has no
	// trace (one probe, evaluated once).
	sqlTracedTxnsBetween = `SELECT m.transaction_id FROM messages m
		WHERE EXISTS (SELECT 1 FROM traces WHERE partition_id = $1)
		  AND m.partition_id = $1 AND m.seq > $2 AND m.seq <= $3
		ORDER BY m.seq LIMIT $4`
	sqlTraceNamesDelete = `DELETE FROM trace_names WHERE trace_id = ANY($1::bigint[])
		RETURNING tenant, name, partition_id, transaction_id`
	sqlTraceStatsLock = `SELECT 1 FROM trace_name_stats s
		JOIN unnest($1::text[], $2::text[]) AS k(tenant, name) ON s.tenant = k.tenant AND s.name = k.name
		ORDER BY s.tenant, s.name FOR UPDATE OF s`
	// Which (tenant, name, partition, transactionId) are still traced.
	sqlTracePairsLeft = `SELECT k.tenant, k.name, k.partition_id, k.transaction_id
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS k(tenant, name, partition_id, transaction_id)
		WHERE EXISTS (SELECT 1 FROM trace_names n WHERE n.tenant = k.tenant AND n.name = k.name
			AND n.partition_id = k.partition_id AND n.transaction_id = k.transaction_id)`
	sqlTraceStatsRemove = `UPDATE trace_name_stats SET trace_count = trace_count - $3,
			message_count = message_count - $4
		WHERE tenant = $1 AND name = $2
		RETURNING trace_count`
	sqlTraceStatsDrop = `DELETE FROM trace_name_stats WHERE tenant = $1 AND name = $2`
)

// TraceRecord stores a trace and updates its names' summaries. A trace is an
// observation a client sends after the fact: it commits like an ack, without
// waiting for the WAL flush.
func (s *Store) TraceRecord(ctx context.Context, p *store.TraceRecordParams) error {
	tenant := store.TenantOrDefault(p.Tenant)
	names := slices.Clone(p.Names)
	slices.Sort(names) // the summary rows' lock order
	return s.inRelaxedTx(ctx, "record trace", func(t *txn) error {
		var pid int64
		err := t.tx.QueryRow(t.ctx, sqlTraceTarget, p.PartitionID, tenant, p.TransactionID).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read message: %w", err)
		}
		nowMs := p.Now.UnixMilli()
		var id int64
		if err := t.tx.QueryRow(t.ctx, sqlTraceInsert, p.ID, pid, p.TransactionID, p.ConsumerGroup, p.EventType,
			p.Data, p.WorkerID, nowMs).Scan(&id); err != nil {
			return fmt.Errorf("record trace: %w", err)
		}
		added := 0
		for _, name := range names {
			var isNew, traced bool
			if err := t.tx.QueryRow(t.ctx, sqlTraceStatsAdd, tenant, name, nowMs).Scan(&isNew); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
			if isNew {
				added++
			}
			if err := t.tx.QueryRow(t.ctx, sqlTraceNameTraces, tenant, name, pid, p.TransactionID).
				Scan(&traced); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
			b := &pgx.Batch{}
			b.Queue(tracesql.NameInsert, id, tenant, name, pid, p.TransactionID, nowMs)
			if !traced {
				b.Queue(sqlTraceStatsMessage, tenant, name)
			}
			if err := t.execBatch(b); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
		}
		if added > 0 {
			if _, err := t.tx.Exec(t.ctx, sqlTraceTotalsAdd, tenant, added); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
		}
		return nil
	})
}

// deleteTracesBetween deletes up to limit traces of the first n messages of
// partition pid with an offset in (after, through], oldest first, before
// those messages are deleted (a trace names its message by transactionId,
// so its traces are found while the message is there), and returns how
// many it deleted: fewer than limit means none of theirs is left.
func (t *txn) deleteTracesBetween(pid, after, through int64, n, limit int) (int, error) {
	rows, _ := t.tx.Query(t.ctx, sqlTracedTxnsBetween, pid, after, through, n)
	txns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	if len(txns) == 0 {
		return 0, nil
	}
	return t.deleteTraces(pid, txns, limit)
}

// deleteTraces deletes up to limit traces of partition pid (of its messages
// txns when txns is not nil), with their names, keeping the names'
// summaries exact, and returns how many it deleted.
func (t *txn) deleteTraces(pid int64, txns []string, limit int) (int, error) {
	var rows pgx.Rows
	if txns == nil {
		rows, _ = t.tx.Query(t.ctx, sqlTracesDelete, pid, limit)
	} else {
		rows, _ = t.tx.Query(t.ctx, sqlTracesDeleteOf, pid, txns, limit)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	tally := tracesql.NewTally()
	var k tracesql.Pair
	rows, _ = t.tx.Query(t.ctx, sqlTraceNamesDelete, ids)
	if _, err := pgx.ForEachRow(rows, []any{&k.Tenant, &k.Name.Name, &k.Partition, &k.Txn}, func() error {
		tally.Add(k)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	if len(tally.Traces) == 0 {
		return len(ids), nil
	}
	keys := tally.Names()
	tenants, names := make([]string, len(keys)), make([]string, len(keys))
	for i, nk := range keys {
		tenants[i], names[i] = nk.Tenant, nk.Name
	}
	if _, err := t.tx.Exec(t.ctx, sqlTraceStatsLock, tenants, names); err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	// With the summaries locked, every trace recorded under these names
	// before is visible: a name stops tracing a message when none is left.
	var pt, pn, ptx []string
	var pp []int64
	for pk := range tally.Pairs {
		pt, pn, pp, ptx = append(pt, pk.Tenant), append(pn, pk.Name.Name), append(pp, pk.Partition), append(ptx, pk.Txn)
	}
	still := make(map[tracesql.Pair]bool)
	rows, _ = t.tx.Query(t.ctx, sqlTracePairsLeft, pt, pn, pp, ptx)
	if _, err := pgx.ForEachRow(rows, []any{&k.Tenant, &k.Name.Name, &k.Partition, &k.Txn}, func() error {
		still[k] = true
		return nil
	}); err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	messages, _ := tally.Untraced(func(k tracesql.Pair) (bool, error) { return still[k], nil })
	dropped := make(map[string]int)
	var tenantOrder []string
	for _, nk := range keys {
		var left int64
		err := t.tx.QueryRow(t.ctx, sqlTraceStatsRemove, nk.Tenant, nk.Name, tally.Traces[nk], messages[nk]).Scan(&left)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		if left > 0 {
			continue
		}
		if _, err := t.tx.Exec(t.ctx, sqlTraceStatsDrop, nk.Tenant, nk.Name); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		if dropped[nk.Tenant] == 0 {
			tenantOrder = append(tenantOrder, nk.Tenant)
		}
		dropped[nk.Tenant]++
	}
	for _, tenant := range tenantOrder {
		if _, err := t.tx.Exec(t.ctx, sqlTraceTotalsAdd, tenant, -dropped[tenant]); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
	}
	return len(ids), nil
}

// TraceList reads a message's traces and their names.
func (s *Store) TraceList(ctx context.Context, p *store.TraceListParams) ([]store.Trace, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	var pid int64
	err := s.pool.QueryRow(ctx, sqlTraceTarget, p.PartitionID, store.TenantOrDefault(p.Tenant), p.TransactionID).
		Scan(&pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, wrapErr("postgres: read traces", err)
	}
	out, ids, err := tracesql.ListIn(s.poolQ(ctx), pid, p.PartitionID, p.TransactionID)
	if err != nil {
		return nil, wrapErr("postgres", err)
	}
	if err := s.traceNames(ctx, ids, out); err != nil {
		return nil, err
	}
	return out, nil
}

// traceNames fills the names of traces (ids[i] is out[i]'s row id).
func (s *Store) traceNames(ctx context.Context, ids []int64, out []store.Trace) error {
	return readErr("postgres", tracesql.FillNames(s.poolQ(ctx), sqlTraceNamesOf, ids, ids, out))
}

// TraceListByName reads a page of a name's traces and the name's count in
// one pipelined batch, then the traces' names.
func (s *Store) TraceListByName(ctx context.Context, p *store.TraceListByNameParams) (*store.TraceListByNameResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	limit := tracesql.ByNameLimit(p)
	b := &pgx.Batch{}
	b.Queue(tracesql.NameCount, tenant, p.Name)
	b.Queue(sqlTraceByName, tenant, p.Name, limit, p.Offset)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	res := &store.TraceListByNameResult{Traces: []store.Trace{}}
	if err := br.QueryRow().Scan(&res.Total); err != nil {
		return nil, wrapErr("postgres: read traces", err)
	}
	var ids []int64
	if err := eachRow(must(br.Query()), func(row sqlq.Row) error {
		id, tr, err := tracesql.ScanByName(row)
		ids, res.Traces = append(ids, id), append(res.Traces, tr)
		return err
	}); err != nil {
		return nil, wrapErr("postgres: read traces", err)
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr("postgres: read traces", err)
	}
	if err := s.traceNames(ctx, ids, res.Traces); err != nil {
		return nil, err
	}
	return res, nil
}

// TraceNames reads a page of the name summaries and their total in one
// pipelined batch.
func (s *Store) TraceNames(ctx context.Context, p *store.TraceNamesParams) (*store.TraceNamesResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	limit := tracesql.NamesLimit(p)
	b := &pgx.Batch{}
	b.Queue(tracesql.NamesTotal, tenant)
	b.Queue(sqlTraceNames, tenant, limit, p.Offset)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	res := &store.TraceNamesResult{Names: []store.TraceName{}}
	if err := br.QueryRow().Scan(&res.Total); err != nil {
		return nil, wrapErr("postgres: read trace names", err)
	}
	if err := eachRow(must(br.Query()), func(row sqlq.Row) error {
		n, err := tracesql.ScanName(row)
		res.Names = append(res.Names, n)
		return err
	}); err != nil {
		return nil, wrapErr("postgres: read trace names", err)
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr("postgres: read trace names", err)
	}
	return res, nil
}
