package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
	"github.com/queen-go/queen/internal/store/listing"
)

// The control plane's reads are single statements (or one pipelined batch)
// on the pool, outside any transaction; its repairs are transactions that
// take their locks in the driver's order: partitions by id, then lanes.

const (
	// A message with its partition and queue, of the tenant's queues, above
	// its partition's cleared offset: the messages at or below it are gone,
	// even while their rows wait to be freed.
	sqlCtlMessage = `SELECT p.id, p.uuid, p.name, p.last_offset, q.name, q.namespace, q.task, q.priority, q.options,
			m.seq, m.id, m.transaction_id, COALESCE(m.trace_id, ''), COALESCE(m.producer_sub, ''), m.payload,
			m.created_at, m.sealed
		FROM partitions p JOIN queues q ON q.id = p.queue_id
		JOIN messages m ON m.partition_id = p.id AND m.transaction_id = $3 AND m.seq > p.cleared_offset
		WHERE p.uuid = $1 AND q.tenant = $2`
	// The same, locking the partition: no push commits to it meanwhile, so
	// its last offset is exact, and lanes are locked after it.
	sqlCtlMessageLock = sqlCtlMessage + ` FOR UPDATE OF p`
	// The lanes of some partitions, each with its head: the first message
	// after its cursor (0 when none).
	sqlCtlLanes = `SELECT l.partition_id, l.consumer_group, l.cursor, COALESCE(l.lease_id, ''), l.lease_expires_at,
			l.batch_end, l.head_attempts,
			COALESCE((SELECT m.seq FROM messages m WHERE m.partition_id = l.partition_id AND m.seq > l.cursor
				ORDER BY m.seq LIMIT 1), 0)
		FROM lanes l WHERE l.partition_id = ANY($1::bigint[])
		ORDER BY l.partition_id, l.consumer_group`
	sqlCtlLanesLock = sqlCtlLanes + ` FOR UPDATE OF l`
	// A message's dead letters, newest first.
	sqlCtlDeadLetters = `SELECT consumer_group, error, retry_count FROM dead_letters
		WHERE partition_id = $1 AND message_seq = $2 ORDER BY failed_at DESC, id DESC`
	// The consumer groups that joined the selected queues.
	sqlCtlGroups = `SELECT DISTINCT g.consumer_group FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
		WHERE q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR q.namespace = $3) AND ($4 = '' OR q.task = $4)`

	// The partitions a listing may read ($6: the window's start) with their
	// cleared offsets, and what the messages of some of them share.
	sqlCtlListPartitions = `SELECT p.id, p.last_message_at, p.cleared_offset FROM partitions p
		JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR p.name = $3)
		  AND ($4 = '' OR q.namespace = $4) AND ($5 = '' OR q.task = $5) AND p.last_message_at >= $6`
	// The same with what a status filter needs ($7: now).
	sqlCtlListPartitionsFacts = `SELECT p.id, p.last_message_at, p.cleared_offset, p.last_offset,
			COALESCE((SELECT min(l.cursor) FROM lanes l WHERE l.partition_id = p.id), -1),
			EXISTS (SELECT 1 FROM lanes l WHERE l.partition_id = p.id AND l.lease_id IS NOT NULL
				AND l.lease_expires_at > $7),
			EXISTS (SELECT 1 FROM dead_letters d WHERE d.partition_id = p.id AND d.message_seq > p.cleared_offset)
		FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR p.name = $3)
		  AND ($4 = '' OR q.namespace = $4) AND ($5 = '' OR q.task = $5) AND p.last_message_at >= $6`
	sqlCtlDescribe = `SELECT p.id, p.uuid, p.name, q.name, q.namespace, q.task, q.priority
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = ANY($1::bigint[])`
	// Some partitions' newest messages with an offset in ($5[i], $2[i])
	// created before the window's end ($3): one backward range of the
	// primary key each.
	sqlCtlListNewest = `SELECT k.ord, m.seq, m.id, m.transaction_id, COALESCE(m.trace_id, ''),
			COALESCE(m.producer_sub, ''), m.created_at,
			EXISTS (SELECT 1 FROM dead_letters d WHERE d.partition_id = m.partition_id AND d.message_seq = m.seq)
		FROM unnest($1::bigint[], $2::bigint[], $5::bigint[]) WITH ORDINALITY AS k(partition_id, below, floor, ord)
		CROSS JOIN LATERAL (SELECT * FROM messages WHERE partition_id = k.partition_id AND seq < k.below
			AND seq > k.floor AND created_at < $3 ORDER BY seq DESC LIMIT $4) m
		ORDER BY k.ord, m.seq DESC`
	// The same for dead-lettered messages only, read through the
	// partitions' dead letters.
	sqlCtlListNewestDead = `SELECT k.ord, m.seq, m.id, m.transaction_id, COALESCE(m.trace_id, ''),
			COALESCE(m.producer_sub, ''), m.created_at, true
		FROM unnest($1::bigint[], $2::bigint[], $5::bigint[]) WITH ORDINALITY AS k(partition_id, below, floor, ord)
		CROSS JOIN LATERAL (SELECT DISTINCT ON (d.message_seq) m.* FROM dead_letters d
			JOIN messages m ON m.partition_id = d.partition_id AND m.seq = d.message_seq
			WHERE d.partition_id = k.partition_id AND d.message_seq < k.below AND d.message_seq > k.floor
			  AND m.created_at < $3
			ORDER BY d.message_seq DESC LIMIT $4) m
		ORDER BY k.ord, m.seq DESC`

	sqlCtlDeleteMessage     = `DELETE FROM messages WHERE partition_id = $1 AND seq = $2`
	sqlCtlDeleteDeadLetters = `DELETE FROM dead_letters WHERE partition_id = $1 AND message_seq = $2`
	// The deleted message leaves a gap in its partition's offsets, which
	// the figures take off (migration 011).
	sqlCtlGapRecord = `WITH g AS (INSERT INTO message_gaps (partition_id, seq) VALUES ($1, $2)
			ON CONFLICT DO NOTHING RETURNING 1)
		UPDATE partitions SET gaps = gaps + (SELECT count(*) FROM g) WHERE id = $1`
	sqlCtlLaneSave = `UPDATE lanes SET cursor = $3, lease_id = NULLIF($4, ''), lease_expires_at = $5,
			batch_end = $6, head_attempts = $7, ready = $8::bigint > $3::bigint
		WHERE partition_id = $1 AND consumer_group = $2`
	sqlCtlDeadLetterHas = `SELECT EXISTS (SELECT 1 FROM dead_letters
		WHERE partition_id = $1 AND message_seq = $2 AND consumer_group = $3)`
	sqlCtlDeadLetterInsert = `INSERT INTO dead_letters
		(partition_id, message_seq, consumer_group, error, retry_count, failed_at) VALUES ($1, $2, $3, $4, $5, $6)`
)

