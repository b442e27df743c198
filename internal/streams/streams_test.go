package streams

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
)

func TestWindowEnd(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  float64 // -1: none
	}{
		{`{"windowEnd":1717000000000,"count":3}`, 1717000000000},
		{`{"count":3, "windowEnd" : -5.5 }`, -5.5},
		{`{"windowEnd":"1717000000000"}`, -1},
		{`{"windowEnd":null}`, -1},
		{`{"windowend":1}`, -1},
		{`{"inner":{"windowEnd":1}}`, -1},
		{`["windowEnd",1]`, -1},
		{`"windowEnd"`, -1},
		{`{"count":3}`, -1},
		{`{"windowEnd":1e3}`, 1000},
	} {
		got := WindowEnd([]byte(tc.value))
		switch {
		case tc.want == -1 && got != nil:
			t.Errorf("WindowEnd(%s) = %v, want none", tc.value, *got)
		case tc.want != -1 && (got == nil || *got != tc.want):
			t.Errorf("WindowEnd(%s) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

// fakeStore answers the methods a test needs; any other call panics.
type fakeStore struct {
	Store
	cycle    *store.StreamCycleParams
	result   *store.StreamCycleResult
	err      error
	register *store.StreamQueryRegisterResult
}

func (f *fakeStore) StreamCycle(ctx context.Context, p *store.StreamCycleParams) (*store.StreamCycleResult, error) {
	f.cycle = p
	return f.result, f.err
}

func (f *fakeStore) StreamQueryRegister(ctx context.Context, p *store.StreamQueryRegisterParams) (*store.StreamQueryRegisterResult, error) {
	return f.register, nil
}

func TestCyclePreparesAndWakes(t *testing.T) {
	f := &fakeStore{}
	var woken []string
	s := New(f, Config{Wake: func(keys ...string) { woken = append(woken, keys...) }})
	chosen := "0190f0c8-0000-7000-8000-000000000001"
	cy := &Cycle{QueryID: "q", PartitionID: "p", ReleaseLease: true,
		StateOps: []store.StreamStateOp{{Key: "w", Value: []byte(`{"windowEnd":5}`)}, {Key: "d", Delete: true}},
		Pushes:   []store.PushItem{{Queue: "shop.totals", Payload: []byte("1")}, {Queue: "shop.totals", MessageID: chosen, TransactionID: "t2", Partition: "k"}},
		Ack:      &Ack{TransactionID: "m9", Failed: true, Count: 4}}
	f.result = &store.StreamCycleResult{Queue: "shop.events", StateOpsApplied: 2,
		Pushes: []store.PushResult{{Status: store.PushQueued, MessageID: "x"}, {Status: store.PushDuplicate, MessageID: "y"}},
		Ack:    &store.StreamAckResult{DLQ: true, LeaseReleased: true}}
	res, err := s.Cycle(context.Background(), broker.Caller{Subject: "svc"}, cy)
	if err != nil || !res.Success {
		t.Fatalf("Cycle: %+v, %v", res, err)
	}
	p := f.cycle
	if p.Tenant != store.DefaultTenant || p.ConsumerGroup != store.QueueMode || !p.ReleaseLease {
		t.Errorf("params: tenant %q group %q release %v", p.Tenant, p.ConsumerGroup, p.ReleaseLease)
	}
	if w := p.StateOps[0].WindowEnd; w == nil || *w != 5 {
		t.Errorf("upsert's window end: %v, want 5", w)
	}
	if p.Ack.Status != store.AckDLQ || p.Ack.Error != DefaultFailureError || p.Ack.Count != 4 {
		t.Errorf("failed ack: %+v, want a dead letter with Queen's default error", p.Ack)
	}
	a, b := p.Pushes[0], p.Pushes[1]
	if a.Partition != store.DefaultPartition || a.TransactionID == "" || a.MessageID == "" || a.ProducerSub != "svc" ||
		a.Namespace != "shop" || a.Task != "totals" || a.Tenant != store.DefaultTenant {
		t.Errorf("first push prepared as %+v", a)
	}
	if b.MessageID != chosen || b.TransactionID != "t2" || b.Partition != "k" {
		t.Errorf("second push: %+v, want the client's ids kept", b)
	}
	if a.MessageID[14] != '7' {
		t.Errorf("minted messageId %s is not a UUIDv7", a.MessageID)
	}
	want := []string{store.QueueKey(store.DefaultTenant, "shop.totals"), store.QueueKey(store.DefaultTenant, "shop.events")}
	if !slices.Equal(woken, want) {
		t.Errorf("woken %v, want %v (the sink pushed to, the source released)", woken, want)
	}
	if res.Pushes[0].Status != store.PushQueued || res.Pushes[1].TransactionID != "t2" || res.Queue != "shop.events" {
		t.Errorf("result %+v", res)
	}
}

func TestCycleFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&store.StreamCycleError{Reason: api.ReasonCycleLease}, api.ReasonCycleLease},
		{errors.Join(errors.New("driver"), store.ErrInvalid), msgRefused},
	} {
		s := New(&fakeStore{err: tc.err}, Config{})
		res, err := s.Cycle(context.Background(), broker.Caller{}, &Cycle{QueryID: "q", PartitionID: "p"})
		if err != nil || res.Success || res.Error != tc.want || res.Pushes == nil || res.Ack != nil {
			t.Errorf("store error %v: %+v, %v; want success false with %q", tc.err, res, err, tc.want)
		}
	}
	s := New(&fakeStore{err: store.ErrUnavailable}, Config{})
	if _, err := s.Cycle(context.Background(), broker.Caller{}, &Cycle{}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("an outage: %v, want it returned", err)
	}
}

