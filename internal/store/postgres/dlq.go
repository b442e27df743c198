package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/dlqsql"
)

// Dead letters matching a filter: $1 tenant, $2 queue, $3 consumer group,
// $4 partition name, [$5, $6) failure time. Dead letters of deleted queues
// join no partition; those of cleared messages (waiting to be freed with
// them) are gone already.
const dlqWhere = `q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR d.consumer_group = $3)
	AND ($4 = '' OR p.name = $4) AND d.failed_at >= $5 AND d.failed_at < $6 AND d.message_seq > p.cleared_offset`

const (
	// A page of dead letters, newest failure first (dead_letters_failed).
	sqlDLQList = `SELECT d.consumer_group, d.error, d.retry_count, d.failed_at, m.id, m.transaction_id,
			COALESCE(m.trace_id, ''), COALESCE(m.producer_sub, ''), m.payload, m.created_at, p.uuid, p.name, q.name,
			m.sealed
		FROM dead_letters d
		JOIN partitions p ON p.id = d.partition_id
		JOIN queues q ON q.id = p.queue_id
		JOIN messages m ON m.partition_id = d.partition_id AND m.seq = d.message_seq
		WHERE ` + dlqWhere + `
		ORDER BY d.failed_at DESC, d.id DESC
		LIMIT $7 OFFSET $8`
	sqlDLQDelete = `DELETE FROM dead_letters WHERE id IN (
		SELECT d.id FROM dead_letters d
		JOIN partitions p ON p.id = d.partition_id
		JOIN queues q ON q.id = p.queue_id
		WHERE ` + dlqWhere + `
		LIMIT $7)`
	// Take the oldest dead letters matching the filter (skipping those a
	// concurrent requeue holds) and return their messages. Each dead
	// letter's partition is a LATERAL probe of its primary key (OFFSET 0
	// keeps the planner from turning it into a join), and the dead letters
	// taken are deleted by primary key: as joins, statistics that thought
	// the tables small hashed them against scans of partitions and of
	// dead_letters.
	sqlDLQTakeOldest = `DELETE FROM dead_letters WHERE id = ANY(ARRAY(
			SELECT d.id FROM dead_letters d
			CROSS JOIN LATERAL (SELECT * FROM partitions p WHERE p.id = d.partition_id OFFSET 0) p
			JOIN queues q ON q.id = p.queue_id
			WHERE ` + dlqWhere + `
			ORDER BY d.failed_at, d.id
			LIMIT $7
			FOR UPDATE OF d SKIP LOCKED))
		RETURNING partition_id, message_seq`
	// Take the named messages' dead letters matching the filter: per
	// message, its partition and its dead letters by index (LATERAL, as
	// above). A concurrent requeue of the same one waits, then finds it
	// gone.
	sqlDLQTakeOf = `DELETE FROM dead_letters WHERE id = ANY(ARRAY(
			SELECT d.id FROM unnest($7::bigint[], $8::bigint[]) AS a(partition_id, seq)
			CROSS JOIN LATERAL (SELECT * FROM partitions p WHERE p.id = a.partition_id OFFSET 0) p
			JOIN queues q ON q.id = p.queue_id
			CROSS JOIN LATERAL (SELECT * FROM dead_letters d
				WHERE d.partition_id = a.partition_id AND d.message_seq = a.seq OFFSET 0) d
			WHERE ` + dlqWhere + `))
		RETURNING partition_id, message_seq`
	// The named messages, of the tenant's queues: per ref, its partition
	// by uuid, then its message as a probe of messages_partition_txn on
	// (partition, transactionId) alone, the offset test outside it (LATERAL
	// subqueries with OFFSET 0 or LIMIT, which the planner cannot turn into
	// joins). As joins, stale statistics had the planner walk each
	// message's whole partition by primary key from its cleared offset (as
	// ack resolution once did), or hash the refs against a scan of
	// partitions.
	sqlDLQMessagesByRef = `SELECT a.ord, p.id, p.uuid, p.name, q.name, m.seq, m.id, m.transaction_id,
			COALESCE(m.trace_id, ''), COALESCE(m.producer_sub, ''), m.payload, m.sealed
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS a(partition_uuid, transaction_id, ord)
		CROSS JOIN LATERAL (SELECT * FROM partitions p WHERE p.uuid = a.partition_uuid OFFSET 0) p
		JOIN queues q ON q.id = p.queue_id AND q.tenant = $3
		CROSS JOIN LATERAL (SELECT * FROM messages m
			WHERE m.partition_id = p.id AND m.transaction_id = a.transaction_id LIMIT 1) m
		WHERE m.seq > p.cleared_offset`
	// Messages by offset: per message, its partition and the message by
	// primary key (LATERAL, as above: as joins, the planner hashed the
	// offsets against a scan of partitions and walked each partition).
	sqlDLQMessagesAt = `SELECT 0::bigint, p.id, p.uuid, p.name, q.name, m.seq, m.id, m.transaction_id,
			COALESCE(m.trace_id, ''), COALESCE(m.producer_sub, ''), m.payload, m.sealed
		FROM unnest($1::bigint[], $2::bigint[]) AS a(partition_id, seq)
		CROSS JOIN LATERAL (SELECT * FROM partitions p WHERE p.id = a.partition_id OFFSET 0) p
		JOIN queues q ON q.id = p.queue_id
		CROSS JOIN LATERAL (SELECT * FROM messages m
			WHERE m.partition_id = a.partition_id AND m.seq = a.seq OFFSET 0) m`
	// Which of these transactionIds are taken in their partition: one probe
	// of messages_partition_txn each, as a scalar subquery (see the push
	// insert's dup).
	sqlTxnsTaken = `SELECT partition_id, transaction_id FROM (
			SELECT a.partition_id, a.transaction_id, (SELECT true FROM messages m
				WHERE m.partition_id = a.partition_id AND m.transaction_id = a.transaction_id) AS taken
			FROM unnest($1::bigint[], $2::text[]) AS a(partition_id, transaction_id)) x
		WHERE taken`
)

