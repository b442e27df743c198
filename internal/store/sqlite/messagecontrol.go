package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
	"github.com/queen-go/queen/internal/store/listing"
)

// The control plane's message reads go through the read-only connections
// (s.reader), so that they never queue behind the writer nor hold it; its
// repairs are writer jobs like every other write.

// querier is what both the read-only pool and the writer's transaction
// offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const (
	// A partition of the tenant's (a deleted queue's partitions have a
	// negative queue_id and join nothing).
	sqlCtlPartition = `SELECT p.id, p.name, p.last_offset, p.cleared_offset, q.name, q.namespace, q.task, q.priority,
			q.options
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.uuid = ? AND q.tenant = ?`
	// A message of partition ?1 above its cleared offset ?3: the messages
	// at or below it are gone, even while their rows wait to be freed.
	sqlCtlMessage = `SELECT seq, id, transaction_id, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), payload,
			created_at, sealed
		FROM messages WHERE partition_id = ?1 AND transaction_id = ?2 AND seq > ?3`
	sqlCtlLanes = `SELECT partition_id, consumer_group, cursor, COALESCE(lease_id, ''), lease_expires_at, batch_end,
			head_attempts
		FROM lanes WHERE partition_id IN (SELECT value FROM json_each(?))
		ORDER BY partition_id, consumer_group`
	// The first message after an offset, 0 when none.
	sqlCtlNextMessage = `SELECT COALESCE(min(seq), 0) FROM messages WHERE partition_id = ? AND seq > ?`
	// A message's dead letters, newest first.
	sqlCtlDeadLetters = `SELECT consumer_group, error, retry_count FROM dead_letters
		WHERE partition_id = ? AND message_seq = ? ORDER BY failed_at DESC, id DESC`
	// The consumer groups that joined the selected queues.
	sqlCtlGroups = `SELECT DISTINCT g.consumer_group FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
		WHERE q.tenant = ?1 AND (?2 = '' OR q.name = ?2) AND (?3 = '' OR q.namespace = ?3)
		  AND (?4 = '' OR q.task = ?4)`

	// The partitions a listing may read (?6: the window's start) with their
	// cleared offsets, and what the messages of some of them share.
	sqlCtlListPartitions = `SELECT p.id, p.last_message_at, p.cleared_offset FROM partitions p
		JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = ?1 AND (?2 = '' OR q.name = ?2) AND (?3 = '' OR p.name = ?3)
		  AND (?4 = '' OR q.namespace = ?4) AND (?5 = '' OR q.task = ?5) AND p.last_message_at >= ?6`
	// The same with what a status filter needs (?7: now).
	sqlCtlListPartitionsFacts = `SELECT p.id, p.last_message_at, p.cleared_offset, p.last_offset,
			COALESCE((SELECT min(l.cursor) FROM lanes l WHERE l.partition_id = p.id), -1),
			EXISTS (SELECT 1 FROM lanes l WHERE l.partition_id = p.id AND l.lease_id IS NOT NULL
				AND l.lease_expires_at > ?7),
			EXISTS (SELECT 1 FROM dead_letters d WHERE d.partition_id = p.id AND d.message_seq > p.cleared_offset)
		FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = ?1 AND (?2 = '' OR q.name = ?2) AND (?3 = '' OR p.name = ?3)
		  AND (?4 = '' OR q.namespace = ?4) AND (?5 = '' OR q.task = ?5) AND p.last_message_at >= ?6`
	sqlCtlDescribe = `SELECT p.id, p.uuid, p.name, q.name, q.namespace, q.task, q.priority
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id IN (SELECT value FROM json_each(?))`
	// A partition's newest messages with an offset in (?5, ?2) created
	// before the window's end (?3): one backward range of its primary key.
	sqlCtlListNewest = `SELECT seq, id, transaction_id, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), created_at,
			EXISTS (SELECT 1 FROM dead_letters d WHERE d.partition_id = ?1 AND d.message_seq = m.seq)
		FROM messages m INDEXED BY messages_partition
		WHERE m.partition_id = ?1 AND m.seq < ?2 AND m.seq > ?5 AND m.created_at < ?3
		ORDER BY m.seq DESC
		LIMIT ?4`
	// The same for dead-lettered messages only, read through the partition's
	// dead letters.
	sqlCtlListNewestDead = `SELECT m.seq, m.id, m.transaction_id, COALESCE(m.trace_id, ''),
			COALESCE(m.producer_sub, ''), m.created_at, 1
		FROM dead_letters d JOIN messages m ON m.seq = d.message_seq
		WHERE d.partition_id = ?1 AND d.message_seq < ?2 AND d.message_seq > ?5 AND m.partition_id = ?1
		  AND m.created_at < ?3
		GROUP BY d.message_seq
		ORDER BY d.message_seq DESC
		LIMIT ?4`
)

