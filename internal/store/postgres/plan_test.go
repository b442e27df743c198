package postgres

import (
	"context"
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
		"push dedup":     plan("push", sqlMessagesInsert, pids, txns, ids, empty, empty, payloads, at, qids),
	} {
		if !strings.Contains(p, "messages_partition_txn") || strings.Contains(p, "Seq Scan on messages") {
			t.Errorf("%s does not probe messages_partition_txn:\n%s", what, p)
		}
	}
}
