package broker

import (
	"bytes"
	"testing"

	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/store"
)

const testKey = "4aa9885901e44cf04de64da380218e778dba8877630e3d2634b39b980531dd53"

// seal binds what it seals and leaves sealed items alone; items spooled by
// builds that did not record seals are resolved; openPayloads opens by the
// recorded seal only, for the tenant and queue sealed for.
func TestSealAndOpenBySeal(t *testing.T) {
	keys, err := crypt.New(testKey)
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{keys: keys}
	const tenant = "0192f0a0-aaaa-7000-8000-00000000000a"
	queenBlob, _ := keys.Seal([]byte(`{"old":1}`))
	items := []store.PushItem{
		{Tenant: tenant, Queue: "enc", Payload: []byte(`{"n":0}`)},
		{Tenant: tenant, Queue: "enc", Payload: queenBlob, Sealed: store.SealUnknown}, // an old spool's seal
		{Tenant: tenant, Queue: "enc", Payload: []byte(`{"n":2}`), Sealed: store.SealUnknown},
		{Tenant: tenant, Queue: "plain", Payload: queenBlob, Sealed: store.SealUnknown},
		{Tenant: tenant, Queue: "enc", Payload: []byte(`{"kept":1}`), Sealed: store.SealBound}, // sealed before spooling
	}
	flags := map[string]bool{store.QueueKey(tenant, "enc"): true, store.QueueKey(tenant, "plain"): false}
	if refused, err := b.seal(items, flags); err != nil || refused != nil {
		t.Fatalf("seal: %v %v", refused, err)
	}
	want := []store.Seal{store.SealBound, store.SealQueen, store.SealBound, store.SealNone, store.SealBound}
	for i, it := range items {
		if it.Sealed != want[i] {
			t.Errorf("item %d: Sealed %d, want %d", i, it.Sealed, want[i])
		}
	}
	if !bytes.Equal(items[1].Payload, queenBlob) || !bytes.Equal(items[3].Payload, queenBlob) ||
		string(items[4].Payload) != `{"kept":1}` {
		t.Fatal("seal changed a payload it had to keep")
	}
	if _, ok := keys.Open(items[0].Payload); ok {
		t.Fatal("seal sealed without binding")
	}

	msgs := make([]store.Message, 0, len(items)+1)
	for _, it := range items[:4] {
		msgs = append(msgs, store.Message{Queue: it.Queue, Payload: it.Payload, Sealed: it.Sealed})
	}
	msgs = append(msgs, store.Message{Queue: "plain", Payload: items[0].Payload, Sealed: store.SealBound}) // copied
	b.openPayloads(tenant, msgs)
	for i, w := range []string{`{"n":0}`, `{"old":1}`, `{"n":2}`, string(queenBlob), string(items[0].Payload)} {
		if string(msgs[i].Payload) != w {
			t.Errorf("message %d opened to %s, want %s", i, msgs[i].Payload, w)
		}
	}
	// Another tenant's pop of the same queue name opens nothing.
	other := []store.Message{{Queue: "enc", Payload: items[0].Payload, Sealed: store.SealBound}}
	b.openPayloads("0192f0a0-bbbb-7000-8000-00000000000b", other)
	if !bytes.Equal(other[0].Payload, items[0].Payload) {
		t.Error("a seal of tenant A opened for tenant B")
	}
}
