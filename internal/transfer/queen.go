// Package transfer moves a broker's data from one database to another: from
// a database of Queen's own broker, or between the engines of this one. This
// file is the reading side of a Queen database: plain SQL over Queen's
// tables (its stored procedures are not needed), each table read in bounded
// batches by keyset, so that memory stays flat over millions of messages.
package transfer

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/internal/store"
)

// Querier is what the Queen reader needs of a PostgreSQL connection or pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// QueenQueueMode is the consumer group under which Queen keeps the
// positions of pops without a group.
const QueenQueueMode = "__QUEUE_MODE__"

// queenTables are tables only Queen's schema has; a schema holding all of
// them is a Queen database.
var queenTables = []string{"partition_consumers", "dead_letter_queue", "consumer_groups_metadata", "messages", "queues", "partitions"}

// IsQueen reports whether schema holds a database of Queen's broker.
func IsQueen(ctx context.Context, db Querier, schema string) (bool, error) {
	var n int
	err := db.QueryRow(ctx, sqlQueenTables, schema, queenTables).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look for Queen's tables in schema %s: %w", schema, err)
	}
	return n == len(queenTables), nil
}

// QueenReader reads a Queen database in schema.
type QueenReader struct {
	DB     Querier
	Schema string
	// Batch is how many rows one query reads at most; 0 means 1000.
	Batch int
}

func (r *QueenReader) batch() int {
	if r.Batch <= 0 {
		return 1000
	}
	return r.Batch
}

// sql names the reader's schema in a statement of queen_sql.go.
func (r *QueenReader) sql(stmt string) string {
	return fmt.Sprintf(stmt, pgx.Identifier{r.Schema}.Sanitize())
}

// QueenQueue is one of Queen's queues with its options as stored.
type QueenQueue struct {
	ID        string
	Name      string
	Namespace string
	Task      string
	Options   store.QueueOptions
	CreatedAt time.Time
}

// QueenPartition is one partition of a queue.
type QueenPartition struct {
	ID        string
	QueueID   string
	Name      string
	CreatedAt time.Time
}

// QueenMessage is one message, in Queen's delivery order within its
// partition (CreatedAt, then ID).
type QueenMessage struct {
	ID            string
	PartitionID   string
	TransactionID string
	TraceID       string // "" without one
	Payload       []byte // the JSON text; sealed when Encrypted
	CreatedAt     time.Time
	Encrypted     bool
	ProducerSub   string // "" without one
}

// QueenPosition is a consumer group's position in one partition: it has
// consumed every message at or before (CreatedAt, MessageID) in Queen's
// order. Empty is true when it has consumed nothing yet. A lease in flight
// is not part of it: what follows the position is what is still to come,
// the leased messages first, as after a broker restart.
type QueenPosition struct {
	PartitionID string
	Group       string // QueenQueueMode for pops without a group
	Empty       bool
	CreatedAt   time.Time
	MessageID   string
	// Leased is true when a lease was live at the dump (released by a move).
	Leased bool
}

// QueenSubscription is where a consumer group that joined a queue with
// subscriptionMode=new starts: after At.
type QueenSubscription struct {
	Group string
	Queue string
	Mode  string // "new", "all", ...
	At    time.Time
}

// QueenDeadLetter is one entry of Queen's DLQ with its message.
type QueenDeadLetter struct {
	ID           string
	PartitionID  string
	Group        string
	ErrorMessage string
	RetryCount   int
	FailedAt     time.Time
	Message      QueenMessage
}