// ctlPartition is a partition resolved for the control plane.
type ctlPartition struct {
	id         int64
	uuid       string
	name       string
	lastOffset int64
	cleared    int64 // every message at or below it is gone
	queue      string
	namespace  string
	task       string
	priority   int
	options    string
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

func (s *Store) readable() error {
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
		return nil
	}
}

// resolvePartition returns the tenant's partition with that id, nil if none.
func resolvePartition(ctx context.Context, q querier, tenant, id string) (*ctlPartition, error) {
	p := &ctlPartition{uuid: id}
	err := q.QueryRowContext(ctx, sqlCtlPartition, id, tenant).Scan(&p.id, &p.name, &p.lastOffset, &p.cleared, &p.queue,
		&p.namespace, &p.task, &p.priority, &p.options)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read partition: %w", err)
	}
	return p, nil
}

// resolveMessage returns the message ref names in the tenant's partition,
// or store.ErrNotFound.
func resolveMessage(ctx context.Context, q querier, tenant string, ref store.MessageRef) (*ctlPartition, *ctlMessage, error) {
	p, err := resolvePartition(ctx, q, tenant, ref.PartitionID)
	if err != nil {
		return nil, nil, err
	}
	if p == nil {
		return nil, nil, store.ErrNotFound
	}
	m := &ctlMessage{}
	err = q.QueryRowContext(ctx, sqlCtlMessage, p.id, ref.TransactionID, p.cleared).Scan(&m.seq, &m.id, &m.transactionID,
		&m.traceID, &m.producerSub, &m.payload, &m.createdAt, &m.sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, store.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read message: %w", err)
	}
	return p, m, nil
}

// readLanes returns the lanes of the given partitions.
func readLanes(ctx context.Context, q querier, pids []int64) (map[int64][]lane.Group, error) {
	rows, err := q.QueryContext(ctx, sqlCtlLanes, intsJSON(pids))
	if err != nil {
		return nil, fmt.Errorf("read lanes: %w", err)
	}
	defer rows.Close()
	out := make(map[int64][]lane.Group, len(pids))
	for rows.Next() {
		var pid int64
		var g lane.Group
		if err := rows.Scan(&pid, &g.Name, &g.State.Cursor, &g.State.LeaseID, &g.State.LeaseExpiresAt,
			&g.State.BatchEnd, &g.State.HeadAttempts); err != nil {
			return nil, fmt.Errorf("read lanes: %w", err)
		}
		out[pid] = append(out[pid], g)
	}
	return out, rows.Err()
}

// MessageList lists messages newest first through the read-only
// connections (see package listing).
func (s *Store) MessageList(ctx context.Context, p *store.MessageListParams) (*store.MessageListResult, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	tenant := store.TenantOrDefault(p.Tenant)
	res := &store.MessageListResult{}
	groups, err := readStrings(ctx, s.reader, sqlCtlGroups, tenant, p.Queue, p.Namespace, p.Task)
	if err != nil {
		return nil, fmt.Errorf("read consumer groups: %w", err)
	}
	res.Mode = listing.Mode(groups)
	src := &listSource{ctx: ctx, db: s.reader, p: p, tenant: tenant}
	defer src.close()
	if res.Messages, err = listing.Collect(p, src); err != nil {
		return nil, err
	}
	return res, nil
}

// listSource reads a listing's partitions and messages.
type listSource struct {
	ctx    context.Context
	db     *sql.DB
	p      *store.MessageListParams
	tenant string
	// sqlCtlListNewest and sqlCtlListNewestDead, prepared once per listing
	newest, newestDead *sql.Stmt
}

func (l *listSource) close() {
	for _, s := range []*sql.Stmt{l.newest, l.newestDead} {
		if s != nil {
			s.Close()
		}
	}
}

func (l *listSource) Partitions(status store.MessageStatus) ([]listing.Partition, error) {
	args := []any{l.tenant, l.p.Queue, l.p.Partition, l.p.Namespace, l.p.Task, l.p.From.UnixMilli()}
	query := sqlCtlListPartitions
	if status != "" {
		query, args = sqlCtlListPartitionsFacts, append(args, l.p.Now.UnixMilli())
	}
	rows, err := l.db.QueryContext(l.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	defer rows.Close()
	var out []listing.Partition
	for rows.Next() {
		var pt listing.Partition
		dest := []any{&pt.Key, &pt.Newest, &pt.Cleared}
		if status != "" {
			dest = append(dest, &pt.LastOffset, &pt.MinCursor, &pt.Leased, &pt.DeadLetters)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("list partitions: %w", err)
		}
		out = append(out, pt)
	}
	return out, rows.Err()
}

func (l *listSource) Describe(keys []int64) (map[int64]store.ListedMessage, error) {
	rows, err := l.db.QueryContext(l.ctx, sqlCtlDescribe, intsJSON(keys))
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]store.ListedMessage, len(keys))
	for rows.Next() {
		var id int64
		var m store.ListedMessage
		if err := rows.Scan(&id, &m.PartitionID, &m.Partition, &m.Queue, &m.Namespace, &m.Task,
			&m.QueuePriority); err != nil {
			return nil, fmt.Errorf("list partitions: %w", err)
		}
		out[id] = m
	}
	return out, rows.Err()
}

