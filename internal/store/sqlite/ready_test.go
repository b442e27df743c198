package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/testenv"
)

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// popAll pops once and acks everything it got; it returns the transaction
// ids, sorted.
func popAck(t *testing.T, s *Store, p *store.LanePopParams) []string {
	t.Helper()
	ctx := context.Background()
	res, err := s.LanePop(ctx, p)
	if err != nil {
		t.Fatalf("Pop(%s): %v", p.ConsumerGroup, err)
	}
	var ids []string
	var acks []store.Ack
	for _, m := range res.Messages {
		ids = append(ids, m.TransactionID)
		acks = append(acks, store.Ack{ConsumerGroup: p.ConsumerGroup, LeaseID: p.LeaseID,
			PartitionID: m.PartitionID, TransactionID: m.TransactionID})
	}
	if len(acks) > 0 {
		out, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: acks, Now: p.Now})
		if err != nil {
			t.Fatalf("AckMany: %v", err)
		}
		for i, r := range out {
			if !r.Success {
				t.Fatalf("ack %s: %+v", acks[i].TransactionID, r)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

func popParams(queue, group string, now time.Time) *store.LanePopParams {
	return &store.LanePopParams{Queue: queue, ConsumerGroup: group, Batch: 100, Partitions: 100,
		LeaseID: uuid.NewString(), Now: now}
}

// TestPopCostWithManyPartitions: a pop's cost must not grow with the number
// of partitions of the queue or with its acked history.
func TestPopCostWithManyPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10,000 partitions")
	}
	const partitions, perPartition = 10_000, 3
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	payload := []byte(`{"n":1}`)
	var items []store.PushItem
	flush := func() {
		if _, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: time.Now()}); err != nil {
			t.Fatalf("PushMany: %v", err)
		}
		items = items[:0]
	}
	for i := range partitions {
		for range perPartition {
			id := uuid.Must(uuid.NewV7()).String()
			items = append(items, store.PushItem{Queue: "wide", Partition: fmt.Sprintf("p%05d", i),
				MessageID: id, TransactionID: id, Payload: payload})
		}
		if len(items) >= 1500 {
			flush()
		}
	}
	flush()

	// Drain part of the queue in two modes, one lane per pop as the
	// `partitions=1` bench does, timing the pops only.
	var lat []time.Duration
	for _, group := range []string{store.QueueMode, "g"} {
		for range 300 {
			p := popParams("wide", group, time.Now())
			p.Partitions = 1
			start := time.Now()
			res, err := s.LanePop(ctx, p)
			lat = append(lat, time.Since(start))
			if err != nil {
				t.Fatalf("Pop: %v", err)
			}
			if len(res.Messages) != perPartition {
				t.Fatalf("pop got %d messages, want %d (one lane)", len(res.Messages), perPartition)
			}
			var acks []store.Ack
			for _, m := range res.Messages {
				acks = append(acks, store.Ack{ConsumerGroup: group, LeaseID: p.LeaseID,
					PartitionID: m.PartitionID, TransactionID: m.TransactionID})
			}
			if _, err := s.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: acks, Now: time.Now()}); err != nil {
				t.Fatalf("AckMany: %v", err)
			}
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("pop over %d partitions: p50 %v, p99 %v (%d pops)", partitions, p50, p99, len(lat))
	if testenv.LatencyRun() && p50 > 5*time.Millisecond {
		t.Errorf("pop p50 %v over %d partitions, want < 5ms", p50, partitions)
	}
}

