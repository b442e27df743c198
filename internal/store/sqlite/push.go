package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// MessagePushMany stores a batch of messages in one transaction.
func (s *Store) MessagePushMany(ctx context.Context, p *store.MessagePushManyParams) ([]store.PushResult, error) {
	var out []store.PushResult
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		var err error
		out, err = s.deferredTxn(tx).push(p.Items, p.Now)
		return err
	})
	return out, err
}

// push inserts items, resolving a transactionId already stored in the same
// partition to a duplicate verdict carrying the stored message's id. Items
// of queues without a cap go in multi-row inserts (see insertRows); an item
// of a capped queue is inserted on its own, after the rows before it, since
// the room left depends on them.
func (t *txn) push(items []store.PushItem, now time.Time) ([]store.PushResult, error) {
	out := make([]store.PushResult, len(items))
	nowMs := now.UnixMilli()
	var advanced []advance // partitions that received messages, in first-touch order
	var capped []bool      // per advanced partition: its queue has a maxSize
	slot := make(map[int64]int)
	// advancedTo records that partition part now ends at offset seq.
	advancedTo := func(part int64, seq int64, isCapped bool) {
		if j, ok := slot[part]; ok {
			advanced[j].last = seq
		} else {
			slot[part] = len(advanced)
			advanced = append(advanced, advance{id: part, last: seq, atMs: nowMs})
			capped = append(capped, isCapped)
		}
	}
	rows := make([]pushRow, 0, min(len(items), maxInsertRows))
	flush := func() error {
		// Statements exist for powers of two rows (queries.go): 100 rows
		// go as 64 + 32 + 4.
		for rest := rows; len(rest) > 0; {
			n := 1 << (bits.Len(uint(len(rest))) - 1)
			if err := t.insertRows(rest[:n], out, nowMs); err != nil {
				return err
			}
			rest = rest[n:]
		}
		for _, r := range rows {
			if out[r.i].Status == store.PushQueued {
				advancedTo(r.part.id, r.seq, false)
			}
		}
		rows = rows[:0]
		return nil
	}
	var rooms capRoom // room left in capped queues (capacity.go)
	for i := range items {
		it := &items[i]
		q, err := t.queue(queueName{store.TenantOrDefault(it.Tenant), it.Queue}, it.Namespace, it.Task, now)
		if err != nil {
			return nil, err
		}
		part, err := t.partition(q, it.Partition, now)
		if err != nil {
			return nil, err
		}
		if q.opts.MaxSize == 0 {
			if rows = append(rows, pushRow{i: i, seq: t.takeSeq(), part: part, item: it}); len(rows) == maxInsertRows {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		// maxSize: an item that would take the queue past its cap fails.
		if rooms == nil {
			rooms = make(capRoom)
		}
		room, err := t.room(rooms, q)
		if err != nil {
			return nil, err
		}
		if room <= 0 {
			if out[i], err = t.refuse(part, it, q.opts.MaxSize); err != nil {
				return nil, err
			}
			continue
		}
		seq := t.takeSeq()
		if err := t.insertRows([]pushRow{{i: i, seq: seq, part: part, item: it}}, out, nowMs); err != nil {
			return nil, err
		}
		if out[i].Status == store.PushQueued {
			t.stored(rooms, q, part.id)
			advancedTo(part.id, seq, true)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	for i, a := range advanced {
		// A capped queue's room is counted from its partitions' rows, so
		// they must be current for the next push of the commit.
		if t.deferred != nil && !capped[i] {
			t.deferred.job = append(t.deferred.job, a)
			continue
		}
		if err := t.advancePartition(a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pushRow is an item to insert at offset seq; i is its index in the push.
type pushRow struct {
	i    int
	seq  int64
	part *partitionRow
	item *store.PushItem
}

// maxInsertRows bounds the rows of one INSERT statement (9 parameters a
// row, far below SQLite's limit of 32,766). One statement per row cost the
// writer more in database/sql and the driver than SQLite spent inserting.
// A power of two: statements are prepared for 1, 2, 4 … maxInsertRows rows
// (all 64 sizes held 1.9 MB of compiled statements; these few, a sixteenth).
const maxInsertRows = 64

// insertRows inserts rows in one statement and sets their verdicts in out.
// Usually every row goes in; when some do not (their transactionId is
// stored already, or repeats an earlier row's), each row is looked up: the
// row stored under its key is either its own (queued) or another's
// (duplicate, with that message's id).
func (t *txn) insertRows(rows []pushRow, out []store.PushResult, nowMs int64) error {
	args := make([]any, 0, 9*len(rows))
	for _, r := range rows {
		args = append(args, r.seq, r.part.id, r.item.MessageID, r.item.TransactionID,
			nullString(r.item.TraceID), nullString(r.item.ProducerSub), r.item.Payload, nowMs, int64(r.item.Sealed))
	}
	res, err := t.exec(t.st.insertRows[len(rows)], args...)
	if err != nil {
		return fmt.Errorf("insert messages: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("insert messages: %w", err)
	}
	for _, r := range rows {
		o := &out[r.i]
		o.PartitionID = r.part.uuid
		if int(n) == len(rows) {
			o.Status, o.MessageID = store.PushQueued, r.item.MessageID
			continue
		}
		var seq int64
		if err := t.queryRow(sqlMessageByTxn, r.part.id, r.item.TransactionID).Scan(&seq, &o.MessageID); err != nil {
			return fmt.Errorf("resolve duplicate: %w", err)
		}
		o.Status = store.PushDuplicate
		if seq == r.seq {
			o.Status = store.PushQueued
		}
	}
	return nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
