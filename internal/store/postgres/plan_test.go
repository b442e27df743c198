package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/storetest"
)

// TestLookupsByTransactionIDProbeTheIndex: resolving acks and spotting
// duplicate pushes look messages up by (partition, transactionId). On a
// fresh table (no statistics yet) the planner once answered such a join by
// walking a whole partition per ack, or scanning messages per push: 1,000-ack
// batches took seconds. Both statements must probe messages_partition_txn,
// whatever the statistics say.
func TestLookupsByTransactionIDProbeTheIndex(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	items := make([]store.PushItem, 3000)
	for i := range items {
		items[i] = storetest.Item("q", "p", i)
	}
	res, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	if err := s.pool.QueryRow(ctx, "SELECT id FROM partitions").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	const n = 250
	puuids, txns, ids, empty, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]int64, n)
	pids, payloads, qids := make([]int64, n), make([][]byte, n), make([]int64, n)
	probe := slices.Repeat([]bool{true}, n) // client-given transactionIds
	sealed := make([]int16, n)
	var qid int64
	if err := s.pool.QueryRow(ctx, "SELECT queue_id FROM partitions WHERE id = $1", pid).Scan(&qid); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		puuids[i], txns[i] = res[i].PartitionID, items[i*10].TransactionID
		pids[i], ids[i], payloads[i], at[i], qids[i] = pid, storetest.NewID(), []byte("1"), 1, qid
	}
	plan := func(what, query string, args ...any) string {
		t.Helper()
		rows, err := s.pool.Query(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var b strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(line + "\n")
		}
		return b.String()
	}
	for what, p := range map[string]string{
		"ack resolution": plan("ack", sqlAckResolve, puuids, txns, store.DefaultTenant),
		"push dedup":     plan("push", sqlMessagesInsert, pids, txns, ids, empty, empty, payloads, at, qids, probe, sealed),
		"push dedup (capped)": plan("push", sqlMessagesInsertCapped, pids, txns, ids, empty, empty, payloads, at,
			qids, probe, sealed),
	} {
		if !strings.Contains(p, "messages_partition_txn") || strings.Contains(p, "Seq Scan on messages") {
			t.Errorf("%s does not probe messages_partition_txn:\n%s", what, p)
		}
	}
}

