package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Migration 015 records how payloads are sealed. Rows written before it by
// builds that sealed without binding stay readable: on a queue that
// encrypts, a payload of the sealed shape is marked as an unbound seal;
// elsewhere, and for any other payload, nothing is marked.
func TestMigration015MarksOldSeals(t *testing.T) {
	ctx := context.Background()
	old := schemaAt(t, 14)
	q := old.prefix
	const shape = `{"encrypted":"AAAA","iv":"AAAAAAAAAAAAAAAAAAAAAA==","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`
	old.exec(t,
		`INSERT INTO `+q+`queues (id, uuid, tenant, name, options, created_at)
			VALUES (1, 'q-enc', '`+store.DefaultTenant+`', 'enc', '{"v":1,"encryptionEnabled":true}', 0),
			(2, 'q-plain', '`+store.DefaultTenant+`', 'plain', '{"v":1,"encryptionEnabled":false}', 0)`,
		`INSERT INTO `+q+`partitions (id, uuid, queue_id, name, last_offset, last_message_at, created_at)
			VALUES (1, 'p-enc', 1, 'Default', 2, 1000, 0), (2, 'p-plain', 2, 'Default', 1, 1000, 0)`,
		`INSERT INTO `+q+`messages (partition_id, seq, id, transaction_id, payload, created_at) VALUES
			(1, 1, 'm1', 't1', convert_to('`+shape+`', 'UTF8'), 1000),
			(1, 2, 'm2', 't2', convert_to('{"n":"é"}', 'UTF8'), 1000),
			(2, 1, 'm3', 't3', convert_to('`+shape+`', 'UTF8'), 1000)`,
	)

	s := old.open(t)
	for _, c := range []struct {
		queue string
		want  []store.Seal
	}{{"enc", []store.Seal{store.SealQueen, store.SealNone}}, {"plain", []store.Seal{store.SealNone}}} {
		res, err := s.LanePop(ctx, &store.LanePopParams{Queue: c.queue, ConsumerGroup: store.QueueMode, Batch: 10,
			Partitions: 1, AutoAck: true, Now: time.UnixMilli(2000)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != len(c.want) {
			t.Fatalf("%s: %d messages", c.queue, len(res.Messages))
		}
		for i, m := range res.Messages {
			if m.Sealed != c.want[i] {
				t.Errorf("%s message %d: Sealed %d, want %d", c.queue, i, m.Sealed, c.want[i])
			}
		}
	}
}
