package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Dead letters matching a filter: ?1 tenant, ?2 queue, ?3 consumer group,
// ?4 partition name, [?5, ?6) failure time. Dead letters of deleted queues
// join no queue; those of cleared messages (waiting to be freed with them)
// are gone already.
const dlqWhere = `q.tenant = ?1 AND (?2 = '' OR q.name = ?2) AND (?3 = '' OR d.consumer_group = ?3)
	AND (?4 = '' OR p.name = ?4) AND d.failed_at >= ?5 AND d.failed_at < ?6 AND d.message_seq > p.cleared_offset`

const (
	// A page of dead letters, newest failure first: a range of
	// dead_letters_failed, whose key (failed_at, rowid) is the order.
	sqlDLQList = `SELECT d.consumer_group, d.error, d.retry_count, d.failed_at, m.id, m.transaction_id,
			COALESCE(m.trace_id, ''), COALESCE(m.producer_sub, ''), m.payload, m.created_at, p.uuid, p.name, q.name
		FROM dead_letters d INDEXED BY dead_letters_failed
		JOIN partitions p ON p.id = d.partition_id
		JOIN queues q ON q.id = p.queue_id
		JOIN messages m ON m.seq = d.message_seq AND m.partition_id = d.partition_id
		WHERE ` + dlqWhere + `
		ORDER BY d.failed_at DESC, d.id DESC
		LIMIT ?7 OFFSET ?8`
	sqlDLQDelete = `DELETE FROM dead_letters WHERE id IN (
		SELECT d.id FROM dead_letters d
		JOIN partitions p ON p.id = d.partition_id
		JOIN queues q ON q.id = p.queue_id
		WHERE ` + dlqWhere + `
		LIMIT ?7)`
	// The oldest dead letters matching the filter, to requeue.
	sqlDLQOldest = `SELECT d.id, d.partition_id, d.message_seq
		FROM dead_letters d INDEXED BY dead_letters_failed
		JOIN partitions p ON p.id = d.partition_id
		JOIN queues q ON q.id = p.queue_id
		WHERE ` + dlqWhere + `
		ORDER BY d.failed_at, d.id
		LIMIT ?7`
	// One message's dead letters matching the filter.
	sqlDLQOfMessage = `SELECT d.id FROM dead_letters d
		JOIN partitions p ON p.id = d.partition_id
		JOIN queues q ON q.id = p.queue_id
		WHERE d.partition_id = ?7 AND d.message_seq = ?8 AND ` + dlqWhere
	sqlDLQPartition = `SELECT p.id, p.uuid, p.name, p.last_offset, q.name, q.namespace, q.task, q.priority, q.options
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = ?`
	sqlDLQMessageAt = `SELECT seq, id, transaction_id, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), payload,
			created_at
		FROM messages WHERE seq = ?`
	sqlTxnTaken = `SELECT EXISTS (SELECT 1 FROM messages WHERE partition_id = ? AND transaction_id = ?)`
)

// dlqArgs are the filter's arguments ?1 to ?6.
func dlqArgs(tenant string, f *store.DLQFilter) []any {
	to := int64(1<<63 - 1)
	if !f.To.IsZero() {
		to = f.To.UnixMilli()
	}
	var from int64 = -1 << 63
	if !f.From.IsZero() {
		from = f.From.UnixMilli()
	}
	return []any{tenant, f.Queue, f.ConsumerGroup, f.Partition, from, to}
}

