package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// KVSet is a set of namespace/key to value with no condition.
func KVSet(ns, key, value string) store.KVOp {
	return store.KVOp{Kind: store.KVOpSet, Namespace: ns, Key: key, Value: []byte(value)}
}

// KVApply applies ops at now and fails the test on an error.
func KVApply(t testing.TB, s store.Store, now time.Time, ops ...store.KVOp) []store.KVResult {
	t.Helper()
	res, err := s.KVApply(context.Background(), &store.KVApplyParams{Ops: ops, Now: now})
	if err != nil {
		t.Fatalf("KVApply(%d ops): %v", len(ops), err)
	}
	if len(res) != len(ops) {
		t.Fatalf("KVApply returned %d results for %d ops", len(res), len(ops))
	}
	return res
}

// kvGet reads a key at now; nil when absent.
func kvGet(t testing.TB, s store.Store, now time.Time, ns, key string) *store.KVEntry {
	t.Helper()
	e, err := s.KVGet(context.Background(), &store.KVGetParams{Namespace: ns, Key: key, Now: now})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("KVGet(%s/%s): %v", ns, key, err)
	}
	return e
}

func wantConflict(t testing.TB, what string, err error, index int, reason string) *store.KVConflictError {
	t.Helper()
	var ce *store.KVConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: got %v (%T), want *store.KVConflictError", what, err, err)
	}
	if ce.Index != index || ce.Reason != reason {
		t.Fatalf("%s: conflict at %d (%q), want at %d (%q)", what, ce.Index, ce.Reason, index, reason)
	}
	return ce
}

func ptr[T any](v T) *T { return &v }

