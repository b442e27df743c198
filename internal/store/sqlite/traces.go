package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
	"github.com/queen-go/queen/internal/store/tracesql"
)

const (
	sqlTraceInsert = `INSERT INTO traces (uuid, partition_id, transaction_id, consumer_group, event_type, data,
			worker_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
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

	sqlTraceNamesOf = `SELECT trace_id, name FROM trace_names WHERE trace_id IN (SELECT value FROM json_each(?))
		ORDER BY trace_id, name`
	// A page of a name's traces, oldest first, of queues that still exist,
	// with their message's payload while it can be read (not once cleared).
	sqlTraceByName = `SELECT t.id, t.uuid, t.transaction_id, t.consumer_group, t.event_type, t.data,
			COALESCE(t.worker_id, ''), t.created_at, p.uuid, p.name, q.name,
			(SELECT m.payload FROM messages m WHERE m.partition_id = t.partition_id
				AND m.transaction_id = t.transaction_id AND m.seq > p.cleared_offset),
			COALESCE((SELECT m.sealed FROM messages m WHERE m.partition_id = t.partition_id
				AND m.transaction_id = t.transaction_id AND m.seq > p.cleared_offset), 0)
		FROM trace_names n INDEXED BY trace_names_by_name
		JOIN traces t ON t.id = n.trace_id
		JOIN partitions p ON p.id = n.partition_id
		JOIN queues q ON q.id = p.queue_id AND q.tenant = n.tenant
		WHERE n.tenant = ? AND n.name = ?
		ORDER BY n.created_at, n.trace_id
		LIMIT ? OFFSET ?`
	sqlTraceNames = `SELECT name, trace_count, message_count, last_seen FROM trace_name_stats
		INDEXED BY trace_name_stats_recent
		WHERE tenant = ? ORDER BY last_seen DESC, name DESC LIMIT ? OFFSET ?`

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
			if _, err := tx.ExecContext(t.ctx, sqlq.SQLite(tracesql.NameInsert), id, tenant, name, part.id, p.TransactionID,
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
	tally := tracesql.NewTally()
	if err := txQ(ctx, tx).Each(sqlTraceNamesOfDeleted, []any{list}, func(row sqlq.Row) error {
		var k tracesql.Pair
		err := row.Scan(&k.Tenant, &k.Name.Name, &k.Partition, &k.Txn)
		tally.Add(k)
		return err
	}); err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	for _, q := range []string{sqlTraceNamesDelete, sqlTracesDelete} {
		if _, err := tx.ExecContext(ctx, q, list); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
	}
	// A name stops tracing a message when none of its traces of that
	// message is left.
	messages, err := tally.Untraced(func(k tracesql.Pair) (bool, error) {
		var traced bool
		err := tx.QueryRowContext(ctx, sqlTraceNameTraces, k.Tenant, k.Name.Name, k.Partition, k.Txn).Scan(&traced)
		return traced, err
	})
	if err != nil {
		return 0, fmt.Errorf("delete traces: %w", err)
	}
	for _, k := range tally.Names() {
		if _, err := tx.ExecContext(ctx, sqlTraceStatsRemove, k.Tenant, k.Name, tally.Traces[k], messages[k]); err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		res, err := tx.ExecContext(ctx, sqlTraceStatsDrop, k.Tenant, k.Name)
		if err != nil {
			return 0, fmt.Errorf("delete traces: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			if _, err := tx.ExecContext(ctx, sqlTraceTotalsAdd, k.Tenant, -1); err != nil {
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
	out, ids, err := tracesql.ListIn(txQ(ctx, tx), part.id, part.uuid, p.TransactionID)
	if err != nil {
		return nil, err
	}
	if err := traceNames(ctx, tx, ids, out); err != nil {
		return nil, err
	}
	return out, nil
}

// traceNames fills the names of traces (ids[i] is out[i]'s row id).
func traceNames(ctx context.Context, tx *sql.Tx, ids []int64, out []store.Trace) error {
	return tracesql.FillNames(txQ(ctx, tx), sqlTraceNamesOf, intsJSON(ids), ids, out)
}

// TraceListByName reads a page of a name's traces through the read-only
// connections.
func (s *Store) TraceListByName(ctx context.Context, p *store.TraceListByNameParams) (*store.TraceListByNameResult, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	limit := tracesql.ByNameLimit(p)
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	defer tx.Rollback()
	res := &store.TraceListByNameResult{Traces: []store.Trace{}}
	if err := tx.QueryRowContext(ctx, sqlq.SQLite(tracesql.NameCount), tenant, p.Name).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	var ids []int64
	if err := txQ(ctx, tx).Each(sqlTraceByName, []any{tenant, p.Name, limit, p.Offset}, func(row sqlq.Row) error {
		id, tr, err := tracesql.ScanByName(row)
		ids, res.Traces = append(ids, id), append(res.Traces, tr)
		return err
	}); err != nil {
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
	limit := tracesql.NamesLimit(p)
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	defer tx.Rollback()
	res := &store.TraceNamesResult{Names: []store.TraceName{}}
	if err := tx.QueryRowContext(ctx, sqlq.SQLite(tracesql.NamesTotal), tenant).Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	if err := txQ(ctx, tx).Each(sqlTraceNames, []any{tenant, limit, p.Offset}, func(row sqlq.Row) error {
		n, err := tracesql.ScanName(row)
		res.Names = append(res.Names, n)
		return err
	}); err != nil {
		return nil, fmt.Errorf("read trace names: %w", err)
	}
	return res, nil
}
