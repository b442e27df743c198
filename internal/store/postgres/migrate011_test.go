package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// A schema that versions 8 to 10 used: retention deleted a prefix
// (deleted_offset) and messages were deleted on their own, leaving gaps in
// the offsets that the figures counted as messages. Migration 011 finds the
// gaps, and the figures count only what is there.
func TestMigration011KeepsFiguresRight(t *testing.T) {
	ctx := context.Background()
	old := schemaAt(t, 10)
	q := old.prefix
	// Offsets 1 to 10 of partition 1; retention deleted 1 to 4, 7 and 10
	// were deleted on their own. Group g read up to 6.
	old.exec(t,
		`INSERT INTO `+q+`queues (id, uuid, tenant, name, options, created_at)
			VALUES (1, 'q-uuid', '`+store.DefaultTenant+`', 'q', '{"leaseTime":300,"retryLimit":3}', 0)`,
		`INSERT INTO `+q+`partitions (id, uuid, queue_id, name, last_offset, last_message_at, created_at,
			floor_offset, deleted_offset) VALUES (1, 'p-uuid', 1, 'p', 10, 1000, 0, 4, 4)`,
		`INSERT INTO `+q+`messages (partition_id, seq, id, transaction_id, payload, created_at)
			SELECT 1, s, 'm' || s, 't' || s, '{}', 1000 FROM unnest(ARRAY[5, 6, 8, 9]) AS s`,
		`INSERT INTO `+q+`consumer_groups (queue_id, consumer_group, created_at) VALUES (1, 'g', 0)`,
		`INSERT INTO `+q+`lanes (partition_id, consumer_group, queue_id, cursor, ready) VALUES (1, 'g', 1, 6, true)`,
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
}