func runKV(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()

	t.Run("SetGetVersions", func(t *testing.T) {
		s := setup(t, newStore)
		res := KVApply(t, s, T0, KVSet("ns", "a", `{"x":1}`))
		if e := res[0].Entry; e == nil || e.Version != 1 || string(e.Value) != `{"x":1}` {
			t.Fatalf("first set: got %+v, want version 1", res[0])
		}
		res = KVApply(t, s, At(time.Second), KVSet("ns", "a", `[1,2]`),
			store.KVOp{Kind: store.KVOpGet, Namespace: "ns", Key: "a"})
		if e := res[1].Entry; e == nil || e.Version != 2 || string(e.Value) != `[1,2]` || !res[1].Found {
			t.Fatalf("get after second set: got %+v, want version 2 [1,2]", res[1])
		}
		e := kvGet(t, s, At(2*time.Second), "ns", "a")
		if e == nil || e.Version != 2 || !e.CreatedAt.Equal(T0) || !e.UpdatedAt.Equal(At(time.Second)) {
			t.Fatalf("KVGet: got %+v, want version 2 created at T0 updated at T0+1s", e)
		}
		if kvGet(t, s, T0, "other", "a") != nil {
			t.Error("a key of another namespace is visible")
		}
		other, err := s.KVGet(ctx, &store.KVGetParams{Tenant: "11111111-1111-1111-1111-111111111111",
			Namespace: "ns", Key: "a", Now: T0})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("KVGet of another tenant: got %+v, %v, want ErrNotFound", other, err)
		}
		res = KVApply(t, s, At(3*time.Second), store.KVOp{Kind: store.KVOpDelete, Namespace: "ns", Key: "a"},
			store.KVOp{Kind: store.KVOpDelete, Namespace: "ns", Key: "a"})
		if !res[0].Found || res[1].Found {
			t.Errorf("delete twice: found %v then %v, want true then false", res[0].Found, res[1].Found)
		}
		if kvGet(t, s, At(3*time.Second), "ns", "a") != nil {
			t.Error("key present after delete")
		}
		// Created again, it starts at version 1.
		res = KVApply(t, s, At(4*time.Second), KVSet("ns", "a", `1`))
		if res[0].Entry.Version != 1 {
			t.Errorf("set after delete: version %d, want 1", res[0].Entry.Version)
		}
	})

	t.Run("Expect", func(t *testing.T) {
		s := setup(t, newStore)
		KVApply(t, s, T0, KVSet("ns", "a", `{"b":1,"a":[1.0]}`))
		cases := []struct {
			name   string
			expect store.KVExpect
			ok     bool
		}{
			{"version matches", store.KVExpect{Version: ptr[int64](1)}, true},
			{"version differs", store.KVExpect{Version: ptr[int64](7)}, false},
			{"version 0 on a present key", store.KVExpect{Version: ptr[int64](0)}, false},
			{"exists true", store.KVExpect{Exists: ptr(true)}, true},
			{"exists false", store.KVExpect{Exists: ptr(false)}, false},
			{"value equal as JSON", store.KVExpect{Value: []byte(`{"a":[1],"b":1e0}`)}, true},
			{"value differs", store.KVExpect{Value: []byte(`{"a":[2],"b":1}`)}, false},
		}
		for _, c := range cases {
			x := c.expect
			op := KVSet("ns", "a", `"next"`)
			op.Expect = &x
			_, err := s.KVApply(ctx, &store.KVApplyParams{Ops: []store.KVOp{op}, Now: T0})
			if c.ok {
				if err != nil {
					t.Fatalf("%s: %v, want the set to apply", c.name, err)
				}
				// Put the key back at a known state for the next case.
				if _, err := s.KVApply(ctx, &store.KVApplyParams{Ops: []store.KVOp{
					{Kind: store.KVOpDelete, Namespace: "ns", Key: "a"}, KVSet("ns", "a", `{"b":1,"a":[1.0]}`)},
					Now: T0}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			ce := wantConflict(t, c.name, err, 0, api.KVReasonExpectation)
			if ce.Current == nil || ce.Current.Version != 1 {
				t.Errorf("%s: current %+v, want the key at version 1", c.name, ce.Current)
			}
		}
		// On an absent key: version 0 and exists false hold, the others fail
		// with no current value.
		for _, x := range []store.KVExpect{{Version: ptr[int64](0)}, {Exists: ptr(false)}} {
			op := KVSet("ns", "new-"+fmt.Sprint(x.Version != nil), `1`)
			op.Expect = &x
			KVApply(t, s, T0, op)
		}
		op := store.KVOp{Kind: store.KVOpDelete, Namespace: "ns", Key: "absent", Expect: &store.KVExpect{Exists: ptr(true)}}
		_, err := s.KVApply(ctx, &store.KVApplyParams{Ops: []store.KVOp{op}, Now: T0})
		if ce := wantConflict(t, "delete expecting an absent key", err, 0, api.KVReasonExpectation); ce.Current != nil {
			t.Errorf("current of an absent key: %+v, want nil", ce.Current)
		}
	})

	t.Run("BatchAllOrNothing", func(t *testing.T) {
		s := setup(t, newStore)
		KVApply(t, s, T0, KVSet("ns", "a", `1`))
		bad := KVSet("ns", "a", `3`)
		bad.Expect = &store.KVExpect{Version: ptr[int64](5)}
		_, err := s.KVApply(ctx, &store.KVApplyParams{Now: At(time.Second), Ops: []store.KVOp{
			KVSet("ns", "b", `2`),
			{Kind: store.KVOpIncr, Namespace: "ns", Key: "a", By: 10},
			bad,
		}})
		wantConflict(t, "batch with a failing expect", err, 2, api.KVReasonExpectation)
		if kvGet(t, s, At(time.Second), "ns", "b") != nil {
			t.Error("key b written by a batch that failed")
		}
		if e := kvGet(t, s, At(time.Second), "ns", "a"); e == nil || string(e.Value) != "1" || e.Version != 1 {
			t.Errorf("key a after the failed batch: %+v, want 1 at version 1", e)
		}
		// Later operations of a batch see the earlier ones.
		next := KVSet("ns", "a", `"x"`)
		next.Expect = &store.KVExpect{Version: ptr[int64](2)}
		res := KVApply(t, s, At(2*time.Second), store.KVOp{Kind: store.KVOpIncr, Namespace: "ns", Key: "a", By: 1}, next)
		if res[1].Entry.Version != 3 {
			t.Errorf("set after incr in one batch: version %d, want 3", res[1].Entry.Version)
		}
	})

	t.Run("Incr", func(t *testing.T) {
		s := setup(t, newStore)
		res := KVApply(t, s, T0, store.KVOp{Kind: store.KVOpIncr, Namespace: "c", Key: "n", By: 5},
			store.KVOp{Kind: store.KVOpIncr, Namespace: "c", Key: "n", By: -2})
		if string(res[0].Entry.Value) != "5" || string(res[1].Entry.Value) != "3" || res[1].Entry.Version != 2 {
			t.Fatalf("incr: got %s then %s (version %d), want 5 then 3 at version 2",
				res[0].Entry.Value, res[1].Entry.Value, res[1].Entry.Version)
		}
		KVApply(t, s, T0, KVSet("c", "s", `"text"`), KVSet("c", "f", `1.5`), KVSet("c", "max", `9223372036854775807`))
		for _, k := range []string{"s", "f"} {
			_, err := s.KVApply(ctx, &store.KVApplyParams{Now: T0, Ops: []store.KVOp{
				{Kind: store.KVOpIncr, Namespace: "c", Key: "n", By: 1},
				{Kind: store.KVOpIncr, Namespace: "c", Key: k, By: 1}}})
			wantConflict(t, "incr of "+k, err, 1, api.KVReasonNotCounter)
		}
		_, err := s.KVApply(ctx, &store.KVApplyParams{Now: T0, Ops: []store.KVOp{
			{Kind: store.KVOpIncr, Namespace: "c", Key: "max", By: 1}}})
		wantConflict(t, "incr past int64", err, 0, api.KVReasonOverflow)
		if e := kvGet(t, s, T0, "c", "n"); string(e.Value) != "3" {
			t.Errorf("counter after failed batches: %s, want 3", e.Value)
		}
	})

	t.Run("TTL", func(t *testing.T) {
		s := setup(t, newStore)
		op := KVSet("ns", "t", `1`)
		op.TTL = 10 * time.Second
		res := KVApply(t, s, T0, op, KVSet("ns", "keep", `2`))
		if !res[0].Entry.ExpiresAt.Equal(At(10 * time.Second)) {
			t.Fatalf("expiresAt %v, want T0+10s", res[0].Entry.ExpiresAt)
		}
		if kvGet(t, s, At(9999*time.Millisecond), "ns", "t") == nil {
			t.Fatal("key absent before its expiry")
		}
		if e := kvGet(t, s, At(10*time.Second), "ns", "t"); e != nil {
			t.Fatalf("key present at its expiry: %+v", e)
		}
		page, err := s.KVList(ctx, &store.KVListParams{Namespace: "ns", Now: At(10 * time.Second)})
		if err != nil || len(page.Entries) != 1 || page.Entries[0].Key != "keep" {
			t.Fatalf("list after expiry: %+v, %v, want only keep", page, err)
		}
		// An expired key is absent to writes too: version 0 holds, and a new
		// set starts again at version 1.
		again := KVSet("ns", "t", `5`)
		again.Expect = &store.KVExpect{Version: ptr[int64](0)}
		res = KVApply(t, s, At(11*time.Second), again)
		if res[0].Entry.Version != 1 || !res[0].Entry.ExpiresAt.IsZero() {
			t.Fatalf("set over an expired key: %+v, want version 1 with no expiry", res[0].Entry)
		}
		// Incr keeps the expiry of the counter it finds (a fixed window).
		win := store.KVOp{Kind: store.KVOpIncr, Namespace: "ns", Key: "w", By: 1, TTL: time.Minute}
		KVApply(t, s, T0, win)
		res = KVApply(t, s, At(30*time.Second), win)
		if string(res[0].Entry.Value) != "2" || !res[0].Entry.ExpiresAt.Equal(At(time.Minute)) {
			t.Fatalf("second incr: %+v, want 2 expiring at T0+1m", res[0].Entry)
		}
		res = KVApply(t, s, At(61*time.Second), win)
		if string(res[0].Entry.Value) != "1" {
			t.Fatalf("incr after the window: %s, want 1 (a new counter)", res[0].Entry.Value)
		}
		// The sweep deletes expired rows only.
		exp := KVSet("ns", "gone", `1`)
		exp.TTL = time.Second
		KVApply(t, s, At(100*time.Second), exp)
		n, err := s.KVSweep(ctx, &store.KVSweepParams{Now: At(200 * time.Second)})
		if err != nil || n != 2 { // ns/gone and ns/w (the window)
			t.Fatalf("sweep: %d, %v, want 2 rows", n, err)
		}
		if n, err := s.KVSweep(ctx, &store.KVSweepParams{Now: At(200 * time.Second)}); err != nil || n != 0 {
			t.Fatalf("second sweep: %d, %v, want 0", n, err)
		}
		for _, k := range []string{"keep", "t"} {
			if kvGet(t, s, At(200*time.Second), "ns", k) == nil {
				t.Errorf("sweep deleted live key %s", k)
			}
		}
	})

	t.Run("ListPages", func(t *testing.T) {
		s := setup(t, newStore)
		var ops []store.KVOp
		for _, k := range []string{"user:1", "user:2", "user:3", "user:10", "order:1", "user;", "usex"} {
			ops = append(ops, KVSet("ns", k, `true`))
		}
		ops = append(ops, KVSet("other", "user:9", `1`))
		KVApply(t, s, T0, ops...)
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			page, err := s.KVList(ctx, &store.KVListParams{Namespace: "ns", Prefix: "user:", Limit: 2, After: after, Now: T0})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entries {
				got = append(got, e.Key)
			}
			if !page.More {
				break
			}
			if pages > 5 {
				t.Fatal("listing does not end")
			}
			after = page.Entries[len(page.Entries)-1].Key
		}
		if fmt.Sprint(got) != "[user:1 user:10 user:2 user:3]" {
			t.Errorf("listing by prefix: %v, want [user:1 user:10 user:2 user:3]", got)
		}
		page, err := s.KVList(ctx, &store.KVListParams{Namespace: "ns", Now: T0})
		if err != nil || len(page.Entries) != 7 || page.More {
			t.Errorf("whole listing: %d entries, more %v, %v; want 7", len(page.Entries), page.More, err)
		}
	})

	t.Run("IncrRace", func(t *testing.T) {
		s := setup(t, newStore)
		const workers, each = 16, 1000
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					_, err := s.KVApply(ctx, &store.KVApplyParams{Now: T0, Ops: []store.KVOp{
						{Kind: store.KVOpIncr, Namespace: "race", Key: "counter", By: 1}}})
					if err != nil {
						failed.Add(1)
						t.Errorf("incr: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		e := kvGet(t, s, T0, "race", "counter")
		if e == nil || string(e.Value) != fmt.Sprint(workers*each) || e.Version != workers*each {
			t.Fatalf("counter after %d×%d incr: %+v, want %d at version %d", workers, each, e,
				workers*each, workers*each)
		}
	})

	t.Run("CASRace", func(t *testing.T) {
		s := setup(t, newStore)
		const workers, rounds = 16, 20
		// Round 0 races on an absent key (version 0), then on each version.
		for v := int64(0); v < rounds; v++ {
			var wg sync.WaitGroup
			var wins atomic.Int64
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					op := KVSet("cas", "k", fmt.Sprintf(`{"round":%d,"worker":%d}`, v, w))
					op.Expect = &store.KVExpect{Version: ptr(v)}
					_, err := s.KVApply(ctx, &store.KVApplyParams{Now: T0, Ops: []store.KVOp{op}})
					var ce *store.KVConflictError
					switch {
					case err == nil:
						wins.Add(1)
					case errors.As(err, &ce):
					default:
						t.Errorf("CAS set: %v", err)
					}
				}()
			}
			wg.Wait()
			if n := wins.Load(); n != 1 {
				t.Fatalf("version %d: %d of %d CAS sets won, want exactly 1", v, n, workers)
			}
		}
		if e := kvGet(t, s, T0, "cas", "k"); e.Version != rounds {
			t.Fatalf("version after %d rounds: %d", rounds, e.Version)
		}
	})

	t.Run("InTransaction", func(t *testing.T) {
		s := setup(t, newStore)
		const g = "workers"
		KVApply(t, s, T0, KVSet("wf", "state", `"pending"`))
		items := Push(t, s, "src", "p", 1)
		m, lease := popAll(t, s, "src", "p", g, At(time.Second))
		ack := AckOf(m[0], g, lease, store.AckCompleted)
		bad := KVSet("wf", "state", `"done"`)
		bad.Expect = &store.KVExpect{Version: ptr[int64](9)}
		res, err := s.TxRun(ctx, &store.TxRunParams{Now: At(2 * time.Second), Ops: []store.TxOp{
			{Ack: &ack},
			{Items: []store.PushItem{Item("dst", "p", 1)}},
			{KV: &store.KVOp{Kind: store.KVOpIncr, Namespace: "wf", Key: "count", By: 1}},
			{KV: &bad},
		}})
		wantAbort(t, "transaction with a failing expect", res, err)
		if e := kvGet(t, s, At(2*time.Second), "wf", "state"); string(e.Value) != `"pending"` || e.Version != 1 {
			t.Errorf("state after the abort: %+v", e)
		}
		if kvGet(t, s, At(2*time.Second), "wf", "count") != nil {
			t.Error("incr of an aborted transaction was written")
		}
		// The ack did not apply: after the lease lapses the message is back.
		p := PopParams("src", g, At(time.Hour))
		wantIDs(t, "source after the abort", Pop(t, s, p), items...)
		wantEmpty(t, "destination after the abort", Pop(t, s, PopParams("dst", g, At(time.Hour))))

		// The same bundle with a holding expect commits all three.
		m, lease = popAll(t, s, "src", "p", g, At(2*time.Hour))
		ack = AckOf(m[0], g, lease, store.AckCompleted)
		good := KVSet("wf", "state", `"done"`)
		good.Expect = &store.KVExpect{Version: ptr[int64](1)}
		res, err = s.TxRun(ctx, &store.TxRunParams{Now: At(2*time.Hour + time.Second), Ops: []store.TxOp{
			{Ack: &ack},
			{Items: []store.PushItem{Item("dst", "p", 1)}},
			{KV: &store.KVOp{Kind: store.KVOpIncr, Namespace: "wf", Key: "count", By: 1}},
			{KV: &good},
		}})
		if err != nil {
			t.Fatalf("transaction: %v", err)
		}
		if len(res) != 4 || res[0].Ack == nil || res[1].Push == nil || res[2].KV == nil || res[3].KV == nil {
			t.Fatalf("results: %+v, want ack, push, kv, kv in order", res)
		}
		if string(res[2].KV.Entry.Value) != "1" || res[3].KV.Entry.Version != 2 {
			t.Errorf("kv results: %+v %+v", res[2].KV.Entry, res[3].KV.Entry)
		}
		if got := Pop(t, s, PopParams("dst", g, At(3*time.Hour))); len(got) != 1 {
			t.Errorf("destination after the commit: %d messages, want 1", len(got))
		}
	})
}
