package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
)

// maxSize (see store/capacity.go for the rule). A queue's unconsumed
// messages are, per partition, those after its slowest lane's cursor (after
// its floor when no group has joined it). Offsets here number the messages of
// every partition together, so a count of them is a count of rows, not a
// difference of offsets; the writer keeps, per partition of a capped queue,
// the count after a position and moves it with the position: a push adds
// what it stored, and when the slowest cursor has moved the messages it
// passed are counted off (an index range of what was consumed since, so
// every message is counted about once). Whatever deletes messages of a
// partition (retention) drops its count, and a rollback drops them all.
// Queues without a cap never reach this code.

// unconsumedCount is the number of messages of a partition after offset
// from.
type unconsumedCount struct {
	from, n int64
}

const (
	// The partitions of queue ?1 with their floor and slowest cursor (NULL
	// when no group has joined the partition).
	sqlBacklogPartitions = `SELECT p.id, p.floor_offset,
			(SELECT min(l.cursor) FROM lanes l WHERE l.partition_id = p.id)
		FROM partitions p WHERE p.queue_id = ?`
	sqlMessagesCountRange = `SELECT count(*) FROM messages WHERE partition_id = ? AND seq > ? AND seq <= ?`
)

const maxOffset = int64(1<<63 - 1)

// capRoom is the room left in the capped queues one push writes, by queue
// id, computed on the first item of each.
type capRoom map[int64]int64

// room returns how many more messages capped queue q takes.
func (t *txn) room(rooms capRoom, q *queueRow) (int64, error) {
	if r, ok := rooms[q.id]; ok {
		return r, nil
	}
	n, err := t.unconsumed(q)
	if err != nil {
		return 0, err
	}
	r := int64(q.opts.MaxSize) - n
	rooms[q.id] = r
	return r, nil
}

// unconsumed counts the unconsumed messages of q.
func (t *txn) unconsumed(q *queueRow) (int64, error) {
	rows, err := t.query(sqlBacklogPartitions, q.id)
	if err != nil {
		return 0, fmt.Errorf("count unconsumed messages: %w", err)
	}
	type part struct {
		id, from int64
	}
	var parts []part
	for rows.Next() {
		var p part
		var floor int64
		var slowest sql.NullInt64
		if err := rows.Scan(&p.id, &floor, &slowest); err != nil {
			rows.Close()
			return 0, err
		}
		p.from = floor
		if slowest.Valid {
			p.from = slowest.Int64
		}
		parts = append(parts, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var total int64
	for _, p := range parts {
		c, _ := t.cache.unconsumed.Get(p.id)
		switch {
		case c == nil || p.from < c.from:
			// Unknown, or a group joined behind the counted position.
			c = &unconsumedCount{from: p.from}
			if err := t.queryRow(sqlMessagesCountRange, p.id, p.from, maxOffset).Scan(&c.n); err != nil {
				return 0, fmt.Errorf("count unconsumed messages: %w", err)
			}
			t.cache.unconsumed.Add(p.id, c)
		case p.from > c.from:
			var passed int64
			if err := t.queryRow(sqlMessagesCountRange, p.id, c.from, p.from).Scan(&passed); err != nil {
				return 0, fmt.Errorf("count unconsumed messages: %w", err)
			}
			c.from, c.n = p.from, c.n-passed
		}
		total += c.n
	}
	return total, nil
}

// stored records a message stored in partition pid of capped queue q.
func (t *txn) stored(rooms capRoom, q *queueRow, pid int64) {
	rooms[q.id]--
	if c, _ := t.cache.unconsumed.Get(pid); c != nil {
		c.n++
	}
}

// refuse answers an item of a full queue: a duplicate of a stored message
// is still a duplicate, anything else fails.
func (t *txn) refuse(part *partitionRow, it *store.PushItem, maxSize int) (store.PushResult, error) {
	res := store.PushResult{PartitionID: part.uuid}
	var seq int64
	err := t.queryRow(sqlMessageByTxn, part.id, it.TransactionID).Scan(&seq, &res.MessageID)
	switch {
	case err == nil:
		res.Status = store.PushDuplicate
	case errors.Is(err, sql.ErrNoRows):
		res.Status, res.Error = store.PushFailed, store.QueueFullError(maxSize)
	default:
		return res, fmt.Errorf("resolve duplicate: %w", err)
	}
	return res, nil
}

// forgetUnconsumed drops the count of partition pid, whose messages were
// deleted.
func (t *txn) forgetUnconsumed(pid int64) { t.cache.unconsumed.Remove(pid) }
