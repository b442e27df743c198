package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// MessagePushMany stores a batch of messages. Concurrent calls are merged into
// shared transactions by the batcher; the messages of one call share its
// createdAt (p.Now).
func (s *Store) MessagePushMany(ctx context.Context, p *store.MessagePushManyParams) ([]store.PushResult, error) {
	if len(p.Items) == 0 {
		return []store.PushResult{}, nil
	}
	return s.pushes.push(ctx, p)
}

// pushEntry is one item to push with the createdAt of the call it came from.
type pushEntry struct {
	item *store.PushItem
	atMs int64
}

// msgKey identifies a message: a transactionId is unique within a partition.
type msgKey struct {
	partitionID   int64
	transactionID string
}

// pushPlan is a push resolved to partition rows.
type pushPlan struct {
	entries []pushEntry
	parts   []partRef // per entry
	firstOf []int     // per entry: index of the first entry with the same message key
}

// push writes entries in the current transaction in a fixed number of
// round trips: resolve queues and partitions (from the cache once known),
// then one pipelined batch that locks the partitions, inserts, marks lanes
// ready and notifies listeners.
func (t *txn) push(entries []pushEntry) ([]store.PushResult, error) {
	plan := &pushPlan{entries: entries}
	if err := t.resolvePush(plan); err != nil {
		return nil, err
	}
	return t.writePush(plan)
}

// resolvePush finds (or creates) the queue and partition of every entry and
// spots entries repeating an earlier one's message key (possible when the
// batcher merges calls).
func (t *txn) resolvePush(plan *pushPlan) error {
	want := make(map[queueName]newQueue)
	for _, e := range plan.entries {
		qn := queueName{store.TenantOrDefault(e.item.Tenant), e.item.Queue}
		if _, ok := want[qn]; !ok {
			want[qn] = newQueue{namespace: e.item.Namespace, task: e.item.Task, atMs: e.atMs}
		}
	}
	queues, err := t.queues(want)
	if err != nil {
		return err
	}
	keys := make([]partKey, len(plan.entries))
	for i, e := range plan.entries {
		keys[i] = partKey{queues[queueName{store.TenantOrDefault(e.item.Tenant), e.item.Queue}].id,
			partitionName(e.item.Partition)}
	}
	parts, err := t.partitions(keys, plan.entries[0].atMs)
	if err != nil {
		return err
	}
	plan.parts = make([]partRef, len(keys))
	plan.firstOf = make([]int, len(keys))
	first := make(map[msgKey]int, len(keys))
	for i, k := range keys {
		plan.parts[i] = parts[k]
		mk := msgKey{parts[k].id, plan.entries[i].item.TransactionID}
		if j, ok := first[mk]; ok {
			plan.firstOf[i] = j
		} else {
			first[mk] = i
			plan.firstOf[i] = i
		}
	}
	return nil
}

func partitionName(name string) string {
	if name == "" {
		return store.DefaultPartition
	}
	return name
}

// messageRows are the columns of sqlMessagesInsert(Capped).
type messageRows struct {
	partitionID, createdAt        []int64
	queueID                       []int64 // for maxSize
	txn, id, traceID, producerSub []string
	payload                       [][]byte
	probe                         []bool  // look for a stored duplicate
	sealed                        []int16 // store.Seal
	entry                         []int   // entry index of each row
}

// newMessageRows makes room for n rows in every column.
func newMessageRows(n int) *messageRows {
	return &messageRows{
		partitionID: make([]int64, 0, n), createdAt: make([]int64, 0, n), queueID: make([]int64, 0, n),
		txn: make([]string, 0, n), id: make([]string, 0, n), traceID: make([]string, 0, n),
		producerSub: make([]string, 0, n), payload: make([][]byte, 0, n), probe: make([]bool, 0, n),
		sealed: make([]int16, 0, n), entry: make([]int, 0, n),
	}
}

func (r *messageRows) add(part partRef, i int, e pushEntry) {
	r.partitionID = append(r.partitionID, part.id)
	r.queueID = append(r.queueID, part.queueID)
	r.txn = append(r.txn, e.item.TransactionID)
	r.id = append(r.id, e.item.MessageID)
	r.traceID = append(r.traceID, e.item.TraceID)
	r.producerSub = append(r.producerSub, e.item.ProducerSub)
	r.payload = append(r.payload, e.item.Payload)
	r.createdAt = append(r.createdAt, e.atMs)
	r.probe = append(r.probe, !e.item.MintedTxn)
	r.sealed = append(r.sealed, int16(e.item.Sealed))
	r.entry = append(r.entry, i)
}

// writePush writes the plan's fresh entries and registers the wake-ups.
// Queues without a cap (the usual case, as far as this broker knows) take
// the cheaper insert; if one has a cap after all, that insert writes
// nothing and the push runs again with the one that checks room.
func (t *txn) writePush(plan *pushPlan) ([]store.PushResult, error) {
	w := newPushWrite(plan)
	out, err := t.insertMessages(w, t.s.cache.anyCapped(w.qids))
	if errors.Is(err, errCapped) {
		out, err = t.insertMessages(w, true)
	}
	if err != nil {
		return nil, err
	}
	t.wakeAfterCommit(w.wakes...)
	return pushResults(plan, out.stored, out.full), nil
}

