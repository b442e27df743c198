package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
)

// sealedPlain is the plaintext the sealing tests seal; no answer but a pop
// of its own queue may carry its marker.
const sealedPlain = `{"secret":"A-enc-plaintext-marker","n":1}`

// testSealing covers encryption at rest as an oracle would probe it: the
// broker opens only what it sealed, for the tenant and queue it sealed it
// for, by the seal recorded with the row and never by the payload's shape.
func (s *suite) testSealing(t *testing.T) {
	t.Run("a sealed blob pushed anywhere else pops opaque", func(t *testing.T) {
		t.Parallel()
		st := s.newStore(t)
		c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true,
			Encryption: keyring(t, testKeyNew), Auth: auth.Config{
				JWTEnabled: true, Secret: authSecret, Issuer: authIssuer, Audience: []string{authAudience}}}))
		t.Cleanup(c.hc.CloseIdleConnections)
		adminA := c.with("Authorization", bearer(hs(t, claims("alice", "admin", "tenant", tenantA))))
		readerA := c.with("Authorization", bearer(hs(t, claims("audit", "read-only", "tenant", tenantA))))
		writerB := c.with("Authorization", bearer(hs(t, claims("bob", "read-write", "tenant", tenantB))))
		enc, otherA, plainB := uniq("qa-enc"), uniq("qa-plain"), uniq("b-plain")
		encB := uniq("b-enc")
		adminA.configure(t, enc, map[string]any{"encryptionEnabled": true})
		c.with("Authorization", bearer(hs(t, claims("bob", "admin", "tenant", tenantB)))).
			configure(t, encB, map[string]any{"encryptionEnabled": true})
		adminA.push(t, item(enc, json.RawMessage(sealedPlain)))

		// The read route hands out the sealed form, and says so.
		var d struct {
			Payload     json.RawMessage `json:"payload"`
			IsEncrypted bool            `json:"isEncrypted"`
		}
		wantJSON(t, readerA.do(t, "GET", messageRoute(t, readerA, enc), nil), http.StatusOK, &d)
		if !d.IsEncrypted || !crypt.Sealed(d.Payload) || bytes.Contains(d.Payload, []byte("plaintext-marker")) {
			t.Fatalf("messages route: isEncrypted %v, payload %s: want true and the sealed form", d.IsEncrypted, d.Payload)
		}
		// The same blob as a backup or a dump holds it.
		raw := storedPayloadsOf(t, st, tenantA, enc)
		if len(raw) != 1 || !crypt.Sealed(raw[0]) {
			t.Fatalf("stored payloads %s", raw)
		}
		// Its own queue opens it.
		if p := adminA.popOK(t, queuePath(enc)+"?autoAck=true"); !jsonEqual(p.Messages[0].Data, []byte(sealedPlain)) {
			t.Fatalf("own queue popped %s, want the plaintext", p.Messages[0].Data)
		}

		// Pushed anywhere, the same queue included, the blob is a client's
		// payload: opaque (and sealed again on a queue that seals).
		for _, blob := range []struct {
			name string
			b    []byte
		}{{"from the messages route", d.Payload}, {"from the database", raw[0]}} {
			for _, dst := range []struct {
				name  string
				c     *client
				queue string
			}{
				{"another tenant's plain queue", writerB, plainB},
				{"another tenant's encrypted queue", writerB, encB},
				{"another queue of the same tenant", adminA, otherA},
				{"the same queue", adminA, enc},
			} {
				got := dst.c.push(t, item(dst.queue, json.RawMessage(blob.b)))
				if got[0].Status != "queued" {
					t.Fatalf("%s to %s: %+v", blob.name, dst.name, got[0])
				}
				p := dst.c.popOK(t, queuePath(dst.queue)+"?autoAck=true")
				if bytes.Contains(p.Messages[0].Data, []byte("plaintext-marker")) || !jsonEqual(p.Messages[0].Data, blob.b) {
					t.Errorf("blob %s pushed to %s popped %s: want the opaque blob as pushed", blob.name, dst.name,
						p.Messages[0].Data)
				}
			}
		}
	})

	t.Run("isEncrypted says what is stored", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Encryption: keyring(t, testKeyNew)})
		enc, plain := uniq("enc"), uniq("plain")
		c.configure(t, enc, map[string]any{"encryptionEnabled": true})
		shaped := uniq("shaped")
		c.push(t, item(enc, map[string]any{"n": 1}))
		c.push(t, item(plain, map[string]any{"n": 1}))
		c.push(t, item(shaped, json.RawMessage(
			`{"encrypted":"AAAA","iv":"AAAAAAAAAAAAAAAAAAAAAA==","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`)))
		for _, tc := range []struct {
			queue string
			want  bool
		}{
			{enc, true},
			{plain, false},
			{shaped, false}, // a client's payload of the sealed shape is not sealed
		} {
			path := messageRoute(t, c, tc.queue)
			var d map[string]any
			wantJSON(t, c.do(t, "GET", path, nil), http.StatusOK, &d)
			if d["isEncrypted"] != tc.want {
				t.Errorf("message of %s: isEncrypted %v, want %v", tc.queue, d["isEncrypted"], tc.want)
			}

			// The dead-letter listing and the traces by name hand out the
			// payload as stored too, and say the same.
			var moved map[string]any
			wantJSON(t, c.do(t, "POST", path+"/dlq", `{}`), http.StatusOK, &moved)
			var dl struct {
				Messages []struct {
					PartitionID   string          `json:"partitionId"`
					TransactionID string          `json:"transactionId"`
					Data          json.RawMessage `json:"data"`
					IsEncrypted   *bool           `json:"isEncrypted"`
				} `json:"messages"`
			}
			wantJSON(t, c.do(t, "GET", "/api/v1/dlq?queue="+url.QueryEscape(tc.queue), nil), http.StatusOK, &dl)
			if len(dl.Messages) != 1 {
				t.Fatalf("dead letters of %s: %+v, want one", tc.queue, dl.Messages)
			}
			e := dl.Messages[0]
			if e.IsEncrypted == nil || *e.IsEncrypted != tc.want || crypt.Sealed(e.Data) != tc.want && tc.queue != shaped {
				t.Errorf("dead letter of %s: isEncrypted %v, data %s; want %v", tc.queue, e.IsEncrypted, e.Data, tc.want)
			}
			name := uniq("sealed-trace")
			c.recordTrace(t, popMessage{PartitionID: e.PartitionID, TransactionID: e.TransactionID}, map[string]any{}, name)
			var tr struct {
				Traces []struct {
					MessagePayload json.RawMessage `json:"message_payload"`
					IsEncrypted    *bool           `json:"is_encrypted"`
				} `json:"traces"`
			}
			wantJSON(t, c.do(t, "GET", "/api/v1/traces/by-name/"+url.PathEscape(name), nil), http.StatusOK, &tr)
			if len(tr.Traces) != 1 || tr.Traces[0].IsEncrypted == nil || *tr.Traces[0].IsEncrypted != tc.want ||
				!jsonEqual(tr.Traces[0].MessagePayload, e.Data) {
				t.Errorf("trace of %s by name: %+v, want is_encrypted %v and the payload as stored %s", tc.queue, tr.Traces,
					tc.want, e.Data)
			}
		}
	})

	t.Run("a Queen-sealed row opens on its own queue only", func(t *testing.T) {
		t.Parallel()
		st := s.newStore(t)
		keys := keyring(t, testKeyNew)
		c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-apitest", Encryption: keys}))
		t.Cleanup(c.hc.CloseIdleConnections)
		q, other := uniq("imported"), uniq("elsewhere")
		c.configure(t, q, map[string]any{"encryptionEnabled": true})
		blob, err := keys.Seal([]byte(sealedPlain)) // Queen's seal: no associated data
		if err != nil {
			t.Fatal(err)
		}
		// As an import of a Queen database writes it.
		if _, err := st.MessagePushMany(context.Background(), &store.MessagePushManyParams{Now: time.Now(),
			Items: []store.PushItem{{Queue: q, Partition: store.DefaultPartition, MessageID: uuid.Must(uuid.NewV7()).String(),
				TransactionID: uuid.Must(uuid.NewV7()).String(), Payload: blob, Sealed: store.SealQueen, Tenant: store.DefaultTenant}}}); err != nil {
			t.Fatal(err)
		}
		p := c.popOK(t, queuePath(q)+"?autoAck=true")
		if !jsonEqual(p.Messages[0].Data, []byte(sealedPlain)) {
			t.Fatalf("imported row popped %s, want the plaintext", p.Messages[0].Data)
		}
		var d map[string]any
		wantJSON(t, c.do(t, "GET", messagePath(p.Messages[0].PartitionID, p.Messages[0].TransactionID), nil), http.StatusOK, &d)
		if d["isEncrypted"] != true {
			t.Errorf("imported row: isEncrypted %v", d["isEncrypted"])
		}
		c.push(t, item(other, json.RawMessage(blob)))
		if p := c.popOK(t, queuePath(other)+"?autoAck=true"); !jsonEqual(p.Messages[0].Data, blob) {
			t.Fatalf("Queen's blob pushed to another queue popped %s, want it opaque", p.Messages[0].Data)
		}
	})

	t.Run("copies of a sealed message keep opening", func(t *testing.T) {
		// A dead letter requeued, a transaction's push, a timer's message.
		t.Parallel()
		st := s.newStore(t)
		c := newClient(StartServer(t, st, server.Config{Version: "0.0.0-apitest", Encryption: keyring(t, testKeyNew),
			Sweeps: fastSweeps}))
		t.Cleanup(c.hc.CloseIdleConnections)
		q := uniq("enc-copies")
		c.configure(t, q, map[string]any{"encryptionEnabled": true, "retryLimit": 0})
		c.push(t, item(q, map[string]any{"n": 1}))
		p := c.popOK(t, queuePath(q))
		if a := c.ack(t, "", ackOf(p.Messages[0], "failed")); !a.DLQ {
			t.Fatalf("failed ack with retryLimit 0: %v, want dlq", a)
		}
		var retried map[string]any
		wantJSON(t, c.do(t, "POST", messagePath(p.Messages[0].PartitionID, p.Messages[0].TransactionID)+"/retry", nil),
			http.StatusOK, &retried)
		if p := c.popOK(t, queuePath(q)+"?autoAck=true"); !jsonEqual(p.Messages[0].Data, []byte(`{"n":1}`)) {
			t.Fatalf("requeued dead letter popped %s, want the plaintext", p.Messages[0].Data)
		}

		tx := c.transaction(t, map[string]any{"operations": []any{
			map[string]any{"type": "push", "items": []any{item(q, map[string]any{"n": 2})}}}}, http.StatusOK)
		if !tx.Success {
			t.Fatalf("transaction failed: %s", strp(tx.Error))
		}
		if p := c.popOK(t, queuePath(q)+"?autoAck=true"); !jsonEqual(p.Messages[0].Data, []byte(`{"n":2}`)) {
			t.Fatalf("transaction's push popped %s, want the plaintext", p.Messages[0].Data)
		}

		c.schedule(t, map[string]any{"queue": q, "payload": map[string]any{"n": 3}, "delaySeconds": 0.2})
		if p := c.waitPop(t, queuePath(q)+"?autoAck=true", 15*time.Second); !jsonEqual(p.Messages[0].Data, []byte(`{"n":3}`)) {
			t.Fatalf("timer's message popped %s, want the plaintext", p.Messages[0].Data)
		}
		for _, b := range storedPayloads(t, st, q) {
			if !crypt.Sealed(b) {
				t.Errorf("stored in plaintext: %s", b)
			}
		}
	})
}

// messageRoute is the control route of the only message of queue, found
// through the listing.
func messageRoute(t testing.TB, c *client, queue string) string {
	t.Helper()
	l := c.listMessages(t, "queue="+url.QueryEscape(queue))
	if len(l.Messages) != 1 {
		t.Fatalf("listing of %s: %d messages, want 1", queue, len(l.Messages))
	}
	return messagePath(l.Messages[0].PartitionID, l.Messages[0].TransactionID)
}

// storedPayloadsOf is storedPayloads for a queue of tenant.
func storedPayloadsOf(t testing.TB, st store.Store, tenant, queue string) [][]byte {
	t.Helper()
	res, err := st.LanePop(context.Background(), &store.LanePopParams{Queue: queue, Tenant: tenant,
		ConsumerGroup: "raw-reader", Batch: 1000, Partitions: 100, AutoAck: true, Now: time.Now()})
	if err != nil {
		t.Fatalf("read the store: %v", err)
	}
	out := make([][]byte, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.Payload
	}
	return out
}