// Queues calls fn with every queue, by name.
func (r *QueenReader) Queues(ctx context.Context, fn func(QueenQueue) error) error {
	rows, err := r.DB.Query(ctx, r.sql(sqlQueenQueues))
	if err != nil {
		return fmt.Errorf("read Queen's queues: %w", err)
	}
	var qs []QueenQueue // queues are few: a page of them is not needed
	for rows.Next() {
		var q QueenQueue
		var ns, task *string
		o := &q.Options
		if err := rows.Scan(&q.ID, &q.Name, &ns, &task, &o.Priority, &o.LeaseTime, &o.RetryLimit, &o.RetryDelay,
			&o.TTL, &o.DeadLetterQueue, &o.DLQAfterMaxRetries, &o.DelayedProcessing, &o.WindowBuffer,
			&o.RetentionSeconds, &o.CompletedRetentionSeconds, &o.RetentionEnabled, &o.EncryptionEnabled,
			&o.MaxWaitTimeSeconds, &o.MaxSize, &q.CreatedAt); err != nil {
			rows.Close()
			return fmt.Errorf("read Queen's queues: %w", err)
		}
		q.Namespace, q.Task = deref(ns), deref(task)
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read Queen's queues: %w", err)
	}
	for _, q := range qs {
		if err := fn(q); err != nil {
			return err
		}
	}
	return nil
}

