package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queen-go/queen/internal/store/statsql"
)

// The driver's SQL, one constant per query, named after what it does.
const (
	sqlQueueByName = `SELECT id, uuid, namespace, task, options FROM queues WHERE tenant = ? AND name = ?`
	// A new queue's id is above every id a queue has had whose partitions
	// are not purged yet (a deleted queue's partitions are detached as
	// queue_id = -id, and keep their lanes, which name the old id, until
	// purged). SQLite would otherwise hand the deleted queue's rowid to the
	// next queue, whose pops would then find the old lanes. Both lookups
	// are index edges.
	sqlQueueInsert = `INSERT INTO queues (id, uuid, tenant, name, namespace, task, priority, options, created_at)
		VALUES (max(COALESCE((SELECT max(id) FROM queues), 0), COALESCE(-(SELECT min(queue_id) FROM partitions), 0)) + 1,
			?, ?, ?, ?, ?, ?, ?, ?)`
	sqlQueueUpdate    = `UPDATE queues SET namespace = ?, task = ?, priority = ?, options = ? WHERE id = ?`
	sqlQueuesMatching = `SELECT name FROM queues
		WHERE tenant = ?1 AND (?2 = '' OR namespace = ?2) AND (?3 = '' OR task = ?3)
		ORDER BY priority DESC, name`

	sqlPartitionByName = `SELECT id, uuid FROM partitions WHERE queue_id = ? AND name = ?`
	sqlPartitionByUUID = `SELECT p.id, p.name, q.tenant, q.name FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE p.uuid = ?`
	sqlPartitionInsert  = `INSERT INTO partitions (uuid, queue_id, name, created_at) VALUES (?, ?, ?, ?)`
	sqlPartitionAdvance = `UPDATE partitions SET last_offset = ?, last_message_at = ? WHERE id = ?`

	sqlMessageByTxn = `SELECT seq, id FROM messages WHERE partition_id = ? AND transaction_id = ?`
	// The transactionIds of the next messages after a cursor, to resolve a
	// batch of acks with one range read.
	sqlMessagesAfterIDs = `SELECT seq, transaction_id FROM messages WHERE partition_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`
	// Messages after the cursor. The caller stops at the first one still
	// inside the queue's delayedProcessing window: createdAt grows with the
	// offset within a partition, so filtering here would only make SQLite
	// scan every pending row of a lane that is not due yet.
	sqlMessagesAfter = `SELECT seq, id, transaction_id, trace_id, producer_sub, payload, created_at, sealed
		FROM messages WHERE partition_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`
	sqlMessageHead = `SELECT seq FROM messages WHERE partition_id = ? AND seq > ? ORDER BY seq LIMIT 1`
	// Offsets and created times only: what a pop reads on when every
	// message it read had waited longer than maxWaitTimeSeconds (pop.go).
	sqlMessagesAfterTimes = `SELECT seq, created_at FROM messages WHERE partition_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`

	sqlLaneGet = `SELECT cursor, lease_id, lease_expires_at, batch_end, head_attempts, retry_at
		FROM lanes WHERE partition_id = ? AND consumer_group = ?`
	// Save a lane's state; ready is recomputed from the partition's last
	// offset (exact: the single writer serialises pushes with this).
	sqlLaneUpsert = `INSERT INTO lanes
		(partition_id, consumer_group, queue_id, cursor, lease_id, lease_expires_at, batch_end, head_attempts,
			last_claimed_at, ready, retry_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
			COALESCE((SELECT last_offset FROM partitions WHERE id = ?1), 0) > ?4, ?10)
		ON CONFLICT (partition_id, consumer_group) DO UPDATE SET
			cursor = excluded.cursor, lease_id = excluded.lease_id,
			lease_expires_at = excluded.lease_expires_at, batch_end = excluded.batch_end,
			head_attempts = excluded.head_attempts, retry_at = excluded.retry_at,
			last_claimed_at = max(lanes.last_claimed_at, excluded.last_claimed_at),
			ready = excluded.ready`
	// Clear ready on a lane whose cursor has reached the partition's last
	// offset (?3).
	sqlLaneSettle = `UPDATE lanes SET ready = 0
		WHERE partition_id = ?1 AND consumer_group = ?2 AND ready AND cursor >= ?3`
	// A push wrote partition ?1: its lanes now have unread messages.
	sqlLanesMarkReady = `UPDATE lanes SET ready = 1 WHERE partition_id = ? AND NOT ready`
	// A new partition (?1 of queue ?2) gets a lane for every group that has
	// joined the queue, read from its beginning.
	sqlLanesForPartition = `INSERT INTO lanes (partition_id, consumer_group, queue_id)
		SELECT ?1, consumer_group, ?2 FROM consumer_groups WHERE queue_id = ?2
		ON CONFLICT (partition_id, consumer_group) DO NOTHING`
	// A group's first pop from queue ?1: lanes for every partition, seeded
	// from the subscription time ?3 (0 = from the beginning): after the last
	// message created at or before it, and never before the partition's
	// floor (what retention deleted or eviction evicted). Lanes that already
	// exist (acked before the group ever popped) keep their state.
	sqlJoinLanes = `WITH s AS MATERIALIZED (
			SELECT p.id, p.last_offset, max(p.floor_offset, CASE
				WHEN ?3 = 0 THEN 0
				WHEN p.last_message_at <= ?3 THEN p.last_offset
				ELSE COALESCE((SELECT max(m.seq) FROM messages m
					WHERE m.partition_id = p.id AND m.created_at <= ?3), 0)
				END) AS c
			FROM partitions p WHERE p.queue_id = ?1)
		INSERT INTO lanes (partition_id, consumer_group, queue_id, cursor, ready)
		SELECT id, ?2, ?1, c, last_offset > c FROM s
		WHERE true
		ON CONFLICT (partition_id, consumer_group) DO NOTHING`
	// Ready lanes of queue ?1 for group ?2 with no live lease and no retry
	// delay pending (?3 = now),
	// outside the window buffer (?4), least recently claimed first: a range
	// of the partial index lanes_ready, so the cost does not grow with the
	// number of partitions or with acked history. On a queue with
	// delayedProcessing (?6 > 0) the head message must be due by ?6, so that
	// lanes holding only delayed messages do not crowd out due ones.
	sqlLaneCandidates = `SELECT l.partition_id, p.uuid, p.name, p.last_offset, l.cursor, COALESCE(l.lease_id, ''),
			l.lease_expires_at, l.batch_end, l.head_attempts
		FROM lanes l INDEXED BY lanes_ready JOIN partitions p ON p.id = l.partition_id
		WHERE l.queue_id = ?1 AND l.consumer_group = ?2 AND l.ready
		  AND (l.lease_id IS NULL OR l.lease_expires_at <= ?3) AND l.retry_at <= ?3
		  AND p.last_message_at <= ?4
		  AND (?6 = 0 OR (SELECT m.created_at FROM messages m
			WHERE m.partition_id = l.partition_id AND m.seq > l.cursor ORDER BY m.seq LIMIT 1) <= ?6)
		ORDER BY l.last_claimed_at
		LIMIT ?5`
	// The same for one partition (?4) and group ?1; ?2 = now, ?3 = the
	// window buffer's bound.
	sqlLanePinned = `SELECT l.partition_id, p.uuid, p.name, p.last_offset, l.cursor, COALESCE(l.lease_id, ''),
			l.lease_expires_at, l.batch_end, l.head_attempts
		FROM lanes l JOIN partitions p ON p.id = l.partition_id
		WHERE l.partition_id = ?4 AND l.consumer_group = ?1 AND l.ready
		  AND (l.lease_id IS NULL OR l.lease_expires_at <= ?2) AND l.retry_at <= ?2
		  AND p.last_message_at <= ?3`
	// When the first lane of a queue (?1) for group ?2 (only partition ?3
	// when not 0) that has unread messages may be claimed, in Unix
	// milliseconds (0: none waits for a deadline): per lane the latest of
	// the lease's expiry, the retry delay, the window buffer's end (?4 ms)
	// and the delayed head's due time (?5 ms, 0 for no delay), then the
	// earliest over the lanes. It mirrors sqlLaneCandidates.
	sqlLaneNextReady = `SELECT COALESCE(min(max(
			CASE WHEN l.lease_id IS NULL THEN 0 ELSE l.lease_expires_at END,
			l.retry_at,
			p.last_message_at + ?4,
			CASE WHEN ?5 = 0 THEN 0 ELSE COALESCE((SELECT m.created_at FROM messages m
				WHERE m.partition_id = l.partition_id AND m.seq > l.cursor ORDER BY m.seq LIMIT 1), 0) + ?5 END)), 0)
		FROM lanes l INDEXED BY lanes_ready JOIN partitions p ON p.id = l.partition_id
		WHERE l.queue_id = ?1 AND l.consumer_group = ?2 AND l.ready AND l.cursor < p.last_offset
		  AND (?3 = 0 OR l.partition_id = ?3)`
	sqlLaneExtend = `UPDATE lanes SET lease_expires_at = max(lease_expires_at, ?)
		WHERE lease_id = ? AND lease_expires_at > ? AND queue_id IN (SELECT id FROM queues WHERE tenant = ?)
		RETURNING lease_expires_at`
	sqlLeaseLive = `SELECT count(*) FROM lanes WHERE lease_id = ? AND lease_expires_at > ?
		AND queue_id IN (SELECT id FROM queues WHERE tenant = ?)`

	// Groups that have joined a queue (queue mode included, from 0): their
	// first pop created their lanes.
	sqlGroupGet    = `SELECT subscribed_from FROM consumer_groups WHERE queue_id = ? AND consumer_group = ?`
	sqlGroupInsert = `INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at)
		VALUES (?, ?, ?, ?)`

	sqlDeadLetterInsert = `INSERT INTO dead_letters
		(partition_id, message_seq, consumer_group, error, retry_count, failed_at) VALUES (?, ?, ?, ?, ?, ?)`
)