// ctlPartition is a partition resolved for the control plane.
type ctlPartition struct {
	id         int64
	uuid       string
	name       string
	lastOffset int64
	queue      string
	namespace  string
	task       string
	priority   int
	options    []byte
}

// ctlMessage is a message row.
type ctlMessage struct {
	seq           int64
	id            string
	transactionID string
	traceID       string
	producerSub   string
	payload       []byte
	createdAt     int64
	sealed        store.Seal
}

// ctlLane is a lane and its head (the first message after its cursor).
type ctlLane struct {
	lane.Group
	head int64
}

// readable reports whether reads may go to the database now.
func (s *Store) readable(ctx context.Context) error {
	if s.closed() {
		return store.ErrClosed
	}
	return s.ready(ctx)
}

// scanMessage reads a row of sqlCtlMessage.
func scanMessage(row pgx.Row) (*ctlPartition, *ctlMessage, error) {
	p, m := &ctlPartition{}, &ctlMessage{}
	err := row.Scan(&p.id, &p.uuid, &p.name, &p.lastOffset, &p.queue, &p.namespace, &p.task, &p.priority,
		&p.options, &m.seq, &m.id, &m.transactionID, &m.traceID, &m.producerSub, &m.payload, &m.createdAt, &m.sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, store.ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return p, m, nil
}

// scanLanes reads the rows of sqlCtlLanes.
func scanLanes(rows pgx.Rows) (map[int64][]ctlLane, error) {
	out := make(map[int64][]ctlLane)
	var pid int64
	var l ctlLane
	_, err := pgx.ForEachRow(rows, []any{&pid, &l.Name, &l.State.Cursor, &l.State.LeaseID, &l.State.LeaseExpiresAt,
		&l.State.BatchEnd, &l.State.HeadAttempts, &l.head}, func() error {
		out[pid] = append(out[pid], l)
		return nil
	})
	return out, err
}

func groupsOf(lanes []ctlLane) []lane.Group {
	out := make([]lane.Group, len(lanes))
	for i := range lanes {
		out[i] = lanes[i].Group
	}
	return out
}

// MessageList lists messages newest first (see package listing).
func (s *Store) MessageList(ctx context.Context, p *store.MessageListParams) (*store.MessageListResult, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	res := &store.MessageListResult{}
	rows, _ := s.pool.Query(ctx, sqlCtlGroups, tenant, p.Queue, p.Namespace, p.Task)
	groups, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapErr("postgres: list messages", err)
	}
	res.Mode = listing.Mode(groups)
	if res.Messages, err = listing.Collect(p, &listSource{ctx: ctx, s: s, p: p, tenant: tenant}); err != nil {
		return nil, err
	}
	return res, nil
}

