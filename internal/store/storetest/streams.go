package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// The stream queries' conformance: registration, the cycle (state ops,
// pushes and ack in one transaction), state reads and their filters, the
// size of the state, and freeing it.

// Register registers a query at T0 and fails the test on an error.
func Register(t testing.TB, s store.Store, p store.StreamQueryRegisterParams) *store.StreamQueryRegisterResult {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = T0
	}
	res, err := s.StreamQueryRegister(context.Background(), &p)
	if err != nil {
		t.Fatalf("StreamQueryRegister(%s): %v", p.Name, err)
	}
	return res
}

// Cycle commits a cycle and fails the test unless it commits.
func Cycle(t testing.TB, s store.Store, p store.StreamCycleParams) *store.StreamCycleResult {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = T0
	}
	if p.ConsumerGroup == "" {
		p.ConsumerGroup = store.QueueMode
	}
	res, err := s.StreamCycle(context.Background(), &p)
	if err != nil {
		t.Fatalf("StreamCycle: %v", err)
	}
	return res
}

// cycleFails runs a cycle and fails the test unless it fails with reason.
func cycleFails(t testing.TB, s store.Store, p store.StreamCycleParams, reason string) {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = T0
	}
	if p.ConsumerGroup == "" {
		p.ConsumerGroup = store.QueueMode
	}
	res, err := s.StreamCycle(context.Background(), &p)
	var ce *store.StreamCycleError
	if !errors.As(err, &ce) {
		t.Fatalf("StreamCycle: got %+v, %v (%T), want a *store.StreamCycleError", res, err, err)
	}
	if ce.Reason != reason {
		t.Fatalf("StreamCycle failed with %q, want %q", ce.Reason, reason)
	}
}

// Upsert is a state op setting key to the JSON value.
func Upsert(key, value string) store.StreamStateOp {
	return store.StreamStateOp{Key: key, Value: []byte(value)}
}

// windowOp is Upsert of a value whose windowEnd is end.
func windowOp(key string, end float64) store.StreamStateOp {
	op := Upsert(key, fmt.Sprintf(`{"windowEnd":%v,"count":1}`, end))
	op.WindowEnd = &end
	return op
}

// stateOf reads the rows of (query, partition) matching p's filters, as
// key=value strings in the order returned.
func stateOf(t testing.TB, s store.Store, p store.StreamStateGetParams) []string {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = T0
	}
	rows, err := s.StreamStateGet(context.Background(), &p)
	if err != nil {
		t.Fatalf("StreamStateGet: %v", err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Key + "=" + string(r.Value)
		if r.UpdatedAt.IsZero() {
			t.Errorf("state row %q: no updatedAt", r.Key)
		}
	}
	return out
}

// wantState fails unless got lists exactly want.
func wantState(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: state %q, want %q", what, got, want)
	}
}

// querySize returns the state size the control plane shows for a query.
func querySize(t testing.TB, s store.Store, tenant, name string) store.StreamStateSize {
	t.Helper()
	res, err := s.StreamQueryList(context.Background(), &store.StreamQueryListParams{Name: name, Tenant: tenant, Now: T0})
	if err != nil {
		t.Fatalf("StreamQueryList(%s): %v", name, err)
	}
	if len(res.Queries) != 1 {
		t.Fatalf("StreamQueryList(%s): %d queries, want 1", name, len(res.Queries))
	}
	return res.Queries[0].State
}

// purgeAll runs StreamPurge in small steps until nothing is left and
// returns the rows it freed.
func purgeAll(t testing.TB, s store.Store) int {
	t.Helper()
	total := 0
	for range 10000 {
		res, err := s.StreamPurge(context.Background(), &store.StreamPurgeParams{Limit: 7, Now: T0})
		if err != nil {
			t.Fatalf("StreamPurge: %v", err)
		}
		if res.Deleted > 7 {
			t.Fatalf("StreamPurge deleted %d rows with a limit of 7", res.Deleted)
		}
		total += res.Deleted
		if !res.More {
			return total
		}
	}
	t.Fatal("StreamPurge never finished")
	return 0
}