// sqlQueueDelete removes a queue (?1 = its id, ?2 = now) in one short job:
// its partitions are listed for QueuePurge and detached (queue_id = -id, so
// no lookup through a queue finds them, and (queue_id, name) stays unique),
// its groups and the queue row go. The partition rows themselves stay until
// purged: SQLite gives a new row the largest rowid plus one, so deleting them
// now could hand a purged partition's id, with its leftover messages, to a
// new partition.
var sqlQueueDelete = []string{
	`INSERT INTO purge_partitions (partition_id, queued_at)
		SELECT id, ?2 FROM partitions WHERE queue_id = ?1 ON CONFLICT DO NOTHING`,
	`UPDATE partitions SET queue_id = -queue_id WHERE queue_id = ?1`,
	`DELETE FROM consumer_groups WHERE queue_id = ?1`,
	`DELETE FROM queues WHERE id = ?1`,
}

// Purging deleted queues, one partition at a time, each statement bounded.
const (
	sqlPurgeNext     = `SELECT partition_id FROM purge_partitions ORDER BY partition_id LIMIT 16`
	sqlPurgeMessages = `DELETE FROM messages WHERE seq IN
		(SELECT seq FROM messages WHERE partition_id = ?1 LIMIT ?2)`
	sqlPurgeDeadLetters = `DELETE FROM dead_letters WHERE id IN
		(SELECT id FROM dead_letters WHERE partition_id = ?1 LIMIT ?2)`
	// A partition has a lane per group that joined its queue: few rows.
	sqlPurgeLanes     = `DELETE FROM lanes WHERE partition_id = ?1`
	sqlPurgePartition = `DELETE FROM partitions WHERE id = ?1`
	sqlPurgeDone      = `DELETE FROM purge_partitions WHERE partition_id = ?1`
	sqlPurgeMore      = `SELECT EXISTS (SELECT 1 FROM purge_partitions)`
)