// listSource reads a listing's partitions and messages.
type listSource struct {
	ctx    context.Context
	s      *Store
	p      *store.MessageListParams
	tenant string
}

func (l *listSource) Partitions(status store.MessageStatus) ([]listing.Partition, error) {
	args := []any{l.tenant, l.p.Queue, l.p.Partition, l.p.Namespace, l.p.Task, l.p.From.UnixMilli()}
	query := sqlCtlListPartitions
	var out []listing.Partition
	var pt listing.Partition
	dest := []any{&pt.Key, &pt.Newest, &pt.Cleared}
	if status != "" {
		query, args = sqlCtlListPartitionsFacts, append(args, l.p.Now.UnixMilli())
		dest = append(dest, &pt.LastOffset, &pt.MinCursor, &pt.Leased, &pt.DeadLetters)
	}
	rows, _ := l.s.pool.Query(l.ctx, query, args...)
	if _, err := pgx.ForEachRow(rows, dest, func() error {
		out = append(out, pt)
		return nil
	}); err != nil {
		return nil, wrapErr("postgres: list partitions", err)
	}
	return out, nil
}

func (l *listSource) Describe(keys []int64) (map[int64]store.ListedMessage, error) {
	rows, _ := l.s.pool.Query(l.ctx, sqlCtlDescribe, keys)
	out := make(map[int64]store.ListedMessage, len(keys))
	var id int64
	var m store.ListedMessage
	if _, err := pgx.ForEachRow(rows, []any{&id, &m.PartitionID, &m.Partition, &m.Queue, &m.Namespace, &m.Task,
		&m.QueuePriority}, func() error {
		out[id] = m
		return nil
	}); err != nil {
		return nil, wrapErr("postgres: list partitions", err)
	}
	return out, nil
}

