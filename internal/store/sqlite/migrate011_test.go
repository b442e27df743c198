package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/storetest"
)

// A database that versions 8 to 10 used: retention deleted a prefix
// (deleted_offset), messages were deleted on their own, the newest of them
// kept in use by a rowid keeper, and the counters of migration 006 still
// count them all. Migration 011 leaves figures that count only what is
// there, and a new message still gets an offset above every cursor.
func TestMigration011KeepsFiguresRight(t *testing.T) {
	ctx := context.Background()
	old := schemaAt(t, 10)
	opts := `{"leaseTime":300,"retryLimit":3,"ttl":3600}`
	// Offsets 1 to 10 of partition 1; retention deleted 1 to 4, 7 and 10
	// were deleted on their own (10 kept by a keeper row). Group g read
	// up to 6 and its counter says 6; the partition's says 10.
	old.exec(t,
		`INSERT INTO queues (id, uuid, tenant, name, options, created_at)
			VALUES (1, 'q-uuid', '`+store.DefaultTenant+`', 'q', '`+opts+`', 0)`,
		`INSERT INTO partitions (id, uuid, queue_id, name, last_offset, last_message_at, created_at,
			floor_offset, deleted_offset, message_count) VALUES (1, 'p-uuid', 1, 'p', 10, 1000, 0, 4, 4, 10)`,
		`INSERT INTO messages (seq, partition_id, id, transaction_id, payload, created_at)
			SELECT value, 1, 'm' || value, 't' || value, '{}', 1000 FROM json_each('[5,6,8,9]')`,
		`INSERT INTO messages (seq, partition_id, id, transaction_id, payload, created_at)
			VALUES (10, 0, '', 'rowid-keeper:10', 'null', 0)`,
		`INSERT INTO consumer_groups (queue_id, consumer_group, created_at) VALUES (1, 'g', 0)`,
		`INSERT INTO lanes (partition_id, consumer_group, queue_id, cursor, ready) VALUES (1, 'g', 1, 6, 1)`,
		`UPDATE lanes SET consumed = 6`,
	)

	s := old.open(t)
	now := time.UnixMilli(2000)
	d, err := s.QueueGet(ctx, &store.QueueGetParams{Name: "q", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.MessageCounts{Total: 4, Pending: 2, Completed: 2}); d.Queue.Messages != want {
		t.Errorf("figures after migration 011: %+v, want %+v", d.Queue.Messages, want)
	}
	lanes, err := s.GroupGet(ctx, &store.GroupGetParams{Group: "g", Now: now})
	if err != nil || len(lanes) != 1 || lanes[0].Consumed != 2 || lanes[0].Lag != 2 {
		t.Fatalf("g's lane: %+v %v, want 2 consumed and 2 to read", lanes, err)
	}
	var keepers int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE partition_id = 0`).Scan(&keepers); err != nil || keepers != 0 {
		t.Errorf("rowid keepers left: %d %v", keepers, err)
	}
	// Without its keeper, offset 10 is still never handed out again.
	it := storetest.Item("q", "p", 11)
	storetest.PushItems(t, s, now, it)
	p := storetest.PopParams("q", "g", now)
	p.Batch = 10
	got := storetest.Pop(t, s, p)
	if len(got) != 3 || got[0].TransactionID != "t8" || got[1].TransactionID != "t9" || got[2].ID != it.MessageID {
		t.Fatalf("g after migration 011: %+v, want t8, t9 and the new message", got)
	}
}

// A message's offset is never handed out again, whatever deleted it (a
// delete of the newest message, a clear's purge of the newest rows of the
// table) and across a restart, which starts the writer's counter from what
// the database records: a lane that passed it would never deliver a new
// message that reused it.
func TestOffsetsNeverGoBackAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	a, b := storetest.Item("q", "p", 0), storetest.Item("q", "p", 1)
	res := storetest.PushItems(t, s, storetest.T0, a, b) // offsets 1 and 2
	storetest.PushAt(t, s, storetest.T0, "c", "p", 3)    // 3 to 5
	for _, q := range []string{"q", "c"} {
		p := storetest.PopParams(q, "g", storetest.T0)
		p.Batch, p.AutoAck = 10, true
		storetest.Pop(t, s, p)
	}
	// The clear's purge frees the newest rows of the table, then the
	// newest message left is deleted on its own.
	if _, err := s.QueueClear(ctx, &store.QueueClearParams{Name: "c", Now: storetest.T0}); err != nil {
		t.Fatal(err)
	}
	for more := true; more; {
		r, err := s.QueueClearPurge(ctx, &store.QueuePurgeParams{Now: storetest.T0})
		if err != nil {
			t.Fatal(err)
		}
		more = r.More
	}
	ok, err := s.MessageDelete(ctx, &store.MessageDeleteParams{Now: storetest.T0,
		MessageRef: store.MessageRef{PartitionID: res[1].PartitionID, TransactionID: b.TransactionID}})
	if err != nil || !ok {
		t.Fatalf("MessageDelete: %v %v", ok, err)
	}
	s.Close()
	s = openTest(t, dir)
	for _, q := range []string{"q", "c"} {
		next := storetest.PushAt(t, s, storetest.T0, q, "p", 1)
		p := storetest.PopParams(q, "g", storetest.T0)
		p.Batch = 10
		if got := storetest.Pop(t, s, p); len(got) != 1 || got[0].ID != next[0].MessageID {
			t.Errorf("%s: g after the restart got %+v, want the new message", q, got)
		}
	}
}
