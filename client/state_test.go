package client_test

import (
	"errors"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testbroker"
)

func TestKeyValueAndTimers(t *testing.T) {
	c := newClient(t, client.Config{URL: testbroker.SQLite(t)})
	ctx := t.Context()
	if _, err := c.Put(ctx, "cfg", "limit", 10); err != nil {
		t.Fatal(err)
	}
	e, err := c.Get(ctx, "cfg", "limit")
	if err != nil || string(e.Value) != "10" {
		t.Fatalf("get: %v %+v", err, e)
	}
	by := int64(5)
	res, err := c.KV(ctx, api.KVOperation{Op: api.KVIncr, Namespace: "cfg", Key: "limit", By: &by})
	if err != nil || len(res) != 1 || string(res[0].Value) != "15" {
		t.Fatalf("incr: %v %+v", err, res)
	}
	if ok, err := c.DeleteKey(ctx, "cfg", "limit"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if _, err := c.Get(ctx, "cfg", "limit"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	delay := 3600.0
	vs, err := c.Schedule(ctx, api.TimerItem{Queue: "later", Payload: []byte(`1`), DelaySeconds: &delay})
	if err != nil || len(vs) != 1 || vs[0].TimerID == nil {
		t.Fatalf("schedule: %v %+v", err, vs)
	}
	if err := c.CancelTimer(ctx, *vs[0].TimerID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
}