func (l *listSource) Newest(keys, floor, below []int64, n int, dead bool) ([][]listing.Row, error) {
	b := make([]int64, len(below))
	for i, v := range below {
		if b[i] = v; v == 0 {
			b[i] = math.MaxInt64
		}
	}
	query := sqlCtlListNewest
	if dead {
		query = sqlCtlListNewestDead
	}
	rows, _ := l.s.pool.Query(l.ctx, query, keys, b, l.p.To.UnixMilli(), n, floor)
	out := make([][]listing.Row, len(keys))
	var ord int64
	var r listing.Row
	_, err := pgx.ForEachRow(rows, []any{&ord, &r.Offset, &r.ID, &r.TransactionID, &r.TraceID, &r.ProducerSub,
		&r.CreatedAt, &r.DeadLettered}, func() error {
		out[ord-1] = append(out[ord-1], r)
		return nil
	})
	if err != nil {
		return nil, wrapErr("postgres: list messages", err)
	}
	return out, nil
}

func (l *listSource) Lanes(keys []int64) (map[int64][]lane.Group, error) {
	rows, _ := l.s.pool.Query(l.ctx, sqlCtlLanes, keys)
	lanes, err := scanLanes(rows)
	if err != nil {
		return nil, wrapErr("postgres: list messages", err)
	}
	out := make(map[int64][]lane.Group, len(lanes))
	for pid, ls := range lanes {
		out[pid] = groupsOf(ls)
	}
	return out, nil
}

// MessageGet reads one message, then its lanes and dead letters in one
// pipelined batch.
func (s *Store) MessageGet(ctx context.Context, p *store.MessageGetParams) (*store.MessageDetail, error) {
	if err := s.readable(ctx); err != nil {
		return nil, err
	}
	part, msg, err := scanMessage(s.pool.QueryRow(ctx, sqlCtlMessage, p.PartitionID,
		store.TenantOrDefault(p.Tenant), p.TransactionID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, wrapErr("postgres: read message", err)
	}
	b := &pgx.Batch{}
	b.Queue(sqlCtlLanes, []int64{part.id})
	b.Queue(sqlCtlDeadLetters, part.id, msg.seq)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	lanes, err := scanLanes(must(br.Query()))
	if err != nil {
		return nil, wrapErr("postgres: read message", err)
	}
	d := &store.MessageDetail{Payload: msg.payload, Sealed: msg.sealed}
	dead := false
	var group, text string
	var retries int
	if _, err := pgx.ForEachRow(must(br.Query()), []any{&group, &text, &retries}, func() error {
		if !dead {
			dead, d.ErrorMessage, d.RetryCount = true, text, retries
		}
		return nil
	}); err != nil {
		return nil, wrapErr("postgres: read message", err)
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr("postgres: read message", err)
	}
	if d.Options, err = store.DecodeQueueOptions(part.options); err != nil {
		return nil, fmt.Errorf("queue %q: %w", part.queue, err)
	}
	if !dead {
		for _, l := range lanes[part.id] {
			if l.head == msg.seq && l.State.HeadAttempts > d.RetryCount {
				d.RetryCount = l.State.HeadAttempts
			}
		}
	}
	fillDetail(d, part, msg, groupsOf(lanes[part.id]), dead, p.Now.UnixMilli())
	return d, nil
}

// fillDetail sets the message's identity from its rows, and its standing
// as every engine derives it (listing.Standing).
func fillDetail(d *store.MessageDetail, part *ctlPartition, msg *ctlMessage, groups []lane.Group, dead bool, nowMs int64) {
	d.ListedMessage = store.ListedMessage{
		CreatedAt: time.UnixMilli(msg.createdAt).UTC(), ID: msg.id, Namespace: part.namespace, Partition: part.name,
		PartitionID: part.uuid, ProducerSub: msg.producerSub, Queue: part.queue, QueuePriority: part.priority,
		Task: part.task, TraceID: msg.traceID, TransactionID: msg.transactionID,
	}
	listing.Standing(d, msg.seq, groups, dead, nowMs)
}

// MessageDelete deletes a message, its dead letters and its traces, and
// moves every lane whose next message it was over it, in one transaction
// that holds the partition's row lock.
func (s *Store) MessageDelete(ctx context.Context, p *store.MessageDeleteParams) (bool, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	existed := false
	err := s.inTx(ctx, "delete message", func(t *txn) error {
		existed = false
		part, msg, err := scanMessage(t.tx.QueryRow(t.ctx, sqlCtlMessageLock, p.PartitionID, tenant, p.TransactionID))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read message: %w", err)
		}
		existed = true
		b := &pgx.Batch{}
		b.Queue(sqlCtlDeleteMessage, part.id, msg.seq)
		b.Queue(sqlCtlDeleteDeadLetters, part.id, msg.seq)
		b.Queue(sqlCtlGapRecord, part.id, msg.seq)
		if err := t.execBatch(b); err != nil {
			return fmt.Errorf("delete message: %w", err)
		}
		if _, err := t.deleteTraces(part.id, []string{msg.transactionID}, math.MaxInt32); err != nil {
			return err
		}
		return t.skipDeleted(part, msg.seq)
	})
	return existed, err
}