// Partitions calls fn with every partition of a queue, by name.
func (r *QueenReader) Partitions(ctx context.Context, queueID string, fn func(QueenPartition) error) error {
	rows, err := r.DB.Query(ctx, r.sql(sqlQueenPartitions), queueID)
	if err != nil {
		return fmt.Errorf("read Queen's partitions: %w", err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueenPartition, error) {
		var p QueenPartition
		err := row.Scan(&p.ID, &p.QueueID, &p.Name, &p.CreatedAt)
		return p, err
	})
	if err != nil {
		return fmt.Errorf("read Queen's partitions: %w", err)
	}
	for _, p := range ps {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// Messages calls fn with the messages of a partition in Queen's order, a
// batch at a time; each batch is read after fn returned for the previous
// one, so that fn may write the batch elsewhere before the next is held.
func (r *QueenReader) Messages(ctx context.Context, partitionID string, fn func([]QueenMessage) error) error {
	var after QueenMessage
	first := true
	for {
		var rows pgx.Rows
		var err error
		if first {
			rows, err = r.DB.Query(ctx, r.sql(sqlQueenMessagesFirst), partitionID, r.batch())
		} else {
			rows, err = r.DB.Query(ctx, r.sql(sqlQueenMessagesAfter), partitionID, after.CreatedAt, after.ID, r.batch())
		}
		if err != nil {
			return fmt.Errorf("read Queen's messages: %w", err)
		}
		ms, err := pgx.CollectRows(rows, scanQueenMessage)
		if err != nil {
			return fmt.Errorf("read Queen's messages: %w", err)
		}
		if len(ms) == 0 {
			return nil
		}
		if err := fn(ms); err != nil {
			return err
		}
		if len(ms) < r.batch() {
			return nil
		}
		after, first = ms[len(ms)-1], false
	}
}

func scanQueenMessage(row pgx.CollectableRow) (QueenMessage, error) {
	var m QueenMessage
	var trace, sub *string
	err := row.Scan(&m.ID, &m.PartitionID, &m.TransactionID, &trace, &m.Payload, &m.CreatedAt, &m.Encrypted, &sub)
	m.TraceID, m.ProducerSub = deref(trace), deref(sub)
	return m, err
}

// Positions calls fn with every consumer group's position in the
// partitions of a queue; a group that never popped a partition has none.
func (r *QueenReader) Positions(ctx context.Context, queueID string, fn func(QueenPosition) error) error {
	rows, err := r.DB.Query(ctx, r.sql(sqlQueenPositions), queueID)
	if err != nil {
		return fmt.Errorf("read Queen's consumer positions: %w", err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueenPosition, error) {
		var p QueenPosition
		var at *time.Time
		var id string
		var leaseUntil *time.Time
		err := row.Scan(&p.PartitionID, &p.Group, &id, &at, &leaseUntil)
		if at == nil || id == zeroUUID {
			p.Empty = true
		} else {
			p.CreatedAt, p.MessageID = *at, id
		}
		p.Leased = leaseUntil != nil
		return p, err
	})
	if err != nil {
		return fmt.Errorf("read Queen's consumer positions: %w", err)
	}
	for _, p := range ps {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// Subscriptions returns the subscription settings Queen keeps per group and
// queue (consumer_groups_metadata), by group and queue name.
func (r *QueenReader) Subscriptions(ctx context.Context) (map[[2]string]QueenSubscription, error) {
	rows, err := r.DB.Query(ctx, r.sql(sqlQueenSubscriptions))
	if err != nil {
		return nil, fmt.Errorf("read Queen's subscriptions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueenSubscription, error) {
		var s QueenSubscription
		var mode *string
		var at *time.Time
		err := row.Scan(&s.Group, &s.Queue, &mode, &at)
		s.Mode = deref(mode)
		if at != nil {
			s.At = *at
		}
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read Queen's subscriptions: %w", err)
	}
	out := make(map[[2]string]QueenSubscription, len(subs))
	for _, s := range subs {
		out[[2]string{s.Group, s.Queue}] = s
	}
	return out, nil
}

// DeadLetters calls fn with the DLQ entries of a queue, oldest first, a
// batch at a time.
func (r *QueenReader) DeadLetters(ctx context.Context, queueID string, fn func([]QueenDeadLetter) error) error {
	var afterAt time.Time
	afterID := zeroUUID
	for {
		rows, err := r.DB.Query(ctx, r.sql(sqlQueenDeadLetters), queueID, afterAt, afterID, r.batch())
		if err != nil {
			return fmt.Errorf("read Queen's dead letters: %w", err)
		}
		ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueenDeadLetter, error) {
			var d QueenDeadLetter
			var group, msg *string
			var retries *int
			var trace, sub *string
			m := &d.Message
			err := row.Scan(&d.ID, &d.PartitionID, &group, &msg, &retries, &d.FailedAt,
				&m.ID, &m.TransactionID, &trace, &m.Payload, &m.CreatedAt, &m.Encrypted, &sub)
			d.Group, d.ErrorMessage, m.TraceID, m.ProducerSub = deref(group), deref(msg), deref(trace), deref(sub)
			m.PartitionID = d.PartitionID
			if retries != nil {
				d.RetryCount = *retries
			}
			return d, err
		})
		if err != nil {
			return fmt.Errorf("read Queen's dead letters: %w", err)
		}
		if len(ds) == 0 {
			return nil
		}
		if err := fn(ds); err != nil {
			return err
		}
		if len(ds) < r.batch() {
			return nil
		}
		afterAt, afterID = ds[len(ds)-1].FailedAt, ds[len(ds)-1].ID
	}
}

// Counts are the rows of Queen's tables an import copies.
type Counts struct {
	Queues, Partitions, Messages, DeadLetters, Positions int64
}

// Counts counts what an import of this database copies.
func (r *QueenReader) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := r.DB.QueryRow(ctx, r.sql(sqlQueenCounts)).Scan(&c.Queues, &c.Partitions, &c.Messages, &c.DeadLetters, &c.Positions)
	if err != nil {
		return c, fmt.Errorf("count Queen's rows: %w", err)
	}
	return c, nil
}

// After reports whether message m comes after position p in Queen's order,
// that is whether the group at p has still to read m. A position without a
// message reads from the subscription's start: every message when sub is
// nil or its mode is not "new", else those created after sub.At.
func (p QueenPosition) After(m QueenMessage, sub *QueenSubscription) bool {
	if p.Empty {
		if sub != nil && sub.Mode == "new" {
			return m.CreatedAt.After(sub.At)
		}
		return true
	}
	if !m.CreatedAt.Equal(p.CreatedAt) {
		return m.CreatedAt.After(p.CreatedAt)
	}
	return m.ID > p.MessageID
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
