package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/dlqsql"
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
			COALESCE(m.trace_id, ''), COALESCE(m.producer_sub, ''), m.payload, m.created_at, p.uuid, p.name, q.name,
			m.sealed
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
			created_at, sealed
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
			&d.TraceID, &d.ProducerSub, &d.Payload, &createdAt, &d.PartitionID, &d.Partition, &d.Queue,
			&d.Sealed); err != nil {
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
// job (dlqsql): the messages are pushed again in their order within each
// partition, then their dead letters deleted; the writer serialises two
// requeues of one message.
func (s *Store) DLQRequeue(ctx context.Context, p *store.DLQRequeueParams) (*store.DLQRequeueResult, error) {
	var out *store.DLQRequeueResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		var err error
		out, err = dlqsql.RequeueIn(dlqsql.Requeue[*dlqPick]{
			Pick:    func(pk *dlqPick) *dlqsql.Pick { return &pk.Pick },
			Refs:    t.pickRefs,
			Oldest:  t.pickOldest,
			FreeIDs: t.freeRetryIDs,
			Push:    t.push,
			Taken:   func(string) error { return errRetryTaken },
			Done:    t.dropDeadLetters,
		}, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errRetryTaken: a requeue's push found its retry transactionId taken,
// which the writer's serialisation rules out.
var errRetryTaken = errors.New("retry transactionId taken")

// dlqPick is a dead-lettered message selected for requeue with the dead
// letters to delete.
type dlqPick struct {
	dlqsql.Pick
	ids []int64
}

func newPick(part *ctlPartition, msg *ctlMessage, ids []int64) *dlqPick {
	return &dlqPick{Pick: dlqsql.Pick{Key: part.id, PartitionID: part.uuid, Partition: part.name, Queue: part.queue,
		Seq: msg.seq, TransactionID: msg.transactionID, TraceID: msg.traceID, ProducerSub: msg.producerSub,
		Payload: msg.payload, Sealed: msg.sealed}, ids: ids}
}

// pickRefs resolves the named messages and their dead letters matching the
// filter; the others are failures.
func (t *txn) pickRefs(tenant string, refs []store.MessageRef, f *store.DLQFilter) ([]*dlqPick, []store.RequeueFailure, error) {
	found := make([]*dlqPick, len(refs))
	for i, ref := range refs {
		part, msg, err := resolveMessage(t.ctx, t.tx, tenant, ref)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		args := append(dlqArgs(tenant, f), part.id, msg.seq)
		ids, err := readInts(t.ctx, t.tx, sqlDLQOfMessage, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("read dead letters: %w", err)
		}
		found[i] = newPick(part, msg, ids)
	}
	picks, failed := dlqsql.Sift(refs, func(i int) (*dlqPick, bool) { return found[i], found[i] != nil },
		func(pk *dlqPick) bool { return len(pk.ids) > 0 })
	return picks, failed, nil
}

// pickOldest selects the oldest dead letters matching the filter, grouped by
// message.
func (t *txn) pickOldest(tenant string, f *store.DLQFilter, limit int) ([]*dlqPick, error) {
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
	picks := make([]*dlqPick, 0, len(keys))
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
			&msg.traceID, &msg.producerSub, &msg.payload, &msg.createdAt, &msg.sealed); err != nil {
			return nil, fmt.Errorf("read message: %w", err)
		}
		picks = append(picks, newPick(part, msg, ids[i]))
	}
	return picks, nil
}

// dropDeadLetters deletes the dead letters of requeued picks.
func (t *txn) dropDeadLetters(picks []*dlqPick) error {
	var ids []int64
	for _, pk := range picks {
		ids = append(ids, pk.ids...)
	}
	if _, err := t.tx.ExecContext(t.ctx, `DELETE FROM dead_letters WHERE id IN (SELECT value FROM json_each(?))`,
		intsJSON(ids)); err != nil {
		return fmt.Errorf("delete dead letters: %w", err)
	}
	return nil
}

// freeRetryIDs returns per pick the first "<txn>:retry:<n>" free in its
// partition and not given to an earlier pick.
func (t *txn) freeRetryIDs(picks []*dlqPick) ([]string, error) {
	out := make([]string, len(picks))
	given := make(map[[2]string]bool)
	for i, pk := range picks {
		for n := 1; ; n++ {
			cand := store.RetryTransactionID(pk.TransactionID, n)
			k := [2]string{pk.PartitionID, cand}
			if given[k] {
				continue
			}
			var used bool
			if err := t.tx.QueryRowContext(t.ctx, sqlTxnTaken, pk.Key, cand).Scan(&used); err != nil {
				return nil, fmt.Errorf("read transactionIds: %w", err)
			}
			if !used {
				given[k], out[i] = true, cand
				break
			}
		}
	}
	return out, nil
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
