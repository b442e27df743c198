//go:build !race

package transfer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testenv"
	"github.com/queen-go/queen/internal/transfer"
)

// TestCopyMeasure copies 1,000,000 messages (the Queen fixture grown with
// generated rows of about 220 bytes over 1,000 partitions) from Queen's
// database into each engine, then from the embedded engine into
// PostgreSQL, and reports each copy's rate and the peak heap sampled while
// it ran (docs/migration.md). A measurement: run with the latency tests.
func TestCopyMeasure(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "copies of 1,000,000 messages")
	conn, schema := transfer.RestoreQueenFixture(t)
	ctx := context.Background()
	s := pgx.Identifier{schema}.Sanitize()
	const want = 1_000_000
	r := &transfer.QueenReader{DB: conn, Schema: schema}
	before, err := r.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO %[1]s.partitions (queue_id, name)
SELECT q.id, 'bulk-' || g FROM %[1]s.queues q, generate_series(1, 1000) g WHERE q.name = 'orders'`, s),
		fmt.Sprintf(`INSERT INTO %[1]s.messages (transaction_id, partition_id, payload, created_at)
SELECT 'bulk-' || g, p.id, jsonb_build_object('n', g, 'pad', repeat('x', 200)),
	now() - interval '1 hour' + (g / 50) * interval '1 millisecond'
FROM generate_series(1, %[2]d) g
JOIN LATERAL (SELECT id FROM %[1]s.partitions WHERE name = 'bulk-' || (1 + g %% 1000)) p ON true`, s, want-before.Messages),
		"ANALYZE " + s + ".messages",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	measure := func(what string, copy func() (transfer.Report, error)) {
		stop := transfer.PeakHeap()
		start := time.Now()
		rep, err := copy()
		took := time.Since(start)
		peak := stop()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !rep.Match() || rep[2].Target != want {
			t.Fatalf("%s: %+v", what, rep)
		}
		t.Logf("%s: %d messages in %v: %.0f messages/s; peak heap in use %.1f MB", what, want,
			took.Round(time.Millisecond), want/took.Seconds(), float64(peak)/(1<<20))
		// Memory is flat: one batch at a time, whatever the copy's size
		// (about 10 MB measured; a copy that held the messages would need
		// hundreds).
		if peak > 64<<20 {
			t.Errorf("%s: peak heap in use %.1f MB, want at most 64 MB", what, float64(peak)/(1<<20))
		}
	}
	var embedded store.Store
	for _, e := range engines {
		st := e.open(t)
		t.Cleanup(func() { st.Close() })
		measure("Queen → "+e.name, func() (transfer.Report, error) {
			return transfer.CopyQueen(ctx, &transfer.QueenReader{DB: conn, Schema: schema}, st.(store.TransferStore), transfer.Options{})
		})
		if e.name == "sqlite" {
			embedded = st
		}
	}
	pg := engines[1].open(t)
	t.Cleanup(func() { pg.Close() })
	measure("embedded → postgres", func() (transfer.Report, error) {
		return transfer.CopyEngine(ctx, embedded.(store.TransferStore), pg.(store.TransferStore), transfer.Options{})
	})
}