// DLQList reads a page of dead letters through the read-only connections.
func (s *Store) DLQList(ctx context.Context, p *store.DLQListParams) ([]store.DeadLetter, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	args := append(dlqArgs(store.TenantOrDefault(p.Tenant), &p.DLQFilter), limit, p.Offset)
	rows, err := s.reader.QueryContext(ctx, sqlDLQList, args...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	out := []store.DeadLetter{}
	for rows.Next() {
		var d store.DeadLetter
		var failedAt, createdAt int64
		if err := rows.Scan(&d.ConsumerGroup, &d.Error, &d.RetryCount, &failedAt, &d.MessageID, &d.TransactionID,
			&d.TraceID, &d.ProducerSub, &d.Payload, &createdAt, &d.PartitionID, &d.Partition, &d.Queue); err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		d.FailedAt, d.CreatedAt = time.UnixMilli(failedAt).UTC(), time.UnixMilli(createdAt).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// DLQDelete deletes up to p.Limit dead letters in one writer job.
func (s *Store) DLQDelete(ctx context.Context, p *store.DLQDeleteParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	args := append(dlqArgs(store.TenantOrDefault(p.Tenant), &p.DLQFilter), limit)
	n := 0
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sqlDLQDelete, args...)
		if err != nil {
			return fmt.Errorf("delete dead letters: %w", err)
		}
		deleted, _ := res.RowsAffected()
		n = int(deleted)
		return nil
	})
	return n, err
}