func TestRegisterMismatch(t *testing.T) {
	s := New(&fakeStore{register: &store.StreamQueryRegisterResult{Mismatch: true, QueryID: "id"}}, Config{})
	_, err := s.Register(context.Background(), "", Registration{Name: "orders.per_minute"})
	var me *MismatchError
	if !errors.As(err, &me) || me.QueryID != "id" || me.Name != "orders.per_minute" {
		t.Fatalf("Register: %v, want a *MismatchError", err)
	}
	if !strings.HasPrefix(err.Error(), "config_hash mismatch: ") || !strings.Contains(err.Error(), "Pass reset:true") {
		t.Errorf("mismatch text %q", err)
	}
}

func TestCycleSealsPushes(t *testing.T) {
	f := &fakeStore{result: &store.StreamCycleResult{Pushes: []store.PushResult{{Status: store.PushQueued}}}}
	var sealed []store.PushItem
	reason := ""
	s := New(f, Config{Seal: func(ctx context.Context, items []store.PushItem) (string, error) {
		sealed = items
		for i := range items {
			items[i].Payload = []byte(`"sealed"`)
		}
		return reason, nil
	}})
	cy := &Cycle{QueryID: "q", PartitionID: "p", Pushes: []store.PushItem{{Queue: "sink", Payload: []byte("1")}}}
	if res, err := s.Cycle(context.Background(), broker.Caller{}, cy); err != nil || !res.Success {
		t.Fatalf("Cycle: %+v, %v", res, err)
	}
	if len(sealed) != 1 || sealed[0].Tenant != store.DefaultTenant || string(f.cycle.Pushes[0].Payload) != `"sealed"` {
		t.Fatalf("sealed %+v, stored %+v: want the prepared items sealed before the store", sealed, f.cycle.Pushes)
	}
	reason, f.cycle = "queue sink encrypts its payloads", nil
	res, err := s.Cycle(context.Background(), broker.Caller{}, &Cycle{QueryID: "q", PartitionID: "p",
		Pushes: []store.PushItem{{Queue: "sink", Payload: []byte("1")}}})
	if err != nil || res.Success || res.Error != reason || f.cycle != nil {
		t.Fatalf("a push that cannot be sealed: %+v, %v (store reached: %v); want a failed cycle", res, err, f.cycle != nil)
	}
}