func (l *listSource) Newest(keys, floor, below []int64, n int, dead bool) ([][]listing.Row, error) {
	stmt := &l.newest
	query := sqlCtlListNewest
	if dead {
		stmt, query = &l.newestDead, sqlCtlListNewestDead
	}
	if *stmt == nil {
		prepared, err := l.db.PrepareContext(l.ctx, query)
		if err != nil {
			return nil, fmt.Errorf("list messages: %w", err)
		}
		*stmt = prepared
	}
	out := make([][]listing.Row, len(keys))
	for i, k := range keys {
		b := below[i]
		if b == 0 {
			b = math.MaxInt64
		}
		rows, err := (*stmt).QueryContext(l.ctx, k, b, l.p.To.UnixMilli(), n, floor[i])
		if err != nil {
			return nil, fmt.Errorf("list messages: %w", err)
		}
		for rows.Next() {
			var r listing.Row
			if err := rows.Scan(&r.Offset, &r.ID, &r.TransactionID, &r.TraceID, &r.ProducerSub, &r.CreatedAt,
				&r.DeadLettered); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list messages: %w", err)
			}
			out[i] = append(out[i], r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list messages: %w", err)
		}
	}
	return out, nil
}

func (l *listSource) Lanes(keys []int64) (map[int64][]lane.Group, error) {
	return readLanes(l.ctx, l.db, keys)
}

// readStrings runs a query of one text column.
func readStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// MessageGet reads one message, its lanes and its dead letters through the
// read-only connections, in one read transaction.
func (s *Store) MessageGet(ctx context.Context, p *store.MessageGetParams) (*store.MessageDetail, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read message: %w", err)
	}
	defer tx.Rollback()
	part, msg, err := resolveMessage(ctx, tx, store.TenantOrDefault(p.Tenant), p.MessageRef)
	if err != nil {
		return nil, err
	}
	lanes, err := readLanes(ctx, tx, []int64{part.id})
	if err != nil {
		return nil, err
	}
	d := &store.MessageDetail{Payload: msg.payload, Sealed: msg.sealed}
	if d.Options, err = store.DecodeQueueOptions([]byte(part.options)); err != nil {
		return nil, fmt.Errorf("queue %q: %w", part.queue, err)
	}
	rows, err := tx.QueryContext(ctx, sqlCtlDeadLetters, part.id, msg.seq)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	dead := false
	for rows.Next() {
		var group, text string
		var retries int
		if err := rows.Scan(&group, &text, &retries); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read dead letters: %w", err)
		}
		if !dead {
			dead, d.ErrorMessage, d.RetryCount = true, text, retries
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	if !dead {
		if d.RetryCount, err = headAttempts(ctx, tx, part.id, msg.seq, lanes[part.id]); err != nil {
			return nil, err
		}
	}
	fillDetail(d, part, msg, lanes[part.id], dead, p.Now.UnixMilli())
	return d, nil
}