// skipDeleted moves the lanes of part whose next message was the deleted
// one at seq over it (lane.State.SkipMissing). The partition's row lock is
// held, so its last offset is exact.
func (t *txn) skipDeleted(part *ctlPartition, seq int64) error {
	rows, _ := t.tx.Query(t.ctx, sqlCtlLanesLock, []int64{part.id})
	lanes, err := scanLanes(rows)
	if err != nil {
		return fmt.Errorf("lock lanes: %w", err)
	}
	b := &pgx.Batch{}
	for _, l := range lanes[part.id] {
		st := l.State
		if st.Cursor >= seq || (l.head != 0 && l.head < seq) {
			continue // past it, or its next message is still there
		}
		if st.SkipMissing(l.head, part.lastOffset) {
			b.Queue(sqlCtlLaneSave, part.id, l.Name, st.Cursor, st.LeaseID, st.LeaseExpiresAt, st.BatchEnd,
				st.HeadAttempts, part.lastOffset)
		}
	}
	if err := t.execBatch(b); err != nil {
		return fmt.Errorf("save lanes: %w", err)
	}
	return nil
}

// MessageDeadLetter writes a dead letter by hand.
func (s *Store) MessageDeadLetter(ctx context.Context, p *store.MessageDeadLetterParams) error {
	tenant := store.TenantOrDefault(p.Tenant)
	group := p.ConsumerGroup
	if group == "" {
		group = store.QueueMode
	}
	text := p.Error
	if text == "" {
		text = store.ManualDLQError
	}
	return s.inTx(ctx, "dead-letter message", func(t *txn) error {
		part, msg, err := scanMessage(t.tx.QueryRow(t.ctx, sqlCtlMessage, p.PartitionID, tenant, p.TransactionID))
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return err
			}
			return fmt.Errorf("read message: %w", err)
		}
		b := &pgx.Batch{}
		b.Queue(sqlCtlDeadLetterHas, part.id, msg.seq, group)
		b.Queue(sqlCtlLanes, []int64{part.id})
		br := t.tx.SendBatch(t.ctx, b)
		var has bool
		if err := br.QueryRow().Scan(&has); err != nil {
			br.Close()
			return fmt.Errorf("read dead letters: %w", err)
		}
		lanes, err := scanLanes(must(br.Query()))
		if err != nil {
			br.Close()
			return fmt.Errorf("read lanes: %w", err)
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("read dead letters: %w", err)
		}
		if has {
			return store.ErrAlreadyDeadLettered
		}
		attempts := 0
		for _, l := range lanes[part.id] {
			if l.Name == group && l.head == msg.seq {
				attempts = l.State.HeadAttempts
			}
		}
		if _, err := t.tx.Exec(t.ctx, sqlCtlDeadLetterInsert, part.id, msg.seq, group, text, attempts,
			p.Now.UnixMilli()); err != nil {
			return fmt.Errorf("write dead letter: %w", err)
		}
		return nil
	})
}
