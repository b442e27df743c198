package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// The driver's SQL, one constant per query, named after what it does.
const (
	sqlQueueByName = `SELECT id, uuid, namespace, task, options FROM queues WHERE name = ?`
	sqlQueueInsert = `INSERT INTO queues (uuid, name, namespace, task, priority, options, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlQueueUpdate    = `UPDATE queues SET namespace = ?, task = ?, priority = ?, options = ? WHERE id = ?`
	sqlQueuesMatching = `SELECT name FROM queues
		WHERE (?1 = '' OR namespace = ?1) AND (?2 = '' OR task = ?2)
		ORDER BY priority DESC, name`

	sqlPartitionByName = `SELECT id, uuid FROM partitions WHERE queue_id = ? AND name = ?`
	sqlPartitionByUUID = `SELECT p.id, p.name, q.name FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE p.uuid = ?`
	sqlPartitionInsert  = `INSERT INTO partitions (uuid, queue_id, name, created_at) VALUES (?, ?, ?, ?)`
	sqlPartitionAdvance = `UPDATE partitions SET last_offset = ?, last_message_at = ? WHERE id = ?`

	sqlMessageInsert = `INSERT INTO messages
		(partition_id, id, transaction_id, trace_id, producer_sub, payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (partition_id, transaction_id) DO NOTHING`
	sqlMessageByTxn = `SELECT seq, id FROM messages WHERE partition_id = ? AND transaction_id = ?`
	// Messages after the cursor. The caller stops at the first one still
	// inside the queue's delayedProcessing window: createdAt grows with the
	// offset within a partition, so filtering here would only make SQLite
	// scan every pending row of a lane that is not due yet.
	sqlMessagesAfter = `SELECT seq, id, transaction_id, trace_id, producer_sub, payload, created_at
		FROM messages WHERE partition_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`
	sqlMessageHead = `SELECT seq FROM messages WHERE partition_id = ? AND seq > ? ORDER BY seq LIMIT 1`
	// A group's starting cursor on a lane: the last message at or before its
	// subscription time.
	sqlMessageSeedCursor = `SELECT COALESCE(max(seq), 0) FROM messages WHERE partition_id = ? AND created_at <= ?`

	sqlLaneGet = `SELECT cursor, lease_id, lease_expires_at, batch_end, head_attempts
		FROM lanes WHERE partition_id = ? AND consumer_group = ?`
	sqlLaneUpsert = `INSERT INTO lanes
		(partition_id, consumer_group, cursor, lease_id, lease_expires_at, batch_end, head_attempts, last_claimed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (partition_id, consumer_group) DO UPDATE SET
			cursor = excluded.cursor, lease_id = excluded.lease_id,
			lease_expires_at = excluded.lease_expires_at, batch_end = excluded.batch_end,
			head_attempts = excluded.head_attempts,
			last_claimed_at = max(lanes.last_claimed_at, excluded.last_claimed_at)`
	// Lanes of a queue (or the one lane ?6) that have unread messages and no
	// live lease and are outside the window buffer (?4), least
	// recently claimed first so that concurrent consumers spread over the
	// queue. A lane the group never read has no row and counts as unread.
	sqlLaneCandidates = `SELECT p.id, p.uuid, p.name,
			l.partition_id IS NOT NULL, COALESCE(l.cursor, 0), COALESCE(l.lease_id, ''),
			COALESCE(l.lease_expires_at, 0), COALESCE(l.batch_end, 0), COALESCE(l.head_attempts, 0)
		FROM partitions p
		LEFT JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = ?1
		WHERE p.queue_id = ?2 AND (?6 = 0 OR p.id = ?6)
		  AND p.last_offset > COALESCE(l.cursor, 0)
		  AND (l.lease_id IS NULL OR l.lease_expires_at <= ?3)
		  AND p.last_message_at <= ?4
		ORDER BY COALESCE(l.last_claimed_at, 0)
		LIMIT ?5`
	sqlLaneExtend = `UPDATE lanes SET lease_expires_at = max(lease_expires_at, ?)
		WHERE lease_id = ? AND lease_expires_at > ? RETURNING lease_expires_at`
	sqlLeaseLive = `SELECT count(*) FROM lanes WHERE lease_id = ? AND lease_expires_at > ?`

	sqlGroupGet    = `SELECT subscribed_from FROM consumer_groups WHERE queue_id = ? AND consumer_group = ?`
	sqlGroupInsert = `INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at)
		VALUES (?, ?, ?, ?)`

	sqlDeadLetterInsert = `INSERT INTO dead_letters
		(partition_id, message_seq, consumer_group, error, retry_count, failed_at) VALUES (?, ?, ?, ?, ?, ?)`
)

// sqlQueueDelete removes a queue and everything that hangs off it; ?1 is the
// queue id. The statements run in order inside one transaction.
var sqlQueueDelete = []string{
	`DELETE FROM messages WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?1)`,
	`DELETE FROM lanes WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?1)`,
	`DELETE FROM dead_letters WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?1)`,
	`DELETE FROM consumer_groups WHERE queue_id = ?1`,
	`DELETE FROM partitions WHERE queue_id = ?1`,
	`DELETE FROM queues WHERE id = ?1`,
}

// statements are prepared once on the writer connection; tx.Stmt rebinds
// them to each transaction without preparing again.
type statements struct {
	all map[string]*sql.Stmt
}

func prepare(ctx context.Context, db *sql.DB) (*statements, error) {
	st := &statements{all: make(map[string]*sql.Stmt)}
	for _, q := range []string{
		sqlQueueByName, sqlQueueInsert, sqlQueueUpdate, sqlQueuesMatching,
		sqlPartitionByName, sqlPartitionByUUID, sqlPartitionInsert, sqlPartitionAdvance,
		sqlMessageInsert, sqlMessageByTxn, sqlMessagesAfter, sqlMessageHead, sqlMessageSeedCursor,
		sqlLaneGet, sqlLaneUpsert, sqlLaneCandidates, sqlLaneExtend, sqlLeaseLive,
		sqlGroupGet, sqlGroupInsert, sqlDeadLetterInsert,
	} {
		s, err := db.PrepareContext(ctx, q)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		st.all[q] = s
	}
	return st, nil
}

func (st *statements) close() {
	for _, s := range st.all {
		s.Close()
	}
}

// txn is the context of one job: the shared transaction plus the driver's
// prepared statements and caches.
type txn struct {
	ctx   context.Context
	tx    *sql.Tx
	st    *statements
	cache *cache
	bound map[string]*sql.Stmt
}

func (s *Store) txn(tx *sql.Tx) *txn {
	return &txn{ctx: context.Background(), tx: tx, st: s.stmts, cache: s.cache}
}

// stmt returns the prepared statement for q bound to this transaction.
func (t *txn) stmt(q string) *sql.Stmt {
	if s, ok := t.bound[q]; ok {
		return s
	}
	if t.bound == nil {
		t.bound = make(map[string]*sql.Stmt, 8)
	}
	s := t.tx.StmtContext(t.ctx, t.st.all[q])
	t.bound[q] = s
	return s
}

func (t *txn) exec(q string, args ...any) (sql.Result, error) {
	return t.stmt(q).ExecContext(t.ctx, args...)
}

func (t *txn) queryRow(q string, args ...any) *sql.Row {
	return t.stmt(q).QueryRowContext(t.ctx, args...)
}

func (t *txn) query(q string, args ...any) (*sql.Rows, error) {
	return t.stmt(q).QueryContext(t.ctx, args...)
}
