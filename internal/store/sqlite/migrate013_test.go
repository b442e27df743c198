package sqlite

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/storetest"
)

// Migration 013 re-keys the duplicate-check index by transaction id first:
// a message stored before it is still found as the duplicate of a push
// repeating its transactionId, in its own partition only.
func TestMigration013KeepsDuplicatesFound(t *testing.T) {
	ctx := context.Background()
	old := schemaAt(t, 12)
	old.exec(t,
		`INSERT INTO queues (id, uuid, tenant, name, options, created_at)
			VALUES (1, 'q-uuid', '`+store.DefaultTenant+`', 'q', '{}', 0)`,
		`INSERT INTO partitions (id, uuid, queue_id, name, last_offset, last_message_at, created_at, message_count)
			VALUES (1, 'p-uuid', 1, 'p', 1, 1000, 0, 1)`,
		`INSERT INTO messages (seq, partition_id, id, transaction_id, payload, created_at)
			VALUES (1, 1, 'm-old', 't1', '{}', 1000)`,
	)

	s := old.open(t)
	var indexes []string
	rows, err := s.reader.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, n)
	}
	if !slices.Contains(indexes, "messages_txn_partition") || slices.Contains(indexes, "messages_partition_txn") {
		t.Fatalf("indexes of messages after migration 013: %v", indexes)
	}
	now := time.UnixMilli(2000)
	again, other := storetest.Item("q", "p", 0), storetest.Item("q", "p2", 0)
	again.TransactionID, other.TransactionID = "t1", "t1"
	res, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: []store.PushItem{again, other}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != store.PushDuplicate || res[0].MessageID != "m-old" {
		t.Errorf("push repeating t1 in p: %+v, want a duplicate of m-old", res[0])
	}
	if res[1].Status != store.PushQueued {
		t.Errorf("push of t1 in another partition: %+v, want queued", res[1])
	}
}