// DLQRequeue requeues a selection of dead-lettered messages in one writer
// job: the messages are pushed again in their order within each partition
// and their dead letters deleted.
func (s *Store) DLQRequeue(ctx context.Context, p *store.DLQRequeueParams) (*store.DLQRequeueResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	var out *store.DLQRequeueResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		out = &store.DLQRequeueResult{}
		t := s.txn(tx)
		var picks []dlqPick
		var err error
		if len(p.Refs) > 0 {
			picks, out.Failed, err = t.pickRefs(tenant, p)
		} else {
			picks, err = t.pickOldest(tenant, &p.DLQFilter, limit)
		}
		if err != nil {
			return err
		}
		out.Requeued, err = t.requeue(tenant, picks, p.Now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dlqPick is a dead-lettered message selected for requeue with the dead
// letters to delete.
type dlqPick struct {
	part *ctlPartition
	msg  *ctlMessage
	ids  []int64
}

// pickRefs resolves the named messages and their dead letters matching the
// filter; the others are failures.
func (t *txn) pickRefs(tenant string, p *store.DLQRequeueParams) ([]dlqPick, []store.RequeueFailure, error) {
	var picks []dlqPick
	var failed []store.RequeueFailure
	seen := make(map[store.MessageRef]bool, len(p.Refs))
	for _, ref := range p.Refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		part, msg, err := resolveMessage(t.ctx, t.tx, tenant, ref)
		if errors.Is(err, store.ErrNotFound) {
			failed = append(failed, store.RequeueFailure{MessageRef: ref, Error: api.TextMessageNotFound})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		args := append(dlqArgs(tenant, &p.DLQFilter), part.id, msg.seq)
		ids, err := readInts(t.ctx, t.tx, sqlDLQOfMessage, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("read dead letters: %w", err)
		}
		if len(ids) == 0 {
			failed = append(failed, store.RequeueFailure{MessageRef: ref, Error: store.ErrNotDeadLettered.Error()})
			continue
		}
		picks = append(picks, dlqPick{part: part, msg: msg, ids: ids})
	}
	return picks, failed, nil
}

// pickOldest selects the oldest dead letters matching the filter, grouped by
// message.
func (t *txn) pickOldest(tenant string, f *store.DLQFilter, limit int) ([]dlqPick, error) {
	rows, err := t.tx.QueryContext(t.ctx, sqlDLQOldest, append(dlqArgs(tenant, f), limit)...)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	type key struct{ pid, seq int64 }
	index := make(map[key]int)
	var keys []key
	var ids [][]int64
	for rows.Next() {
		var id int64
		var k key
		if err := rows.Scan(&id, &k.pid, &k.seq); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read dead letters: %w", err)
		}
		i, ok := index[k]
		if !ok {
			i = len(keys)
			index[k] = i
			keys = append(keys, k)
			ids = append(ids, nil)
		}
		ids[i] = append(ids[i], id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	parts := make(map[int64]*ctlPartition)
	picks := make([]dlqPick, 0, len(keys))
	for i, k := range keys {
		part := parts[k.pid]
		if part == nil {
			part = &ctlPartition{}
			if err := t.tx.QueryRowContext(t.ctx, sqlDLQPartition, k.pid).Scan(&part.id, &part.uuid, &part.name,
				&part.lastOffset, &part.queue, &part.namespace, &part.task, &part.priority, &part.options); err != nil {
				return nil, fmt.Errorf("read partition: %w", err)
			}
			parts[k.pid] = part
		}
		msg := &ctlMessage{}
		if err := t.tx.QueryRowContext(t.ctx, sqlDLQMessageAt, k.seq).Scan(&msg.seq, &msg.id, &msg.transactionID,
			&msg.traceID, &msg.producerSub, &msg.payload, &msg.createdAt); err != nil {
			return nil, fmt.Errorf("read message: %w", err)
		}
		picks = append(picks, dlqPick{part: part, msg: msg, ids: ids[i]})
	}
	return picks, nil
}

// requeue pushes the picked messages again, in offset order within each
// partition, under fresh transactionIds, and deletes their dead letters.
func (t *txn) requeue(tenant string, picks []dlqPick, now time.Time) ([]store.Requeued, error) {
	if len(picks) == 0 {
		return []store.Requeued{}, nil
	}
	slices.SortStableFunc(picks, func(a, b dlqPick) int {
		return cmp.Or(cmp.Compare(a.part.id, b.part.id), cmp.Compare(a.msg.seq, b.msg.seq))
	})
	items := make([]store.PushItem, len(picks))
	taken := make(map[[2]string]bool)
	for i, pk := range picks {
		txn, err := t.freeRetryID(pk.part, pk.msg.transactionID, taken)
		if err != nil {
			return nil, err
		}
		items[i] = store.PushItem{
			MessageID: uuid.Must(uuid.NewV7()).String(), Partition: pk.part.name, Payload: pk.msg.payload,
			ProducerSub: pk.msg.producerSub, Queue: pk.part.queue, Tenant: tenant, TraceID: pk.msg.traceID,
			TransactionID: txn,
		}
	}
	res, err := t.push(items, now)
	if err != nil {
		return nil, err
	}
	out := make([]store.Requeued, len(picks))
	var ids []int64
	for i, pk := range picks {
		if res[i].Status != store.PushQueued {
			return nil, fmt.Errorf("requeue %s: push answered %s", items[i].TransactionID, res[i].Status)
		}
		out[i] = store.Requeued{MessageID: items[i].MessageID, OriginalTransactionID: pk.msg.transactionID,
			PartitionID: pk.part.uuid, Queue: pk.part.queue, TransactionID: items[i].TransactionID}
		ids = append(ids, pk.ids...)
	}
	if _, err := t.tx.ExecContext(t.ctx, `DELETE FROM dead_letters WHERE id IN (SELECT value FROM json_each(?))`,
		intsJSON(ids)); err != nil {
		return nil, fmt.Errorf("delete dead letters: %w", err)
	}
	return out, nil
}

// freeRetryID returns the first "<txn>:retry:<n>" free in the partition and
// not taken by this batch, and takes it.
func (t *txn) freeRetryID(part *ctlPartition, txn string, taken map[[2]string]bool) (string, error) {
	for n := 1; ; n++ {
		cand := store.RetryTransactionID(txn, n)
		k := [2]string{part.uuid, cand}
		if taken[k] {
			continue
		}
		var used bool
		if err := t.tx.QueryRowContext(t.ctx, sqlTxnTaken, part.id, cand).Scan(&used); err != nil {
			return "", fmt.Errorf("read transactionIds: %w", err)
		}
		if !used {
			taken[k] = true
			return cand, nil
		}
	}
}

// readInts runs a query of one integer column.
func readInts(ctx context.Context, q querier, query string, args ...any) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// intsJSON renders ids as a JSON array, for json_each.
func intsJSON(ids []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return b.String()
}