// TestMigrateReadyLanes: a database written by migrations 001–002 (the
// schema without ready lanes) upgrades through 003: lanes are backfilled for
// every joined group, queue mode included, seeded like the old driver did,
// and pops and acks work afterwards.
func TestMigrateReadyLanes(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "queen.db")+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, db, 2, nil); err != nil {
		t.Fatalf("migrate to 002: %v", err)
	}
	const t0 = int64(1_700_000_000_000)
	sec := func(n int64) int64 { return t0 + n*1000 }
	opts, _ := json.Marshal(store.DefaultQueueOptions())
	stmts := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO queues (id, uuid, name, options, created_at) VALUES (1, 'uq', 'q', ?, ?)`,
			[]any{string(opts), t0}},
		// Partitions a, b, c exist when group g joins at t0+40s; d comes later.
		{`INSERT INTO partitions (id, uuid, queue_id, name, last_offset, last_message_at, created_at) VALUES
			(1, 'ua', 1, 'a', 3, ?, ?), (2, 'ub', 1, 'b', 5, ?, ?), (3, 'uc', 1, 'c', 7, ?, ?),
			(4, 'ud', 1, 'd', 8, ?, ?)`,
			[]any{sec(20), t0, sec(5), t0, sec(30), t0, sec(60), sec(50)}},
		{`INSERT INTO messages (seq, partition_id, id, transaction_id, payload, created_at) VALUES
			(1, 1, 'm1', 't1', '1', ?), (2, 1, 'm2', 't2', '2', ?), (3, 1, 'm3', 't3', '3', ?),
			(4, 2, 'm4', 't4', '4', ?), (5, 2, 'm5', 't5', '5', ?),
			(6, 3, 'm6', 't6', '6', ?), (7, 3, 'm7', 't7', '7', ?),
			(8, 4, 'm8', 't8', '8', ?)`,
			[]any{t0, sec(10), sec(20), sec(5), sec(5), sec(30), sec(30), sec(60)}},
		// Queue mode: lane a committed to 1 under an expired lease over 2,
		// lane b fully read, no lanes on c and d (never read).
		{`INSERT INTO lanes (partition_id, consumer_group, cursor, lease_id, lease_expires_at, batch_end,
			last_claimed_at) VALUES (1, '__QUEUE_MODE__', 1, 'old-lease', ?, 2, ?), (2, '__QUEUE_MODE__', 5, NULL, 0, 0, ?)`,
			[]any{sec(25), sec(20), sec(10)}},
		// Group g subscribed from t0+15s: read a to its end; no lanes on b
		// (seeded past its messages), c (messages after the subscription)
		// or d (created after the join).
		{`INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at) VALUES (1, 'g', ?, ?)`,
			[]any{sec(15), sec(40)}},
		{`INSERT INTO lanes (partition_id, consumer_group, cursor, last_claimed_at) VALUES (1, 'g', 3, ?)`,
			[]any{sec(45)}},
		// Group h acked message 1 without ever popping: a lane, no join.
		{`INSERT INTO lanes (partition_id, consumer_group, cursor) VALUES (1, 'h', 1)`, nil},
	}
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, st.q, st.args...); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openTest(t, dir)
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := s.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM schema_migrations WHERE version = 3`); n != 1 {
		t.Fatalf("migration 003 not recorded")
	}
	type laneRow struct {
		part, group  string
		cursor       int64
		ready, queue int64
	}
	rows, err := s.db.QueryContext(ctx, `SELECT p.name, l.consumer_group, l.cursor, l.ready, l.queue_id
		FROM lanes l JOIN partitions p ON p.id = l.partition_id ORDER BY l.consumer_group, p.name`)
	if err != nil {
		t.Fatal(err)
	}
	var got []laneRow
	for rows.Next() {
		var r laneRow
		if err := rows.Scan(&r.part, &r.group, &r.cursor, &r.ready, &r.queue); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	rows.Close()
	want := []laneRow{
		{"a", "__QUEUE_MODE__", 1, 1, 1}, {"b", "__QUEUE_MODE__", 5, 0, 1},
		{"c", "__QUEUE_MODE__", 0, 1, 1}, {"d", "__QUEUE_MODE__", 0, 1, 1},
		{"a", "g", 3, 0, 1}, {"b", "g", 5, 0, 1}, {"c", "g", 0, 1, 1}, {"d", "g", 0, 1, 1},
		{"a", "h", 1, 1, 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lanes after migration:\n got %v\nwant %v", got, want)
	}

	now := time.Now()
	if ids := popAck(t, s, popParams("q", store.QueueMode, now)); fmt.Sprint(ids) != "[t2 t3 t6 t7 t8]" {
		t.Errorf("queue mode after upgrade got %v, want [t2 t3 t6 t7 t8]", ids)
	}
	if n := count(`SELECT head_attempts FROM lanes WHERE partition_id = 1 AND consumer_group = '__QUEUE_MODE__'`); n != 0 {
		t.Errorf("head attempts after the acked redelivery = %d, want 0", n)
	}
	if ids := popAck(t, s, popParams("q", "g", now)); fmt.Sprint(ids) != "[t6 t7 t8]" {
		t.Errorf("group g after upgrade got %v, want [t6 t7 t8]", ids)
	}
	// h joins now, from the beginning: its lane on a keeps its cursor.
	if ids := popAck(t, s, popParams("q", "h", now)); fmt.Sprint(ids) != "[t2 t3 t4 t5 t6 t7 t8]" {
		t.Errorf("group h after upgrade got %v, want [t2 t3 t4 t5 t6 t7 t8]", ids)
	}
	for _, g := range []string{store.QueueMode, "g", "h"} {
		if ids := popAck(t, s, popParams("q", g, now)); len(ids) != 0 {
			t.Errorf("%s: second pop got %v, want nothing", g, ids)
		}
	}
	if n := count(`SELECT count(*) FROM lanes WHERE ready`); n != 0 {
		t.Errorf("%d lanes still ready after everything was acked", n)
	}

	// New messages on an old partition and on a new one reach every group.
	_, err = s.MessagePushMany(ctx, &store.MessagePushManyParams{Now: now, Items: []store.PushItem{
		{Queue: "q", Partition: "b", MessageID: "n1", TransactionID: "n1", Payload: []byte("1")},
		{Queue: "q", Partition: "e", MessageID: "n2", TransactionID: "n2", Payload: []byte("2")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{store.QueueMode, "g", "h"} {
		if ids := popAck(t, s, popParams("q", g, now)); fmt.Sprint(ids) != "[n1 n2]" {
			t.Errorf("%s: pop after new pushes got %v, want [n1 n2]", g, ids)
		}
	}

	if ok, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "q", Now: time.Now()}); err != nil || !ok {
		t.Fatalf("QueueDelete: %v %v", ok, err)
	}
	if n := count(`SELECT count(*) FROM consumer_groups`); n != 0 {
		t.Errorf("%d group rows left after QueueDelete", n)
	}
	for more := true; more; {
		res, err := s.QueuePurge(ctx, &store.QueuePurgeParams{Limit: 3, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		more = res.More
	}
	for _, table := range []string{"lanes", "messages", "partitions", "dead_letters", "purge_partitions"} {
		if n := count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("%d %s rows left after QueueDelete and QueuePurge", n, table)
		}
	}
}

// TestJoinSeedsOnlyExistingLanes: a group subscribing from a time reads the
// partitions that existed when it joined from that time, and partitions
// created later from their beginning.
func TestJoinSeedsOnlyExistingLanes(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	push := func(at time.Time, part, id string) {
		t.Helper()
		_, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Now: at, Items: []store.PushItem{
			{Queue: "q", Partition: part, MessageID: id, TransactionID: id, Payload: []byte("1")}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	push(t0, "old", "o1")
	push(t0.Add(2*time.Second), "old", "o2")
	p := popParams("q", "g", t0.Add(3*time.Second))
	p.Subscription = store.Subscription{Mode: store.SubscribeFrom, From: t0.Add(time.Second)}
	if ids := popAck(t, s, p); fmt.Sprint(ids) != "[o2]" {
		t.Errorf("first pop got %v, want [o2]", ids)
	}
	// A partition created after the join, with a message older than the
	// subscription time (clock skew between pushes): read from the start.
	push(t0, "new", "n1")
	if ids := popAck(t, s, popParams("q", "g", t0.Add(4*time.Second))); fmt.Sprint(ids) != "[n1]" {
		t.Errorf("pop of a partition created after the join got %v, want [n1]", ids)
	}
}

// A write that panics on the writer goroutine fails alone, its writes
// undone, and the writer goes on with the next one.
func TestWriteThatPanicsFailsAloneAndTheWriterGoesOn(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	if err := s.run(ctx, durable, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE panic_probe (n INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO panic_probe VALUES (1)`); err != nil {
			return err
		}
		var none []int
		none[len(none)]++ // a real runtime panic: index out of range
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("a write that panics: %v, want its error", err)
	}
	if err := s.run(ctx, durable, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO panic_probe VALUES (2)`)
		return err
	}); err != nil {
		t.Fatalf("the write after a panic: %v", err)
	}
	var got []int
	rows, err := s.db.Query(`SELECT n FROM panic_probe ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if !slices.Equal(got, []int{2}) {
		t.Fatalf("rows %v, want [2]: the panicked write undone, the next one kept", got)
	}
}
