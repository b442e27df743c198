// Package storetest is the conformance suite every storage driver must pass.
// A driver's test calls Run with a constructor of fresh, empty stores:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { ... })
//	}
//
// The suite talks to store.Store only (no broker, no HTTP) and controls the
// clock through the Now field every params struct carries, so it never
// sleeps. Every subtest runs in parallel on its own store; the constructor
// must register the store's Close with t.Cleanup.
//
// The suite follows docs/decisions.md: ack is an offset commit, the lowest
// negative ack of a call clamps the cursor, a lease expiry is a failed attempt,
// and retries exhausted always dead-letter.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// T0 is the suite's epoch: every Now is T0 plus some offset.
var T0 = time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)

// At returns T0 plus d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// Run runs the whole suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("Store", func(t *testing.T) { runStore(t, newStore) })
	t.Run("Push", func(t *testing.T) { runPush(t, newStore) })
	t.Run("Pop", func(t *testing.T) { runPop(t, newStore) })
	t.Run("NextReady", func(t *testing.T) { runNextReady(t, newStore) }) // nextready.go
	t.Run("Ack", func(t *testing.T) { runAck(t, newStore) })
	t.Run("Lease", func(t *testing.T) { runLease(t, newStore) })
	t.Run("Tx", func(t *testing.T) { runTx(t, newStore) })
	t.Run("Queue", func(t *testing.T) { runQueue(t, newStore) })
	t.Run("QueueReuse", func(t *testing.T) { runQueueReuse(t, newStore) })
	t.Run("Settings", func(t *testing.T) { runSettings(t, newStore) })
	t.Run("Tenancy", func(t *testing.T) { runTenancy(t, newStore) })
	t.Run("Inspect", func(t *testing.T) { runInspect(t, newStore) })
	t.Run("Groups", func(t *testing.T) { runGroups(t, newStore) })
	t.Run("Messages", func(t *testing.T) { runMessages(t, newStore) })
	t.Run("DLQ", func(t *testing.T) { runDLQ(t, newStore) })
	t.Run("Traces", func(t *testing.T) { runTraces(t, newStore) })
	t.Run("Stats", func(t *testing.T) { runStats(t, newStore) })
	t.Run("Streams", func(t *testing.T) { runStreams(t, newStore) })
	t.Run("Concurrency", func(t *testing.T) { runConcurrency(t, newStore) })
	t.Run("Options", func(t *testing.T) { runOptions(t, newStore) })     // options.go
	t.Run("Retention", func(t *testing.T) { runRetention(t, newStore) }) // retention.go
	t.Run("Figures", func(t *testing.T) { runFigures(t, newStore) })     // figures.go
	t.Run("KV", func(t *testing.T) { runKV(t, newStore) })               // kv.go
	t.Run("Timers", func(t *testing.T) { runTimers(t, newStore) })       // timers.go
	t.Run("Ephemeral", func(t *testing.T) { runEphemeral(t, newStore) }) // ephemeral.go
	t.Run("Webhooks", func(t *testing.T) { runWebhooks(t, newStore) })   // webhooks.go
	t.Run("Transfer", func(t *testing.T) { runTransfer(t, newStore) })   // transfer.go
	t.Run("Sealed", func(t *testing.T) { runSealed(t, newStore) })       // sealed.go
}

