package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// runWebhooks checks the documents and nonces of webhook ingress and
// delivery: put replaces and keeps created_at, tenants and kinds are
// apart, lists filter by queue in id order, a live nonce is claimed once and
// an expired one again.
func runWebhooks(t *testing.T, newStore func(t *testing.T) store.Store) {
	ctx := context.Background()
	t.Run("Docs", func(t *testing.T) {
		s := setup(t, newStore)
		put := func(tenant, kind, id, queue, doc string, at time.Duration) {
			t.Helper()
			if err := s.WebhookPut(ctx, &store.WebhookPutParams{WebhookKey: store.WebhookKey{Tenant: tenant, Kind: kind,
				ID: id}, Queue: queue, Doc: []byte(doc), Now: At(at)}); err != nil {
				t.Fatal(err)
			}
		}
		put("", "key", "k2", "orders", `{"n":2}`, 0)
		put("", "key", "k1", "orders", `{"n":1}`, 0)
		put("", "key", "k3", "other", `{"n":3}`, 0)
		put("", "target", "k1", "orders", `{"t":1}`, 0)
		put("acme", "key", "k1", "orders", `{"acme":1}`, 0)
		put("", "key", "k1", "orders", `{"n":11}`, time.Minute)

		d, err := s.WebhookGet(ctx, &store.WebhookKey{Kind: "key", ID: "k1"})
		if err != nil || string(d.Doc) != `{"n":11}` || d.Queue != "orders" || !d.CreatedAt.Equal(At(0)) ||
			!d.UpdatedAt.Equal(At(time.Minute)) {
			t.Fatalf("get after replace: %+v %v", d, err)
		}
		if _, err := s.WebhookGet(ctx, &store.WebhookKey{Kind: "key", ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get absent: %v", err)
		}
		all, err := s.WebhookList(ctx, &store.WebhookListParams{Kind: "key"})
		if err != nil || len(all) != 3 || all[0].ID != "k1" || all[1].ID != "k2" || all[2].ID != "k3" {
			t.Fatalf("list: %+v %v", all, err)
		}
		some, err := s.WebhookList(ctx, &store.WebhookListParams{Kind: "key", Queue: "orders"})
		if err != nil || len(some) != 2 {
			t.Fatalf("list of a queue: %+v %v", some, err)
		}
		acme, err := s.WebhookList(ctx, &store.WebhookListParams{Tenant: "acme", Kind: "key"})
		if err != nil || len(acme) != 1 || string(acme[0].Doc) != `{"acme":1}` {
			t.Fatalf("list of a tenant: %+v %v", acme, err)
		}
		if err := s.WebhookDelete(ctx, &store.WebhookKey{Kind: "key", ID: "k1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.WebhookDelete(ctx, &store.WebhookKey{Kind: "key", ID: "k1"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
		if d, err := s.WebhookGet(ctx, &store.WebhookKey{Kind: "target", ID: "k1"}); err != nil || string(d.Doc) != `{"t":1}` {
			t.Fatalf("another kind survives: %+v %v", d, err)
		}
		if err := s.WebhookPut(ctx, &store.WebhookPutParams{WebhookKey: store.WebhookKey{Kind: "target", ID: "k1"},
			Doc: []byte(`{"t":2}`), IfAbsent: true, Now: At(2 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if d, err := s.WebhookGet(ctx, &store.WebhookKey{Kind: "target", ID: "k1"}); err != nil || string(d.Doc) != `{"t":1}` {
			t.Fatalf("put if absent replaced a document: %+v %v", d, err)
		}
		everyone, err := s.WebhookList(ctx, &store.WebhookListParams{Kind: "key", AllTenants: true})
		if err != nil || len(everyone) != 3 || everyone[0].Tenant != store.DefaultTenant ||
			everyone[0].ID != "k2" || everyone[2].Tenant != "acme" {
			t.Fatalf("list of every tenant: %+v %v", everyone, err)
		}
		// k2, k3 (default) and acme's k1 were written at 0, k1 (default) is gone.
		n, err := s.WebhookSweep(ctx, &store.WebhookSweepParams{Kind: "key", Before: At(time.Second)})
		if err != nil || n != 3 {
			t.Fatalf("sweep: %d %v, want 3", n, err)
		}
		if d, err := s.WebhookGet(ctx, &store.WebhookKey{Kind: "target", ID: "k1"}); err != nil || string(d.Doc) != `{"t":1}` {
			t.Fatalf("a sweep of another kind took a target: %+v %v", d, err)
		}
	})
	t.Run("Nonces", func(t *testing.T) {
		s := setup(t, newStore)
		claim := func(tenant, key, nonce string, at, until time.Duration) bool {
			t.Helper()
			ok, err := s.WebhookNonceClaim(ctx, &store.WebhookNonceParams{Tenant: tenant, KeyID: key, Nonce: nonce,
				Now: At(at), Until: At(until)})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim("", "k", "n1", 0, 5*time.Minute) {
			t.Fatal("a fresh nonce is refused")
		}
		if claim("", "k", "n1", time.Minute, 6*time.Minute) {
			t.Fatal("a live nonce is claimed twice")
		}
		if !claim("", "k2", "n1", time.Minute, 6*time.Minute) || !claim("acme", "k", "n1", time.Minute, 6*time.Minute) {
			t.Fatal("another key's or tenant's nonce collides")
		}
		if !claim("", "k", "n1", 5*time.Minute, 10*time.Minute) {
			t.Fatal("an expired nonce is refused")
		}
		if claim("", "k", "n1", 9*time.Minute, 14*time.Minute) {
			t.Fatal("the nonce claimed again is not live")
		}
		n, err := s.WebhookNonceSweep(ctx, &store.WebhookNonceSweepParams{Now: At(7 * time.Minute)})
		if err != nil || n != 2 {
			t.Fatalf("sweep: %d %v, want 2", n, err)
		}
	})
}