// dlqArgs are the filter's arguments $1 to $6.
func dlqArgs(tenant string, f *store.DLQFilter) []any {
	var from, to int64 = math.MinInt64, math.MaxInt64
	if !f.From.IsZero() {
		from = f.From.UnixMilli()
	}
	if !f.To.IsZero() {
		to = f.To.UnixMilli()
	}
	return []any{tenant, f.Queue, f.ConsumerGroup, f.Partition, from, to}
}

// DLQList reads a page of dead letters.
func (s *Store) DLQList(ctx context.Context, p *store.DLQListParams) ([]store.DeadLetter, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, _ := s.pool.Query(ctx, sqlDLQList, append(dlqArgs(store.TenantOrDefault(p.Tenant), &p.DLQFilter), limit,
		p.Offset)...)
	out := []store.DeadLetter{}
	var d store.DeadLetter
	var failedAt, createdAt int64
	_, err := pgx.ForEachRow(rows, []any{&d.ConsumerGroup, &d.Error, &d.RetryCount, &failedAt, &d.MessageID,
		&d.TransactionID, &d.TraceID, &d.ProducerSub, &d.Payload, &createdAt, &d.PartitionID, &d.Partition,
		&d.Queue, &d.Sealed}, func() error {
		r := d
		r.FailedAt, r.CreatedAt = time.UnixMilli(failedAt).UTC(), time.UnixMilli(createdAt).UTC()
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, wrapErr("postgres: list dead letters", err)
	}
	return out, nil
}

// DLQDelete deletes up to p.Limit dead letters in one transaction.
func (s *Store) DLQDelete(ctx context.Context, p *store.DLQDeleteParams) (int, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	n := 0
	err := s.inTx(ctx, "delete dead letters", func(t *txn) error {
		tag, err := t.tx.Exec(t.ctx, sqlDLQDelete, append(dlqArgs(store.TenantOrDefault(p.Tenant), &p.DLQFilter),
			limit)...)
		if err != nil {
			return fmt.Errorf("delete dead letters: %w", err)
		}
		n = int(tag.RowsAffected())
		return nil
	})
	return n, err
}

// DLQRequeue requeues a selection of dead-lettered messages in one
// transaction (dlqsql): it deletes their dead letters first (so that two
// concurrent requeues of one message cannot both push it), then pushes the
// messages again in their order within each partition.
func (s *Store) DLQRequeue(ctx context.Context, p *store.DLQRequeueParams) (*store.DLQRequeueResult, error) {
	var out *store.DLQRequeueResult
	err := s.inTx(ctx, "requeue dead letters", func(t *txn) error {
		var err error
		out, err = dlqsql.RequeueIn(dlqsql.Requeue[*dlqsql.Pick]{
			Pick:    func(pk *dlqsql.Pick) *dlqsql.Pick { return pk },
			Refs:    t.takeRefs,
			Oldest:  t.takeOldest,
			FreeIDs: t.freeRetryIDs,
			Push:    t.pushAt,
			// A push took the transactionId after it was found free: retry.
			Taken: func(string) error { return errStale },
		}, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanPicks reads rows of sqlDLQMessagesByRef or sqlDLQMessagesAt.
func scanPicks(rows pgx.Rows) (map[int64]*dlqsql.Pick, []*dlqsql.Pick, error) {
	byOrd := make(map[int64]*dlqsql.Pick)
	var all []*dlqsql.Pick
	var ord int64
	var pk dlqsql.Pick
	_, err := pgx.ForEachRow(rows, []any{&ord, &pk.Key, &pk.PartitionID, &pk.Partition, &pk.Queue, &pk.Seq,
		new(string), &pk.TransactionID, &pk.TraceID, &pk.ProducerSub, &pk.Payload, &pk.Sealed}, func() error {
		c := pk
		byOrd[ord] = &c
		all = append(all, &c)
		return nil
	})
	return byOrd, all, err
}

// takeRefs resolves the named messages and takes their dead letters that
// match the filter; the others are failures.
func (t *txn) takeRefs(tenant string, refs []store.MessageRef, f *store.DLQFilter) ([]*dlqsql.Pick, []store.RequeueFailure, error) {
	puuids, txns := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		puuids[i], txns[i] = r.PartitionID, r.TransactionID
	}
	rows, _ := t.tx.Query(t.ctx, sqlDLQMessagesByRef, puuids, txns, tenant)
	byOrd, found, err := scanPicks(rows)
	if err != nil {
		return nil, nil, fmt.Errorf("read messages: %w", err)
	}
	taken, err := t.takeOf(tenant, f, found)
	if err != nil {
		return nil, nil, err
	}
	picks, failed := dlqsql.Sift(refs, func(i int) (*dlqsql.Pick, bool) {
		pk := byOrd[int64(i+1)]
		return pk, pk != nil
	}, func(pk *dlqsql.Pick) bool { return taken[[2]int64{pk.Key, pk.Seq}] > 0 })
	return picks, failed, nil
}

// takeOf deletes the dead letters of picks that match the filter and counts
// them per message.
func (t *txn) takeOf(tenant string, f *store.DLQFilter, picks []*dlqsql.Pick) (map[[2]int64]int, error) {
	taken := make(map[[2]int64]int)
	if len(picks) == 0 {
		return taken, nil
	}
	pids, seqs := make([]int64, len(picks)), make([]int64, len(picks))
	for i, pk := range picks {
		pids[i], seqs[i] = pk.Key, pk.Seq
	}
	rows, _ := t.tx.Query(t.ctx, sqlDLQTakeOf, append(dlqArgs(tenant, f), pids, seqs)...)
	var k [2]int64
	if _, err := pgx.ForEachRow(rows, []any{&k[0], &k[1]}, func() error {
		taken[k]++
		return nil
	}); err != nil {
		return nil, fmt.Errorf("take dead letters: %w", err)
	}
	return taken, nil
}

// takeOldest takes the oldest dead letters matching the filter and returns
// their messages.
func (t *txn) takeOldest(tenant string, f *store.DLQFilter, limit int) ([]*dlqsql.Pick, error) {
	rows, _ := t.tx.Query(t.ctx, sqlDLQTakeOldest, append(dlqArgs(tenant, f), limit)...)
	var pids, seqs []int64
	seen := make(map[[2]int64]bool)
	var k [2]int64
	if _, err := pgx.ForEachRow(rows, []any{&k[0], &k[1]}, func() error {
		if !seen[k] {
			seen[k] = true
			pids, seqs = append(pids, k[0]), append(seqs, k[1])
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("take dead letters: %w", err)
	}
	if len(pids) == 0 {
		return nil, nil
	}
	rows, _ = t.tx.Query(t.ctx, sqlDLQMessagesAt, pids, seqs)
	_, picks, err := scanPicks(rows)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	return picks, nil
}

// freeRetryIDs finds for every pick the first "<txn>:retry:<n>" that is free
// in its partition and not given to another pick: one query per round, and
// a second round only for the picks whose candidate was taken.
func (t *txn) freeRetryIDs(picks []*dlqsql.Pick) ([]string, error) {
	n := make([]int, len(picks))
	txns := make([]string, len(picks))
	done := make([]bool, len(picks))
	given := make(map[[2]string]bool, len(picks))
	for {
		var idx []int
		var pids []int64
		var cands []string
		for i, pk := range picks {
			if done[i] {
				continue
			}
			for {
				n[i]++
				txns[i] = store.RetryTransactionID(pk.TransactionID, n[i])
				if !given[[2]string{pk.PartitionID, txns[i]}] {
					break
				}
			}
			given[[2]string{pk.PartitionID, txns[i]}] = true
			idx, pids, cands = append(idx, i), append(pids, pk.Key), append(cands, txns[i])
		}
		if len(idx) == 0 {
			return txns, nil
		}
		rows, _ := t.tx.Query(t.ctx, sqlTxnsTaken, pids, cands)
		type key struct {
			pid int64
			txn string
		}
		taken := make(map[key]bool)
		var k key
		if _, err := pgx.ForEachRow(rows, []any{&k.pid, &k.txn}, func() error {
			taken[k] = true
			return nil
		}); err != nil {
			return nil, fmt.Errorf("read transactionIds: %w", err)
		}
		for _, i := range idx {
			done[i] = !taken[key{picks[i].Key, txns[i]}]
		}
	}
}