// setup marks t parallel and returns a fresh store.
func setup(t *testing.T, newStore func(t *testing.T) store.Store) store.Store {
	t.Helper()
	t.Parallel()
	s := newStore(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	return s
}

// NewID returns a fresh UUIDv7, as the broker mints for messages and leases.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Item builds a push item with fresh message and transaction ids and the
// payload {"n":n}.
func Item(queue, partition string, n int) store.PushItem {
	return store.PushItem{
		MessageID:     NewID(),
		TransactionID: NewID(),
		Queue:         queue,
		Partition:     partition,
		Payload:       []byte(fmt.Sprintf(`{"n":%d}`, n)),
	}
}

// Push stores n messages (payloads {"n":0} … {"n":n-1}) in one partition at
// T0 and returns the items pushed, in order.
func Push(t testing.TB, s store.Store, queue, partition string, n int) []store.PushItem {
	t.Helper()
	return PushAt(t, s, T0, queue, partition, n)
}

// PushAt is Push with an explicit createdAt.
func PushAt(t testing.TB, s store.Store, now time.Time, queue, partition string, n int) []store.PushItem {
	t.Helper()
	items := make([]store.PushItem, n)
	for i := range items {
		items[i] = Item(queue, partition, i)
	}
	PushItems(t, s, now, items...)
	return items
}

// PushItems stores items in one call and fails the test unless every one is
// queued.
func PushItems(t testing.TB, s store.Store, now time.Time, items ...store.PushItem) []store.PushResult {
	t.Helper()
	res, err := s.MessagePushMany(context.Background(), &store.MessagePushManyParams{Items: items, Now: now})
	if err != nil {
		t.Fatalf("PushMany(%d items): %v", len(items), err)
	}
	if len(res) != len(items) {
		t.Fatalf("PushMany returned %d results for %d items", len(res), len(items))
	}
	for i, r := range res {
		if r.Status != store.PushQueued {
			t.Fatalf("PushMany item %d (queue %s partition %s txn %s): status %q error %q, want queued",
				i, items[i].Queue, items[i].Partition, items[i].TransactionID, r.Status, r.Error)
		}
	}
	return res
}

// PopParams returns the params of a leased pop of one message from one lane
// of queue by group at now, with a fresh lease id.
func PopParams(queue, group string, now time.Time) *store.LanePopParams {
	return &store.LanePopParams{
		Queue: queue, ConsumerGroup: group, Batch: 1, Partitions: 1, LeaseID: NewID(), Now: now,
	}
}

// Pop runs p and returns its messages; an empty pop returns nil.
func Pop(t testing.TB, s store.Store, p *store.LanePopParams) []store.Message {
	t.Helper()
	res, err := s.LanePop(context.Background(), p)
	if err != nil {
		t.Fatalf("Pop(queue=%q partition=%q group=%q): %v", p.Queue, p.Partition, p.ConsumerGroup, err)
	}
	if res == nil {
		t.Fatal("Pop returned a nil result and no error")
	}
	return res.Messages
}

// AckOf acknowledges m for group under leaseID ("" for none) with status.
func AckOf(m store.Message, group, leaseID string, status store.AckStatus) store.Ack {
	return store.Ack{
		TransactionID: m.TransactionID, PartitionID: m.PartitionID,
		ConsumerGroup: group, LeaseID: leaseID, Status: status,
	}
}

// Ack commits acks in one call at now and returns the verdicts.
func Ack(t testing.TB, s store.Store, now time.Time, acks ...store.Ack) []store.AckResult {
	t.Helper()
	res, err := s.MessageAckMany(context.Background(), &store.MessageAckManyParams{Acks: acks, Now: now})
	if err != nil {
		t.Fatalf("AckMany(%d acks): %v", len(acks), err)
	}
	if len(res) != len(acks) {
		t.Fatalf("AckMany returned %d results for %d acks", len(res), len(acks))
	}
	return res
}

// Configure creates or replaces queue's options at T0.
func Configure(t testing.TB, s store.Store, queue string, opts store.QueueOptions) *store.Queue {
	t.Helper()
	q, err := s.QueueConfigure(context.Background(), &store.QueueConfigureParams{Name: queue, Options: opts, Now: T0})
	if err != nil {
		t.Fatalf("QueueConfigure(%s): %v", queue, err)
	}
	return q
}

// Options returns the default options changed by edit.
func Options(edit func(o *store.QueueOptions)) store.QueueOptions {
	o := store.DefaultQueueOptions()
	edit(&o)
	return o
}

// ids lists the message ids of msgs.
func ids(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// itemIDs lists the message ids of items.
func itemIDs(items []store.PushItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.MessageID
	}
	return out
}

// wantIDs fails the test unless msgs are exactly the messages of want, in
// order.
func wantIDs(t testing.TB, what string, msgs []store.Message, want ...store.PushItem) {
	t.Helper()
	got, exp := ids(msgs), itemIDs(want)
	if len(got) == 0 && len(exp) == 0 {
		return
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("%s: got messages %v (payloads %s), want %v (payloads %s)",
			what, got, payloads(msgs), exp, itemPayloads(want))
	}
}

// wantEmpty fails the test if msgs is not empty.
func wantEmpty(t testing.TB, what string, msgs []store.Message) {
	t.Helper()
	if len(msgs) != 0 {
		t.Fatalf("%s: got %d messages (payloads %s), want none", what, len(msgs), payloads(msgs))
	}
}

func payloads(msgs []store.Message) string {
	out := "["
	for i, m := range msgs {
		if i > 0 {
			out += " "
		}
		out += m.Partition + ":" + string(m.Payload)
	}
	return out + "]"
}

func itemPayloads(items []store.PushItem) string {
	out := "["
	for i, it := range items {
		if i > 0 {
			out += " "
		}
		out += it.Partition + ":" + string(it.Payload)
	}
	return out + "]"
}

// wantVerdict fails the test unless r matches want on every field but Queue.
func wantVerdict(t testing.TB, what string, r, want store.AckResult) {
	t.Helper()
	r.Queue, want.Queue = "", ""
	if r != want {
		t.Errorf("%s: got %s, want %s", what, verdict(r), verdict(want))
	}
}

func verdict(r store.AckResult) string {
	return fmt.Sprintf("{success:%v noop:%v error:%q leaseReleased:%v dlq:%v}",
		r.Success, r.Noop, r.Error, r.LeaseReleased, r.DLQ)
}

// Verdicts the suite expects.
var (
	vOK        = store.AckResult{Success: true}
	vReleased  = store.AckResult{Success: true, LeaseReleased: true}
	vDLQ       = store.AckResult{Success: true, LeaseReleased: true, DLQ: true}
	vDup       = store.AckResult{Success: true, Noop: true}
	vCommitted = store.AckResult{Noop: true, Error: api.ReasonAlreadyCommitted}
	vCancelled = store.AckResult{Noop: true, Error: api.ReasonCancelled}
	vUnresolv  = store.AckResult{Noop: true, Error: api.ReasonUnresolvable}
	vBadLease  = store.AckResult{Error: api.ReasonInvalidLease}
)

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func runStore(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("Engine", func(t *testing.T) {
		s := setup(t, newStore)
		if s.Engine() == "" {
			t.Error("Engine() is empty")
		}
	})
	t.Run("Ping", func(t *testing.T) {
		s := setup(t, newStore)
		if err := s.Ping(context.Background()); err != nil {
			t.Errorf("Ping on an open store: %v", err)
		}
	})
	t.Run("CloseIdempotent", func(t *testing.T) {
		s := setup(t, newStore)
		Push(t, s, "q", "p", 1)
		if err := s.Close(); err != nil {
			t.Fatalf("first Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		// The constructor's cleanup closes it a third time.
	})
	t.Run("ClosedStoreFails", func(t *testing.T) {
		s := setup(t, newStore)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ctx := context.Background()
		if err := s.Ping(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Ping after Close: got %v, want store.ErrClosed", err)
		}
		_, err := s.MessagePushMany(ctx, &store.MessagePushManyParams{Items: []store.PushItem{Item("q", "p", 0)}, Now: T0})
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("PushMany after Close: got %v, want store.ErrClosed", err)
		}
		if _, err := s.LanePop(ctx, PopParams("q", store.QueueMode, T0)); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Pop after Close: got %v, want store.ErrClosed", err)
		}
		_, err = s.MessageAckMany(ctx, &store.MessageAckManyParams{Acks: []store.Ack{{TransactionID: "t", PartitionID: "p"}}, Now: T0})
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("AckMany after Close: got %v, want store.ErrClosed", err)
		}
	})
}