// pushWrite is what the statements of a push are given.
type pushWrite struct {
	rows       *messageRows
	pids, qids []int64      // sorted, distinct
	wakes      []store.Wake // one count per message for the long polls to wake
}

func newPushWrite(plan *pushPlan) *pushWrite {
	w := &pushWrite{rows: newMessageRows(len(plan.entries)),
		pids: make([]int64, 0, len(plan.entries)), qids: make([]int64, 0, len(plan.entries))}
	// The wake key is built once per queue, not per message.
	wakeOf := make(map[int64]int) // queue id → index in wakes
	for i, e := range plan.entries {
		if plan.firstOf[i] != i {
			continue
		}
		part := plan.parts[i]
		w.rows.add(part, i, e)
		w.pids = append(w.pids, part.id)
		w.qids = append(w.qids, part.queueID)
		if j, ok := wakeOf[part.queueID]; ok {
			w.wakes[j].Count++
			continue
		}
		wakeOf[part.queueID] = len(w.wakes)
		w.wakes = append(w.wakes, store.Wake{Key: store.QueueKey(store.TenantOrDefault(e.item.Tenant), e.item.Queue),
			Count: 1})
	}
	slices.Sort(w.pids)
	w.pids = slices.Compact(w.pids)
	slices.Sort(w.qids)
	w.qids = slices.Compact(w.qids)
	return w
}

// insertOutcome is what the insert reported, by entry index: the id of the
// stored message each duplicate repeats, the maxSize of the queue that
// refused an entry.
type insertOutcome struct {
	stored map[int]string
	full   map[int]int
}

// errCapped: the uncapped insert found a queue with a cap and wrote nothing.
var errCapped = errors.New("a queue of the push has a cap")

// insertMessages sends, in one round trip: the partition locks (in id
// order), for capped queues their advisory locks, the insert (which reports
// duplicates of stored messages) and the lanes update. The statements run
// in order, so the insert runs with the locks held.
func (t *txn) insertMessages(w *pushWrite, capped bool) (*insertOutcome, error) {
	rows := w.rows
	insert := sqlMessagesInsert
	b := &pgx.Batch{}
	b.Queue(sqlPartitionsLock, w.pids)
	if capped {
		b.Queue(sqlQueuesCapLock, w.qids) // maxSize: see the statement
		insert = sqlMessagesInsertCapped
	}
	b.Queue(insert, rows.partitionID, rows.txn, rows.id, rows.traceID, rows.producerSub,
		rows.payload, rows.createdAt, rows.queueID, rows.probe, rows.sealed)
	b.Queue(sqlLanesMarkReady, w.pids)
	br := t.tx.SendBatch(t.ctx, b)
	defer br.Close()
	locked, err := pgx.CollectRows(must(br.Query()), pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("lock partitions: %w", err)
	}
	if len(locked) != len(w.pids) {
		return nil, fmt.Errorf("lock partitions: %w", errStale) // deleted by another broker
	}
	if capped {
		var id int64
		var ids []int64
		if _, err := pgx.ForEachRow(must(br.Query()), []any{&id, nil}, func() error {
			ids = append(ids, id)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("lock capped queues: %w", err)
		}
		t.s.cache.setCapped(w.qids, ids)
	}
	out := &insertOutcome{stored: make(map[int]string), full: make(map[int]int)}
	var idx, maxSize int64
	var id string
	foundCap := false
	if _, err := pgx.ForEachRow(must(br.Query()), []any{&idx, &id, &maxSize}, func() error {
		switch {
		case idx == 0:
			foundCap = true
		case id == "":
			out.full[rows.entry[idx-1]] = int(maxSize)
		default:
			out.stored[rows.entry[idx-1]] = id
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("insert messages: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("insert messages: %w", err)
	}
	if foundCap {
		return nil, errCapped
	}
	return out, nil
}

// pushResults builds the verdicts: queued, duplicate with the id of the
// message already stored (or of the earlier entry of this batch), or failed
// when a capped queue had no room.
func pushResults(plan *pushPlan, stored map[int]string, full map[int]int) []store.PushResult {
	out := make([]store.PushResult, len(plan.entries))
	for i, e := range plan.entries {
		out[i].PartitionID = plan.parts[i].uuid
		switch j := plan.firstOf[i]; {
		case j != i && out[j].Status == store.PushFailed:
			out[i].Status, out[i].Error = out[j].Status, out[j].Error // refused like its twin
		case j != i:
			out[i].Status, out[i].MessageID = store.PushDuplicate, out[j].MessageID
		case stored[i] != "":
			out[i].Status, out[i].MessageID = store.PushDuplicate, stored[i]
		case full[i] > 0:
			out[i].Status, out[i].Error = store.PushFailed, store.QueueFullError(full[i])
		default:
			out[i].Status, out[i].MessageID = store.PushQueued, e.item.MessageID
		}
	}
	return out
}

// must drops the error of BatchResults.Query: pgx also returns it from the
// rows, where CollectRows and ForEachRow report it.
func must(rows pgx.Rows, _ error) pgx.Rows { return rows }