// TestRequeueStatementsProbeIndexes: requeueing dead letters (by name or
// the oldest of a filter) reads messages, takes dead letters and pushes
// again. Right after a bulk fill, before autovacuum has analysed it (and
// after), every statement of that path must reach messages, lanes and
// partitions by index. And none may be JIT-compiled: on a queue of 10,000
// partitions the push insert's estimate passes jit_above_cost, and the
// compile took 140 ms to seconds per requeue.
func TestRequeueStatementsProbeIndexes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	push := func(items []store.PushItem) []store.PushResult {
		t.Helper()
		res, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	deadLetter := func(partitionID, txn string) {
		t.Helper()
		if err := s.MessageDeadLetter(ctx, &store.MessageDeadLetterParams{MessageRef: store.MessageRef{
			PartitionID: partitionID, TransactionID: txn}, Error: "test", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// A bulk fill autovacuum has not analysed yet: 20,000 messages over
	// 2,000 partitions, dead letters on the newest of 20 of them, and lanes.
	for _, table := range []string{"messages", "partitions", "lanes", "dead_letters", "queues"} {
		exec("ALTER TABLE " + table + " SET (autovacuum_enabled = false)")
	}
	const queue = "q"
	const parts = 2000
	var dead []store.MessageRef
	for b := range 4 {
		items := make([]store.PushItem, 5000)
		for i := range items {
			items[i] = storetest.Item(queue, fmt.Sprintf("p%05d", (b*5000+i)%parts), i)
		}
		res := push(items)
		if b == 3 {
			for i := len(items) - 20; i < len(items); i++ {
				dead = append(dead, store.MessageRef{PartitionID: res[i].PartitionID, TransactionID: items[i].TransactionID})
			}
		}
	}
	for _, r := range dead {
		deadLetter(r.PartitionID, r.TransactionID)
	}
	// Queue mode and five groups joining make 2,000 lanes each.
	for _, g := range []string{store.QueueMode, "g1", "g2", "g3", "g4", "g5"} {
		if _, err := s.LanePop(ctx, &store.LanePopParams{Queue: queue, ConsumerGroup: g, Batch: 1,
			AutoAck: true, Now: time.Now(), LeaseID: storetest.NewID()}); err != nil {
			t.Fatal(err)
		}
	}

	// The arguments of the statements: the 20 dead-lettered messages.
	n := len(dead)
	puuids, txns, retries := make([]string, n), make([]string, n), make([]string, n)
	for i, r := range dead {
		puuids[i], txns[i], retries[i] = r.PartitionID, r.TransactionID, store.RetryTransactionID(r.TransactionID, 1)
	}
	pids, seqs := make([]int64, n), make([]int64, n)
	for i, r := range dead {
		if err := s.pool.QueryRow(ctx, `SELECT m.partition_id, m.seq FROM messages m
			WHERE m.partition_id = (SELECT id FROM partitions WHERE uuid = $1) AND m.transaction_id = $2`,
			r.PartitionID, r.TransactionID).Scan(&pids[i], &seqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var qid int64
	if err := s.pool.QueryRow(ctx, "SELECT id FROM queues WHERE name = $1", queue).Scan(&qid); err != nil {
		t.Fatal(err)
	}
	ids, empty, payloads, at, qids := make([]string, n), make([]string, n), make([][]byte, n), make([]int64, n),
		make([]int64, n)
	for i := range n {
		ids[i], payloads[i], at[i], qids[i] = storetest.NewID(), []byte("1"), 1, qid
	}
	probe := slices.Repeat([]bool{true}, n)
	sealed := make([]int16, n)
	all := dlqArgs(store.DefaultTenant, &store.DLQFilter{})
	ofQueue := dlqArgs(store.DefaultTenant, &store.DLQFilter{Queue: queue})

	// EXPLAIN in a transaction rolled back, on a connection of the store.
	plan := func(what, query string, args ...any) string {
		t.Helper()
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		rows, err := tx.Query(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var b strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return b.String()
	}
	type check struct {
		query string
		args  []any
		index string // an index the plan must use, if any
		scans string // a table it may scan
	}
	checks := map[string]check{
		"messages by ref": {query: sqlDLQMessagesByRef, args: []any{puuids, txns, store.DefaultTenant},
			index: "messages_partition_txn"},
		"take named":          {query: sqlDLQTakeOf, args: append(ofQueue, pids, seqs)},
		"take oldest":         {query: sqlDLQTakeOldest, args: append(all, 10)},
		"take oldest (queue)": {query: sqlDLQTakeOldest, args: append(ofQueue, 10)},
		"messages at":         {query: sqlDLQMessagesAt, args: []any{pids, seqs}, index: "messages_pkey"},
		"free retry ids":      {query: sqlTxnsTaken, args: []any{pids, retries}, index: "messages_partition_txn"},
		"partitions lock":     {query: sqlPartitionsLock, args: []any{pids}},
		// The maxSize check reads all partitions of a capped queue: a scan
		// when the queue has them all (it runs for capped queues only).
		"push insert": {query: sqlMessagesInsert, args: []any{pids, retries, ids, empty, empty, payloads, at, qids, probe, sealed},
			index: "messages_partition_txn"},
		"push insert (capped)": {query: sqlMessagesInsertCapped,
			args:  []any{pids, retries, ids, empty, empty, payloads, at, qids, probe, sealed},
			index: "messages_partition_txn", scans: "partitions"},
		"lanes ready": {query: sqlLanesMarkReady, args: []any{pids}},
	}
	for _, stats := range []string{"never analysed", "analysed"} {
		if stats == "analysed" {
			for _, table := range []string{"messages", "partitions", "lanes", "dead_letters", "queues"} {
				exec("ANALYZE " + table)
			}
		}
		for what, c := range checks {
			p := plan(what, c.query, c.args...)
			for _, table := range []string{"messages", "lanes", "partitions"} {
				if table != c.scans && strings.Contains(p, "Seq Scan on "+table+" ") {
					t.Errorf("%s, %s: scans %s:\n%s", stats, what, table, p)
				}
			}
			if c.index != "" && !strings.Contains(p, c.index) {
				t.Errorf("%s, %s: does not probe %s:\n%s", stats, what, c.index, p)
			}
			if strings.Contains(p, "JIT:") {
				t.Errorf("%s, %s: JIT-compiled:\n%s", stats, what, p)
			}
		}
	}
	var jit string
	if err := s.pool.QueryRow(ctx, "SHOW jit").Scan(&jit); err != nil || jit != "off" {
		t.Errorf("jit = %q (%v), want off on the store's connections", jit, err)
	}
}
