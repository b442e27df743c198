package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/queen-go/queen/internal/store"
)

const (
	sqlTraceInsert = `INSERT INTO traces (uuid, partition_id, transaction_id, consumer_group, event_type, data,
			worker_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	sqlTraceNameInsert = `INSERT INTO trace_names (trace_id, tenant, name, partition_id, transaction_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`
	sqlTraceNameTraces = `SELECT EXISTS (SELECT 1 FROM trace_names INDEXED BY trace_names_message
		WHERE tenant = ? AND name = ? AND partition_id = ? AND transaction_id = ?)`
	sqlTraceStatsHas = `SELECT EXISTS (SELECT 1 FROM trace_name_stats WHERE tenant = ? AND name = ?)`
	// One more trace under a name: ?3 is 1 when it traces a message the
	// name did not trace yet.
	sqlTraceStatsAdd = `INSERT INTO trace_name_stats (tenant, name, trace_count, message_count, last_seen)
		VALUES (?1, ?2, 1, ?3, ?4)
		ON CONFLICT (tenant, name) DO UPDATE SET trace_count = trace_count + 1,
			message_count = message_count + ?3, last_seen = max(last_seen, ?4)`
	sqlTraceStatsRemove = `UPDATE trace_name_stats SET trace_count = trace_count - ?3,
			message_count = message_count - ?4
		WHERE tenant = ?1 AND name = ?2`
	sqlTraceStatsDrop = `DELETE FROM trace_name_stats WHERE tenant = ? AND name = ? AND trace_count <= 0`
	sqlTraceTotalsAdd = `INSERT INTO trace_totals (tenant, names) VALUES (?1, ?2)
		ON CONFLICT (tenant) DO UPDATE SET names = names + ?2`

	// A message's traces, oldest first.
	sqlTraceList = `SELECT id, uuid, consumer_group, event_type, data, COALESCE(worker_id, ''), created_at
		FROM traces WHERE partition_id = ? AND transaction_id = ?
		ORDER BY created_at, id`
	sqlTraceNamesOf = `SELECT trace_id, name FROM trace_names WHERE trace_id IN (SELECT value FROM json_each(?))
		ORDER BY trace_id, name`
	// A page of a name's traces, oldest first, of queues that still exist,
	// with their message's payload while it can be read (not once cleared).
	sqlTraceByName = `SELECT t.id, t.uuid, t.transaction_id, t.consumer_group, t.event_type, t.data,
			COALESCE(t.worker_id, ''), t.created_at, p.uuid, p.name, q.name,
			(SELECT m.payload FROM messages m WHERE m.partition_id = t.partition_id
				AND m.transaction_id = t.transaction_id AND m.seq > p.cleared_offset)
		FROM trace_names n INDEXED BY trace_names_by_name
		JOIN traces t ON t.id = n.trace_id
		JOIN partitions p ON p.id = n.partition_id
		JOIN queues q ON q.id = p.queue_id AND q.tenant = n.tenant
		WHERE n.tenant = ? AND n.name = ?
		ORDER BY n.created_at, n.trace_id
		LIMIT ? OFFSET ?`
	sqlTraceNameCount = `SELECT COALESCE((SELECT trace_count FROM trace_name_stats WHERE tenant = ? AND name = ?), 0)`
	sqlTraceNames     = `SELECT name, trace_count, message_count, last_seen FROM trace_name_stats
		INDEXED BY trace_name_stats_recent
		WHERE tenant = ? ORDER BY last_seen DESC, name DESC LIMIT ? OFFSET ?`
	sqlTraceNamesTotal = `SELECT COALESCE((SELECT names FROM trace_totals WHERE tenant = ?), 0)`

	// Deleting traces: a bounded batch of a partition's (or of some of its
	// messages', ?2 a JSON array of transactionIds, along traces_message),
	// with their names.
	sqlTracesOf         = `SELECT id FROM traces WHERE partition_id = ?1 LIMIT ?2`
	sqlTracesOfMessages = `SELECT t.id FROM json_each(?2) j CROSS JOIN traces t INDEXED BY traces_message
		WHERE t.partition_id = ?1 AND t.transaction_id = j.value LIMIT ?3`
	sqlTracesAny = `SELECT EXISTS (SELECT 1 FROM traces WHERE partition_id = ?)`
	// The transactionIds of the first ?4 messages of partition ?1 with an
	// offset in (?2, ?3], oldest first.
	sqlMessageTxnsBetween = `SELECT transaction_id FROM messages WHERE partition_id = ?1 AND seq > ?2 AND seq <= ?3
		ORDER BY seq LIMIT ?4`
	sqlTraceNamesOfDeleted = `SELECT tenant, name, partition_id, transaction_id FROM trace_names
		WHERE trace_id IN (SELECT value FROM json_each(?))`
	sqlTraceNamesDelete = `DELETE FROM trace_names WHERE trace_id IN (SELECT value FROM json_each(?))`
	sqlTracesDelete     = `DELETE FROM traces WHERE id IN (SELECT value FROM json_each(?))`
)

// TraceRecord stores a trace in one writer job and updates its names'
// summaries. A trace is an observation a client sends after the fact: it
// commits like an ack, without waiting for the disk.
func (s *Store) TraceRecord(ctx context.Context, p *store.TraceRecordParams) error {
	tenant := store.TenantOrDefault(p.Tenant)
	return s.run(ctx, relaxed, func(tx *sql.Tx) error {
		t := s.txn(tx)
		part, _, err := resolveMessage(t.ctx, tx, tenant, p.MessageRef)
		if err != nil {
			return err
		}
		nowMs := p.Now.UnixMilli()
		res, err := tx.ExecContext(t.ctx, sqlTraceInsert, p.ID, part.id, p.TransactionID, p.ConsumerGroup,
			p.EventType, p.Data, nullString(p.WorkerID), nowMs)
		if err != nil {
			return fmt.Errorf("record trace: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for _, name := range p.Names {
			var traced, known bool
			if err := tx.QueryRowContext(t.ctx, sqlTraceNameTraces, tenant, name, part.id, p.TransactionID).
				Scan(&traced); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
			if err := tx.QueryRowContext(t.ctx, sqlTraceStatsHas, tenant, name).Scan(&known); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
			if _, err := tx.ExecContext(t.ctx, sqlTraceNameInsert, id, tenant, name, part.id, p.TransactionID,
				nowMs); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
			newMessage := 0
			if !traced {
				newMessage = 1
			}
			if _, err := tx.ExecContext(t.ctx, sqlTraceStatsAdd, tenant, name, newMessage, nowMs); err != nil {
				return fmt.Errorf("record trace: %w", err)
			}
			if !known {
				if _, err := tx.ExecContext(t.ctx, sqlTraceTotalsAdd, tenant, 1); err != nil {
					return fmt.Errorf("record trace: %w", err)
				}
			}
		}
		return nil
	})
}

// deleteTracesBetween deletes up to limit traces of the first n messages of
// partition pid with an offset in (after, through], oldest first, before
// those messages are deleted (a trace names its message by transactionId,
// so its traces are found while the message is there), and returns how
// many it deleted: fewer than limit means none of theirs is left. A
// partition without traces costs one index probe.
func deleteTracesBetween(ctx context.Context, tx *sql.Tx, pid, after, through int64, n, limit int) (int, error) {
	var has bool
	if err := tx.QueryRowContext(ctx, sqlTracesAny, pid).Scan(&has); err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	if !has {
		return 0, nil
	}
	txns, err := readStrings(ctx, tx, sqlMessageTxnsBetween, pid, after, through, n)
	if err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	if len(txns) == 0 {
		return 0, nil
	}
	return deleteTraces(ctx, tx, pid, txns, limit)
}

// deleteTraces deletes up to limit traces of partition pid (of its messages
// txns when txns is not nil), with their names, keeping the names'
// summaries exact, and returns how many it deleted.
func deleteTraces(ctx context.Context, tx *sql.Tx, pid int64, txns []string, limit int) (int, error) {
	var ids []int64
	var err error
	if txns == nil {
		ids, err = readInts(ctx, tx, sqlTracesOf, pid, limit)
	} else {
		var list []byte
		if list, err = json.Marshal(txns); err == nil {
			ids, err = readInts(ctx, tx, sqlTracesOfMessages, pid, string(list), limit)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	list := intsJSON(ids)
	rows, err := tx.QueryContext(ctx, sqlTraceNamesOfDeleted, list)
	if err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	type nameKey struct{ tenant, name string }
	type pairKey struct {
		nameKey
		pid int64
		txn string
	}
	traces := make(map[nameKey]int)
	pairs := make(map[pairKey]bool)
	for rows.Next() {
		var k pairKey
		if err := rows.Scan(&k.tenant, &k.name, &k.pid, &k.txn); err != nil {
			rows.Close()
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		traces[k.nameKey]++
		pairs[k] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	for _, q := range []string{sqlTraceNamesDelete, sqlTracesDelete} {
		if _, err := tx.ExecContext(ctx, q, list); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
	}
	// A name stops tracing a message when none of its traces of that
	// message is left.
	messages := make(map[nameKey]int)
	for k := range pairs {
		var traced bool
		if err := tx.QueryRowContext(ctx, sqlTraceNameTraces, k.tenant, k.name, k.pid, k.txn).Scan(&traced); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		if !traced {
			messages[k.nameKey]++
		}
	}
	keys := make([]nameKey, 0, len(traces))
	for k := range traces {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b nameKey) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.name, b.name))
	})
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, sqlTraceStatsRemove, k.tenant, k.name, traces[k], messages[k]); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		res, err := tx.ExecContext(ctx, sqlTraceStatsDrop, k.tenant, k.name)
		if err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			if _, err := tx.ExecContext(ctx, sqlTraceTotalsAdd, k.tenant, -1); err != nil {
				return 0, fmt.Errorf("delete traces: %w", err)
			}
		}
	}
	return len(ids), nil
}

// TraceList reads a message's traces through the read-only connections.
func (s *Store) TraceList(ctx context.Context, p *store.TraceListParams) ([]store.Trace, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	defer tx.Rollback()
	part, _, err := resolveMessage(ctx, tx, store.TenantOrDefault(p.Tenant), p.MessageRef)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, sqlTraceList, part.id, p.TransactionID)
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	out := []store.Trace{}
	var ids []int64
	for rows.Next() {
		tr := store.Trace{PartitionID: part.uuid, TransactionID: p.TransactionID}
		var id, createdAt int64
		if err := rows.Scan(&id, &tr.ID, &tr.ConsumerGroup, &tr.EventType, &tr.Data, &tr.WorkerID,
			&createdAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read traces: %w", err)
		}
		tr.CreatedAt = time.UnixMilli(createdAt).UTC()
		ids = append(ids, id)
		out = append(out, tr)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	if err := traceNames(ctx, tx, ids, out); err != nil {
		return nil, err
	}
	return out, nil
}

// traceNames fills the names of traces (ids[i] is out[i]'s row id).
func traceNames(ctx context.Context, q querier, ids []int64, out []store.Trace) error {
	if len(ids) == 0 {
		return nil
	}
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
		out[i].Names = []string{}
	}
	rows, err := q.QueryContext(ctx, sqlTraceNamesOf, intsJSON(ids))
	if err != nil {
		return fmt.Errorf("read trace names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return fmt.Errorf("read trace names: %w", err)
		}
		i := at[id]
		out[i].Names = append(out[i].Names, name)
	}
	return rows.Err()
}

// TraceListByName reads a page of a name's traces through the read-only
// connections.
func (s *Store) TraceListByName(ctx context.Context, p *store.TraceListByNameParams) (*store.TraceListByNameResult, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	defer tx.Rollback()
	res := &store.TraceListByNameResult{Traces: []store.Trace{}}
	if err := tx.QueryRowContext(ctx, sqlTraceNameCount, tenant, p.Name).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	rows, err := tx.QueryContext(ctx, sqlTraceByName, tenant, p.Name, limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var tr store.Trace
		var id, createdAt int64
		var payload []byte
		if err := rows.Scan(&id, &tr.ID, &tr.TransactionID, &tr.ConsumerGroup, &tr.EventType, &tr.Data,
			&tr.WorkerID, &createdAt, &tr.PartitionID, &tr.Partition, &tr.Queue, &payload); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read traces: %w", err)
		}
		tr.CreatedAt = time.UnixMilli(createdAt).UTC()
		tr.Payload = payload
		ids = append(ids, id)
		res.Traces = append(res.Traces, tr)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	if err := traceNames(ctx, tx, ids, res.Traces); err != nil {
		return nil, err
	}
	return res, nil
}

// TraceNames reads a page of the name summaries through the read-only
// connections.
func (s *Store) TraceNames(ctx context.Context, p *store.TraceNamesParams) (*store.TraceNamesResult, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	defer tx.Rollback()
	res := &store.TraceNamesResult{Names: []store.TraceName{}}
	if err := tx.QueryRowContext(ctx, sqlTraceNamesTotal, tenant).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	rows, err := tx.QueryContext(ctx, sqlTraceNames, tenant, limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n store.TraceName
		var last int64
		if err := rows.Scan(&n.Name, &n.TraceCount, &n.MessageCount, &last); err != nil {
			return nil, fmt.Errorf("read trace names: %w", err)
		}
		n.LastSeen = time.UnixMilli(last).UTC()
		res.Names = append(res.Names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	return res, nil
}