// popStream pops up to 100 messages of (queue, partition) for group at now.
func popStream(t testing.TB, s store.Store, queue, part, group string, now time.Time) ([]store.Message, string) {
	t.Helper()
	p := PopParams(queue, group, now)
	p.Partition, p.Batch = part, 100
	return Pop(t, s, p), p.LeaseID
}

func runStreams(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	reg := store.StreamQueryRegisterParams{Name: "counts", SourceQueue: "events", SinkQueue: "totals", ConfigHash: "h1"}

	t.Run("Register", func(t *testing.T) {
		s := setup(t, newStore)
		first := Register(t, s, reg)
		if !first.Fresh || first.Reset || first.Mismatch || first.QueryID == "" {
			t.Fatalf("first registration: %+v, want fresh with an id", first)
		}
		same := reg
		same.SinkQueue = "totals-v2"
		again := Register(t, s, same)
		if again.Fresh || again.Reset || again.Mismatch || again.QueryID != first.QueryID {
			t.Fatalf("same hash again: %+v, want the same query, not fresh", again)
		}
		list, err := s.StreamQueryList(ctx, &store.StreamQueryListParams{Now: T0})
		if err != nil {
			t.Fatal(err)
		}
		if list.Total != 1 || len(list.Queries) != 1 {
			t.Fatalf("StreamQueryList: %+v, want one query", list)
		}
		q := list.Queries[0]
		if q.ID != first.QueryID || q.Name != "counts" || q.SourceQueue != "events" || q.SinkQueue != "totals-v2" ||
			q.ConfigHash != "h1" || q.CreatedAt.IsZero() || q.UpdatedAt.IsZero() {
			t.Fatalf("listed query %+v, want counts events→totals-v2 h1", q)
		}

		Cycle(t, s, store.StreamCycleParams{QueryID: first.QueryID, PartitionID: NewID(),
			StateOps: []store.StreamStateOp{Upsert("k", `1`)}})
		other := reg
		other.ConfigHash = "h2"
		mismatch := Register(t, s, other)
		if !mismatch.Mismatch || mismatch.QueryID != first.QueryID || mismatch.Fresh || mismatch.Reset {
			t.Fatalf("another hash without reset: %+v, want a mismatch naming the query", mismatch)
		}
		if got := querySize(t, s, "", "counts"); got.Rows != 1 {
			t.Fatalf("state after a refused registration: %+v, want its row kept", got)
		}
		list, _ = s.StreamQueryList(ctx, &store.StreamQueryListParams{Name: "counts", Now: T0})
		if list.Queries[0].ConfigHash != "h1" {
			t.Fatalf("a refused registration changed the hash to %q", list.Queries[0].ConfigHash)
		}
		other.Reset = true
		reset := Register(t, s, other)
		if !reset.Reset || reset.Mismatch || reset.Fresh || reset.QueryID != first.QueryID {
			t.Fatalf("another hash with reset: %+v, want a reset of the same query", reset)
		}
		if got := querySize(t, s, "", "counts"); got != (store.StreamStateSize{}) {
			t.Fatalf("state size after a reset: %+v, want none", got)
		}
		if n := purgeAll(t, s); n != 1 {
			t.Fatalf("purge after a reset freed %d rows, want 1", n)
		}
		if _, err := s.StreamQueryList(ctx, &store.StreamQueryListParams{Name: "nope", Now: T0}); !errors.Is(err, store.ErrQueryNotFound) {
			t.Fatalf("StreamQueryList of an unknown name: %v, want ErrQueryNotFound", err)
		}
	})

	t.Run("RegisterPerTenant", func(t *testing.T) {
		s := setup(t, newStore)
		a := Register(t, s, reg)
		other := reg
		other.Tenant, other.ConfigHash = NewID(), "h9"
		b := Register(t, s, other)
		if !b.Fresh || b.Mismatch || b.QueryID == a.QueryID {
			t.Fatalf("the same name in another tenant: %+v, want a query of its own", b)
		}
		pid := NewID()
		cycleFails(t, s, store.StreamCycleParams{QueryID: a.QueryID, Tenant: other.Tenant, PartitionID: pid,
			StateOps: []store.StreamStateOp{Upsert("k", "1")}}, api.TextQueryNotFound)
		Cycle(t, s, store.StreamCycleParams{QueryID: a.QueryID, PartitionID: pid, StateOps: []store.StreamStateOp{Upsert("k", "1")}})
		wantState(t, "another tenant's read", stateOf(t, s, store.StreamStateGetParams{QueryID: a.QueryID,
			PartitionID: pid, Tenant: other.Tenant}))
		if list, _ := s.StreamQueryList(ctx, &store.StreamQueryListParams{Tenant: other.Tenant, Now: T0}); list.Total != 1 {
			t.Fatalf("tenant's listing: %d queries, want 1", list.Total)
		}
	})

	t.Run("StateOpsAndFilters", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		pid, other := NewID(), NewID()
		res := Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: pid, StateOps: []store.StreamStateOp{
			windowOp("w:b", 2000), windowOp("w:a", 1000), windowOp("w:c", 3000), Upsert("x", `"plain"`),
			Upsert("gone", `{}`), {Key: "gone", Delete: true}, Upsert("p%_\\z", `1`), Upsert("p%_\\", `2`),
			Upsert("p%a", `3`), Upsert("tumb:60\u001fk\u001f1", `4`), Upsert("tumb:60\u001fk\u001f2", `5`),
			Upsert("w:b", `{"windowEnd":2500}`), {Key: "never", Delete: true},
		}})
		if res.StateOpsApplied != 13 || res.Ack != nil || len(res.Pushes) != 0 || res.Replay {
			t.Fatalf("cycle: %+v, want 13 state ops applied and nothing else", res)
		}
		// w:b lost its WindowEnd: its last op carried none.
		all := []string{`p%_\=2`, `p%_\z=1`, `p%a=3`, "tumb:60\u001fk\u001f1=4", "tumb:60\u001fk\u001f2=5",
			`w:a={"windowEnd":1000,"count":1}`, `w:b={"windowEnd":2500}`, `w:c={"windowEnd":3000,"count":1}`, `x="plain"`}
		base := store.StreamStateGetParams{QueryID: q, PartitionID: pid}
		wantState(t, "everything, by key", stateOf(t, s, base), all...)
		wantState(t, "another partition", stateOf(t, s, store.StreamStateGetParams{QueryID: q, PartitionID: other}))
		wantState(t, "an unknown query", stateOf(t, s, store.StreamStateGetParams{QueryID: NewID(), PartitionID: pid}))

		p := base
		p.Keys = []string{"x", "w:a", "missing", "x"}
		wantState(t, "keys", stateOf(t, s, p), `w:a={"windowEnd":1000,"count":1}`, `x="plain"`)
		p = base
		p.KeyPrefix = `p%_\`
		wantState(t, "a prefix with LIKE's wildcards", stateOf(t, s, p), `p%_\=2`, `p%_\z=1`)
		p.KeyPrefix = "tumb:60\u001f"
		wantState(t, "a prefix with a control character", stateOf(t, s, p), "tumb:60\u001fk\u001f1=4", "tumb:60\u001fk\u001f2=5")
		p.KeyPrefix = "w:"
		ripe := 2000.0
		p.RipeAtOrBefore = &ripe
		wantState(t, "prefix and ripe", stateOf(t, s, p), `w:a={"windowEnd":1000,"count":1}`)
		p.KeyPrefix, p.Keys = "", []string{"w:c", "x"}
		ripe = 3000
		wantState(t, "keys and ripe", stateOf(t, s, p), `w:c={"windowEnd":3000,"count":1}`)
		p.Keys = nil
		ripe = 999
		wantState(t, "nothing ripe", stateOf(t, s, p))

		size := querySize(t, s, "", "counts")
		var bytes int64
		for _, kv := range all {
			bytes += int64(len(kv) - 1) // key and value, without the "="
		}
		if size != (store.StreamStateSize{Partitions: 1, Rows: int64(len(all)), Bytes: bytes}) {
			t.Fatalf("state size %+v, want 1 partition, %d rows, %d bytes", size, len(all), bytes)
		}
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: pid, StateOps: []store.StreamStateOp{
			{Key: "x", Delete: true}, Upsert("w:a", `0`)}})
		bytes -= int64(len(`x"plain"`) + len(`{"windowEnd":1000,"count":1}`) - len(`0`))
		if size := querySize(t, s, "", "counts"); size != (store.StreamStateSize{Partitions: 1, Rows: int64(len(all) - 1), Bytes: bytes}) {
			t.Fatalf("state size after a delete and an overwrite %+v, want %d rows, %d bytes", size, len(all)-1, bytes)
		}
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: other, StateOps: []store.StreamStateOp{Upsert("o", "1")}})
		if size := querySize(t, s, "", "counts"); size.Partitions != 2 || size.Rows != int64(len(all)) {
			t.Fatalf("state size over two partitions %+v, want 2 partitions, %d rows", size, len(all))
		}
	})

	t.Run("UnknownQuery", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "events", "p", 1)
		m, lease := popStream(t, s, "events", "p", store.QueueMode, At(time.Second))
		cycleFails(t, s, store.StreamCycleParams{QueryID: NewID(), PartitionID: m[0].PartitionID,
			StateOps: []store.StreamStateOp{Upsert("k", "1")}, Pushes: []store.PushItem{Item("totals", "p", 1)},
			Ack: &store.StreamAck{TransactionID: m[0].TransactionID, LeaseID: lease, Count: 1}}, api.TextQueryNotFound)
		wantEmpty(t, "the sink after a cycle of an unknown query", Pop(t, s, PopParams("totals", "reader", At(time.Second))))
	})

	t.Run("PushesAndAck", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		items := Push(t, s, "events", "p", 3)
		m, lease := popStream(t, s, "events", "p", "streams.counts", At(time.Second))
		out1, out2 := Item("totals", "k1", 1), Item("totals", "k2", 2)
		res := Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID, ConsumerGroup: "streams.counts",
			Now: At(2 * time.Second), StateOps: []store.StreamStateOp{Upsert("k", "3")}, Pushes: []store.PushItem{out1, out2},
			Ack:          &store.StreamAck{TransactionID: m[2].TransactionID, LeaseID: lease, Status: store.AckCompleted, Count: 3},
			ReleaseLease: true})
		if res.Queue != "events" || res.StateOpsApplied != 1 || res.Replay {
			t.Fatalf("cycle: %+v, want queue events and one state op", res)
		}
		if res.Ack == nil || *res.Ack != (store.StreamAckResult{Count: 3, LeaseReleased: true}) {
			t.Fatalf("ack result %+v, want count 3, lease released", res.Ack)
		}
		if len(res.Pushes) != 2 {
			t.Fatalf("push results %+v, want 2", res.Pushes)
		}
		for i, it := range []store.PushItem{out1, out2} {
			if r := res.Pushes[i]; r.Status != store.PushQueued || r.MessageID != it.MessageID || r.PartitionID == "" {
				t.Fatalf("push result %d: %+v, want queued %s", i, r, it.MessageID)
			}
		}
		sink := PopParams("totals", "reader", At(3*time.Second))
		sink.Batch, sink.Partitions = 10, 10
		if got := Pop(t, s, sink); len(got) != 2 {
			t.Fatalf("sink holds %d messages, want the 2 pushed", len(got))
		}
		more := Push(t, s, "events", "p", 1)
		m2, _ := popStream(t, s, "events", "p", "streams.counts", At(4*time.Second))
		wantIDs(t, "the source after the cycle's ack", m2, more...)
		_ = items

		// A push of a transactionId already stored is a duplicate, not a failure.
		dup := Item("totals", "k1", 9)
		dup.TransactionID = out1.TransactionID
		res = Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID, Now: At(5 * time.Second),
			Pushes: []store.PushItem{dup}})
		if len(res.Pushes) != 1 || res.Pushes[0].Status != store.PushDuplicate || res.Pushes[0].MessageID != out1.MessageID {
			t.Fatalf("duplicate push in a cycle: %+v, want duplicate of %s", res.Pushes, out1.MessageID)
		}
	})

	t.Run("PartialAck", func(t *testing.T) {
		const g = "streams.gate"
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		Push(t, s, "events", "p", 4)
		m, lease := popStream(t, s, "events", "p", g, At(time.Second))
		res := Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID, ConsumerGroup: g,
			Now: At(2 * time.Second), Ack: &store.StreamAck{TransactionID: m[1].TransactionID, LeaseID: lease, Count: 2}})
		if *res.Ack != (store.StreamAckResult{Count: 2}) {
			t.Fatalf("partial ack keeping the lease: %+v, want count 2, lease kept", *res.Ack)
		}
		wantEmpty(t, "pop while the partial ack keeps the lease", Pop(t, s, PopParams("events", g, At(3*time.Second))))
		res = Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID, ConsumerGroup: g,
			Now: At(4 * time.Second), Ack: &store.StreamAck{TransactionID: m[2].TransactionID, LeaseID: lease, Count: 1},
			ReleaseLease: true})
		if *res.Ack != (store.StreamAckResult{Count: 1, LeaseReleased: true}) {
			t.Fatalf("partial ack releasing the lease: %+v, want count 1, lease released", *res.Ack)
		}
		rest, _ := popStream(t, s, "events", "p", g, At(5*time.Second))
		if len(rest) != 1 || rest[0].ID != m[3].ID {
			t.Fatalf("pop after the release: %v, want the last message %s", ids(rest), m[3].ID)
		}
	})

	t.Run("FailedAckDeadLetters", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		Push(t, s, "events", "p", 3)
		for i, status := range []store.AckStatus{store.AckDLQ, store.AckDLQ} {
			m, lease := popStream(t, s, "events", "p", store.QueueMode, At(time.Duration(2*i+1)*time.Second))
			res := Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID,
				Now: At(time.Duration(2*i+2) * time.Second),
				Ack: &store.StreamAck{TransactionID: m[0].TransactionID, LeaseID: lease, Status: status, Error: "bad input"}})
			if *res.Ack != (store.StreamAckResult{DLQ: true, LeaseReleased: true}) {
				t.Fatalf("dlq ack %d: %+v, want dlq, lease released, count 0", i, *res.Ack)
			}
		}
		dead := dlqList(t, s, &store.DLQListParams{})
		if len(dead) != 2 || dead[0].Error != "bad input" || dead[0].Queue != "events" {
			t.Fatalf("dead letters %+v, want the 2 failed messages", dead)
		}
		rest, _ := popStream(t, s, "events", "p", store.QueueMode, At(10*time.Second))
		if len(rest) != 1 {
			t.Fatalf("pop after two dead-lettered messages: %d messages, want the third", len(rest))
		}
	})

	t.Run("FailureWritesNothing", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		items := Push(t, s, "events", "p", 2)
		m, lease := popStream(t, s, "events", "p", store.QueueMode, At(time.Second))
		pid := m[0].PartitionID
		// Another group's lane is not leased: this flush commits.
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: pid, ConsumerGroup: "streams.other",
			StateOps: []store.StreamStateOp{Upsert("kept", "1")}})
		before := querySize(t, s, "", "counts")
		half := store.StreamCycleParams{QueryID: q, PartitionID: pid, Now: At(2 * time.Second),
			StateOps: []store.StreamStateOp{Upsert("new", "1"), {Key: "kept", Delete: true}},
			Pushes:   []store.PushItem{Item("totals", "p", 1), Item("events", "p", 9)}}
		// The ack comes last: the state ops and pushes before it are written
		// in the transaction when it fails.
		half.Ack = &store.StreamAck{TransactionID: m[1].TransactionID, LeaseID: NewID(), Count: 2}
		cycleFails(t, s, half, api.ReasonCycleLease)
		half.Ack = &store.StreamAck{TransactionID: "no-such-message", LeaseID: lease}
		cycleFails(t, s, half, api.TextMessageNotFound)
		half.Ack = &store.StreamAck{TransactionID: m[0].TransactionID, LeaseID: lease, Status: store.AckCompleted}
		half.Now = At(time.Hour) // the lease has expired
		cycleFails(t, s, half, api.ReasonCycleLease)

		wantState(t, "state after failed cycles", stateOf(t, s, store.StreamStateGetParams{QueryID: q, PartitionID: pid}), "kept=1")
		if after := querySize(t, s, "", "counts"); after != before {
			t.Fatalf("state size after failed cycles %+v, want %+v", after, before)
		}
		wantEmpty(t, "the sink after failed cycles", Pop(t, s, PopParams("totals", "reader", At(time.Hour))))
		again, _ := popStream(t, s, "events", "p", store.QueueMode, At(time.Hour))
		wantIDs(t, "the source after failed cycles (nothing acked, nothing pushed)", again, items...)
	})

	t.Run("PushRefusedFailsTheCycle", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		Configure(t, s, "totals", Options(func(o *store.QueueOptions) { o.MaxSize = 1 }))
		PushItems(t, s, T0, Item("totals", "p", 0))
		pid := NewID()
		over := Item("totals", "p", 1)
		cycleFails(t, s, store.StreamCycleParams{QueryID: q, PartitionID: pid,
			StateOps: []store.StreamStateOp{Upsert("k", "1")}, Pushes: []store.PushItem{over}},
			fmt.Sprintf("push of transactionId %s to queue totals partition p failed: %s", over.TransactionID,
				store.QueueFullError(1)))
		wantState(t, "state after a push the queue refused", stateOf(t, s, store.StreamStateGetParams{QueryID: q, PartitionID: pid}))
	})

	t.Run("Replay", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		Push(t, s, "events", "p", 2)
		m, lease := popStream(t, s, "events", "p", store.QueueMode, At(time.Second))
		cycle := store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID, Now: At(2 * time.Second),
			StateOps: []store.StreamStateOp{Upsert("count", "2")}, Pushes: []store.PushItem{Item("totals", "p", 2)},
			Ack: &store.StreamAck{TransactionID: m[1].TransactionID, LeaseID: lease, Count: 2}, ReleaseLease: true}
		Cycle(t, s, cycle)
		// The answer was lost; the client sends the same cycle again (with
		// the lease the first one released).
		cycle.Pushes = []store.PushItem{Item("totals", "p", 2)}
		cycle.StateOps = []store.StreamStateOp{Upsert("count", "4")}
		cycle.Now = At(3 * time.Second)
		res := Cycle(t, s, cycle)
		if !res.Replay || res.StateOpsApplied != 0 || len(res.Pushes) != 0 || res.Queue != "events" ||
			res.Ack == nil || *res.Ack != (store.StreamAckResult{}) {
			t.Fatalf("replayed cycle: %+v, want a replay that wrote nothing", res)
		}
		wantState(t, "state after a replay", stateOf(t, s, store.StreamStateGetParams{QueryID: q, PartitionID: m[0].PartitionID}), "count=2")
		sink := PopParams("totals", "reader", At(4*time.Second))
		sink.Batch = 10
		if got := Pop(t, s, sink); len(got) != 1 {
			t.Fatalf("sink after a replay holds %d messages, want 1", len(got))
		}
		// An older cycle, below the cursor, fails.
		cycle.Ack.TransactionID = m[0].TransactionID
		cycleFails(t, s, cycle, api.ReasonAlreadyCommitted)
	})

	t.Run("DeleteQuery", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		pid := NewID()
		var ops []store.StreamStateOp
		for i := range 20 {
			ops = append(ops, Upsert(fmt.Sprintf("k%02d", i), fmt.Sprint(i)))
		}
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: pid, StateOps: ops})
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: NewID(), StateOps: ops[:5]})
		existed, err := s.StreamQueryDelete(ctx, &store.StreamQueryDeleteParams{Name: "counts", Now: T0})
		if err != nil || !existed {
			t.Fatalf("StreamQueryDelete: %v, %v; want true", existed, err)
		}
		if existed, err := s.StreamQueryDelete(ctx, &store.StreamQueryDeleteParams{Name: "counts", Now: T0}); err != nil || existed {
			t.Fatalf("second StreamQueryDelete: %v, %v; want false", existed, err)
		}
		wantState(t, "state of a deleted query", stateOf(t, s, store.StreamStateGetParams{QueryID: q, PartitionID: pid}))
		cycleFails(t, s, store.StreamCycleParams{QueryID: q, PartitionID: pid, StateOps: ops[:1]}, api.TextQueryNotFound)
		again := Register(t, s, reg)
		if !again.Fresh || again.QueryID == q {
			t.Fatalf("registering a deleted query's name: %+v, want a fresh query", again)
		}
		wantState(t, "state of the new query of that name", stateOf(t, s,
			store.StreamStateGetParams{QueryID: again.QueryID, PartitionID: pid}))
		if n := purgeAll(t, s); n != 25 {
			t.Fatalf("purge freed %d rows, want 25", n)
		}
		if n := purgeAll(t, s); n != 0 {
			t.Fatalf("second purge freed %d rows, want 0", n)
		}
	})

	t.Run("DeleteSourceQueue", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		Push(t, s, "events", "p", 1)
		Push(t, s, "kept", "p", 1)
		m, _ := popStream(t, s, "events", "p", store.QueueMode, At(time.Second))
		k, _ := popStream(t, s, "kept", "p", store.QueueMode, At(time.Second))
		// The pops only name the partitions; the cycles are another group's,
		// whose lanes no lease holds.
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID, ConsumerGroup: "streams.other",
			StateOps: []store.StreamStateOp{Upsert("a", "1"), Upsert("b", "2"), Upsert("c", "3")}})
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: k[0].PartitionID, ConsumerGroup: "streams.other",
			StateOps: []store.StreamStateOp{Upsert("a", "1")}})
		if _, err := s.QueueDelete(ctx, &store.QueueDeleteParams{Name: "events", Now: At(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if size := querySize(t, s, "", "counts"); size != (store.StreamStateSize{Partitions: 1, Rows: 1, Bytes: 2}) {
			t.Fatalf("state size after the source queue's deletion %+v, want only the other queue's row", size)
		}
		if n := purgeAll(t, s); n != 3 {
			t.Fatalf("purge freed %d rows, want the deleted partition's 3", n)
		}
		wantState(t, "the other queue's partition", stateOf(t, s, store.StreamStateGetParams{QueryID: q,
			PartitionID: k[0].PartitionID}), "a=1")
	})

	t.Run("IdlePartitionRemoved", func(t *testing.T) {
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		Configure(t, s, "events", retention(1))
		PushAt(t, s, At(0), "events", "idle", 1)
		m, _ := popStream(t, s, "events", "idle", "probe", At(time.Second))
		Cycle(t, s, store.StreamCycleParams{QueryID: q, PartitionID: m[0].PartitionID,
			StateOps: []store.StreamStateOp{Upsert("a", "1"), Upsert("b", "2")}})
		drain(t, s, "events", store.QueueMode, At(time.Second))
		Sweep(t, s, store.RetentionExpired, At(time.Minute), 100)
		now := At(10 * 24 * time.Hour)
		r, err := s.RetentionPartitions(ctx, &store.RetentionPartitionsParams{IdleSince: now.Add(-5 * 24 * time.Hour),
			Limit: 100, Now: now})
		if err != nil || r.Removed == 0 {
			t.Fatalf("RetentionPartitions: %+v, %v; want the idle partitions removed", r, err)
		}
		if size := querySize(t, s, "", "counts"); size != (store.StreamStateSize{}) {
			t.Fatalf("state size after its partition was removed as idle: %+v, want none", size)
		}
		if n := purgeAll(t, s); n != 2 {
			t.Fatalf("purge freed %d rows, want the removed partition's 2", n)
		}
	})

	t.Run("ConcurrentCyclesSerialise", func(t *testing.T) {
		const (
			workers = 8
			rounds  = 12
			keys    = 40
		)
		s := setup(t, newStore)
		q := Register(t, s, reg).QueryID
		pid := NewID()
		var wg sync.WaitGroup
		errs := make(chan error, workers*rounds)
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					// A cycle upserts every key, in its own order, or deletes
					// every key, and sets its worker's own key. Interleaved,
					// two cycles would each count the same keys as created
					// (or as deleted), leave keys with several cycles'
					// values, or deadlock.
					// A deleting cycle writes each key before deleting it:
					// it pushes and has no ack, and such a cycle (a flush)
					// may not delete a key that is gone.
					order := make([]string, keys)
					for i := range keys {
						order[i] = fmt.Sprintf("k%02d", (i+7*w)%keys)
					}
					if w%2 == 1 {
						slices.Reverse(order)
					}
					ops := make([]store.StreamStateOp, 0, 2*keys+1)
					for _, k := range order {
						v := fmt.Sprintf(`{"w":%d,"r":%d}`, w, r)
						if (w+r)%2 == 0 {
							ops = append(ops, Upsert(k, v))
						} else {
							ops = append(ops, Upsert(k, v), store.StreamStateOp{Key: k, Delete: true})
						}
					}
					ops = append(ops, Upsert(fmt.Sprintf("own%d", w), fmt.Sprint(r)))
					_, err := s.StreamCycle(ctx, &store.StreamCycleParams{QueryID: q, PartitionID: pid, Now: T0,
						ConsumerGroup: store.QueueMode, StateOps: ops, Pushes: []store.PushItem{Item("totals", "p", r)}})
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent cycle: %v", err)
			}
		}
		rows, err := s.StreamStateGet(ctx, &store.StreamStateGetParams{QueryID: q, PartitionID: pid, Now: T0})
		if err != nil {
			t.Fatal(err)
		}
		var bytes int64
		var ks []store.StreamStateRow
		for _, r := range rows {
			bytes += int64(len(r.Key) + len(r.Value))
			if r.Key[0] == 'k' {
				ks = append(ks, r)
			}
		}
		if len(ks) != 0 && len(ks) != keys {
			t.Fatalf("%d keys, want none or all %d: the cycles interleaved", len(ks), keys)
		}
		for _, r := range ks {
			if string(r.Value) != string(ks[0].Value) {
				t.Fatalf("key %s holds %s, key %s %s: the cycles interleaved", r.Key, r.Value, ks[0].Key, ks[0].Value)
			}
		}
		if size := querySize(t, s, "", "counts"); size != (store.StreamStateSize{Partitions: 1, Rows: int64(len(rows)), Bytes: bytes}) {
			t.Fatalf("state size %+v, the state holds %d rows of %d bytes: the cycles interleaved", size, len(rows), bytes)
		}
		sink := PopParams("totals", "reader", At(time.Second))
		sink.Batch = 1000
		if got := Pop(t, s, sink); len(got) != workers*rounds {
			t.Fatalf("sink holds %d messages, want one per cycle (%d)", len(got), workers*rounds)
		}
	})
}