// messagesInsertSQL is the insert of n messages. The offset (seq) is
// explicit, from the writer's counter (see takeSeq): SQLite's own rowid
// would be max(rowid)+1, which goes back when retention deletes the newest
// rows of the table. A row whose transactionId is stored already is left
// out.
func messagesInsertSQL(n int) string {
	row := "(" + statsql.Placeholders(9) + ")"
	return `INSERT INTO messages
		(seq, partition_id, id, transaction_id, trace_id, producer_sub, payload, created_at, sealed) VALUES ` +
		strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") +
		" ON CONFLICT (transaction_id, partition_id) DO NOTHING"
}

// statements are prepared once on the writer connection; tx.Stmt rebinds
// them to each transaction without preparing again.
type statements struct {
	all map[string]*sql.Stmt
	// insertRows[n] is the text of the insert of n messages, for n a power
	// of two up to maxInsertRows.
	insertRows [maxInsertRows + 1]string
}

func prepare(ctx context.Context, db *sql.DB) (*statements, error) {
	st := &statements{all: make(map[string]*sql.Stmt)}
	var inserts []string
	for n := 1; n <= maxInsertRows; n *= 2 {
		st.insertRows[n] = messagesInsertSQL(n)
		inserts = append(inserts, st.insertRows[n])
	}
	// featureStatements: those of key/value state, timers and ephemeral
	// queues (kv.go, timers.go, ephemeral.go).
	for _, q := range append(append([]string{
		sqlQueueByName, sqlQueueInsert, sqlQueueUpdate, sqlQueuesMatching,
		sqlPartitionByName, sqlPartitionByUUID, sqlPartitionInsert, sqlPartitionAdvance,
		sqlMessageByTxn, sqlMessagesAfter, sqlMessageHead, sqlMessagesAfterTimes,
		sqlMessagesAfterIDs, sqlLaneGet, sqlLaneUpsert, sqlLaneSettle, sqlLanesMarkReady, sqlLanesForPartition, sqlJoinLanes,
		sqlLaneCandidates, sqlLanePinned, sqlLaneNextReady, sqlLaneExtend, sqlLeaseLive,
		sqlGroupGet, sqlGroupInsert, sqlDeadLetterInsert,
		sqlBacklogPartitions, sqlMessagesCountRange, // maxSize (capacity.go)
		sqlStreamQueryState, sqlStreamStateLen, sqlStreamStateUpsert, sqlStreamStateDelete, sqlStreamShardAdd,
	}, featureStatements...), inserts...) {
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
	// deferred, when set, takes the partition advances of a plain push
	// until the end of the commit (advance.go).
	deferred *advances
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