// headAttempts returns the most failed attempts any lane counts for the
// message at seq: a lane counts them for its head, the first message after
// its cursor.
func headAttempts(ctx context.Context, q querier, pid, seq int64, groups []lane.Group) (int, error) {
	most := 0
	for _, g := range groups {
		if g.State.Cursor >= seq || g.State.HeadAttempts <= most {
			continue
		}
		var next int64
		if err := q.QueryRowContext(ctx, sqlCtlNextMessage, pid, g.State.Cursor).Scan(&next); err != nil {
			return 0, fmt.Errorf("read lane head: %w", err)
		}
		if next == seq {
			most = g.State.HeadAttempts
		}
	}
	return most, nil
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

// Writer-side statements of the repairs.
const (
	sqlCtlDeleteMessage     = `DELETE FROM messages WHERE seq = ?`
	sqlCtlDeleteDeadLetters = `DELETE FROM dead_letters WHERE partition_id = ? AND message_seq = ?`
	// The counters of migration 006 leave the deleted message ?2 of
	// partition ?1 out at once: the partition held it, and the lanes whose
	// cursor had passed it had counted it as consumed. (A lane moved over
	// it later counts the messages it passes, and it is not one.)
	sqlCtlUncountPartition = `UPDATE partitions SET message_count = max(0, message_count - 1) WHERE id = ?1`
	sqlCtlUncountLanes     = `UPDATE lanes SET consumed = max(0, consumed - 1) WHERE partition_id = ?1 AND cursor >= ?2`
	sqlCtlDeadLetterHas    = `SELECT EXISTS (SELECT 1 FROM dead_letters
		WHERE partition_id = ? AND message_seq = ? AND consumer_group = ?)`
)

// MessageDelete deletes a message, its dead letters and its traces in one
// writer job, and moves every lane whose next message it was over it. Its
// offset is never handed out again, even when it was the newest: offsets
// come from the writer's counter (seq.go), which the partition's
// last_offset carries across restarts.
func (s *Store) MessageDelete(ctx context.Context, p *store.MessageDeleteParams) (bool, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	existed := false
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		existed = false
		t := s.txn(tx)
		part, msg, err := resolveMessage(t.ctx, tx, tenant, p.MessageRef)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		existed = true
		if _, err := tx.ExecContext(t.ctx, sqlCtlDeleteMessage, msg.seq); err != nil {
			return fmt.Errorf("delete message: %w", err)
		}
		if _, err := tx.ExecContext(t.ctx, sqlCtlDeleteDeadLetters, part.id, msg.seq); err != nil {
			return fmt.Errorf("delete dead letters: %w", err)
		}
		if _, err := tx.ExecContext(t.ctx, sqlCtlUncountPartition, part.id); err != nil {
			return fmt.Errorf("count messages: %w", err)
		}
		if _, err := tx.ExecContext(t.ctx, sqlCtlUncountLanes, part.id, msg.seq); err != nil {
			return fmt.Errorf("count messages: %w", err)
		}
		t.forgetUnconsumed(part.id) // maxSize counts it no more
		if _, err := deleteTraces(t.ctx, tx, part.id, []string{msg.transactionID}, math.MaxInt32); err != nil {
			return err
		}
		return t.skipDeleted(part, msg.seq)
	})
	return existed, err
}

// skipDeleted moves the lanes of part whose next message was the deleted
// one at seq over it (lane.State.SkipMissing).
func (t *txn) skipDeleted(part *ctlPartition, seq int64) error {
	lanes, err := readLanes(t.ctx, t.tx, []int64{part.id})
	if err != nil {
		return err
	}
	var queueID int64
	if err := t.tx.QueryRowContext(t.ctx, `SELECT queue_id FROM partitions WHERE id = ?`, part.id).Scan(&queueID); err != nil {
		return fmt.Errorf("read partition: %w", err)
	}
	for _, g := range lanes[part.id] {
		st := g.State
		if st.Cursor >= seq {
			continue
		}
		var next int64
		if err := t.tx.QueryRowContext(t.ctx, sqlCtlNextMessage, part.id, st.Cursor).Scan(&next); err != nil {
			return fmt.Errorf("read lane head: %w", err)
		}
		if next != 0 && next < seq {
			continue // its next message is still there
		}
		if st.SkipMissing(next, part.lastOffset) {
			if err := t.saveLane(part.id, g.Name, queueID, &st, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// MessageDeadLetter writes a dead letter by hand in one writer job.
func (s *Store) MessageDeadLetter(ctx context.Context, p *store.MessageDeadLetterParams) error {
	tenant := store.TenantOrDefault(p.Tenant)
	group := p.ConsumerGroup
	if group == "" {
		group = store.QueueMode
	}
	return s.run(ctx, durable, func(tx *sql.Tx) error {
		t := s.txn(tx)
		part, msg, err := resolveMessage(t.ctx, tx, tenant, p.MessageRef)
		if err != nil {
			return err
		}
		var has bool
		if err := tx.QueryRowContext(t.ctx, sqlCtlDeadLetterHas, part.id, msg.seq, group).Scan(&has); err != nil {
			return fmt.Errorf("read dead letters: %w", err)
		}
		if has {
			return store.ErrAlreadyDeadLettered
		}
		lanes, err := readLanes(t.ctx, tx, []int64{part.id})
		if err != nil {
			return err
		}
		var attempts int
		for _, g := range lanes[part.id] {
			if g.Name == group {
				if attempts, err = headAttempts(t.ctx, tx, part.id, msg.seq, []lane.Group{g}); err != nil {
					return err
				}
			}
		}
		text := p.Error
		if text == "" {
			text = store.ManualDLQError
		}
		return t.deadLetter(part.id, group, &lane.DeadLetter{Offset: msg.seq, Error: text, Attempts: attempts},
			p.Now.UnixMilli())
	})
}
