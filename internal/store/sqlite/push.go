package sqlite

import (
	"context"
	"database/sql"
	"fmt"
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
// partition to a duplicate verdict carrying the stored message's id.
func (t *txn) push(items []store.PushItem, now time.Time) ([]store.PushResult, error) {
	out := make([]store.PushResult, len(items))
	nowMs := now.UnixMilli()
	var advanced []advance // partitions that received messages, in first-touch order
	var capped []bool      // per advanced partition: its queue has a maxSize
	slot := make(map[int64]int)
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
		// maxSize: an item that would take the queue past its cap fails.
		if q.opts.MaxSize > 0 {
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
		}
		seq := t.nextSeq() // explicit offsets: see seq.go
		res, err := t.exec(sqlMessageInsert, seq, part.id, it.MessageID, it.TransactionID,
			nullString(it.TraceID), nullString(it.ProducerSub), it.Payload, nowMs)
		if err != nil {
			return nil, fmt.Errorf("insert message: %w", err)
		}
		out[i].PartitionID = part.uuid
		if n, _ := res.RowsAffected(); n == 0 {
			var seq int64
			if err := t.queryRow(sqlMessageByTxn, part.id, it.TransactionID).Scan(&seq, &out[i].MessageID); err != nil {
				return nil, fmt.Errorf("resolve duplicate: %w", err)
			}
			out[i].Status = store.PushDuplicate
			continue
		}
		t.usedSeq(seq)
		if q.opts.MaxSize > 0 {
			t.stored(rooms, q, part.id)
		}
		out[i].Status, out[i].MessageID = store.PushQueued, it.MessageID
		if j, ok := slot[part.id]; ok {
			advanced[j].last = seq
		} else {
			slot[part.id] = len(advanced)
			advanced = append(advanced, advance{id: part.id, last: seq, atMs: nowMs})
			capped = append(capped, q.opts.MaxSize > 0)
		}
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

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
