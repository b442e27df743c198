package apitest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
)

type ephVerdict struct {
	Index     int     `json:"index"`
	MessageID *string `json:"message_id"`
	QueueName string  `json:"queueName"`
	Status    string  `json:"status"`
	Error     string  `json:"error"`
}

type ephPopResp struct {
	Queue    string `json:"queue"`
	Messages []struct {
		ID        string `json:"id"`
		Data      any    `json:"data"`
		CreatedAt string `json:"createdAt"`
	} `json:"messages"`
}

func (c *client) ephCreate(t testing.TB, body string) map[string]any {
	t.Helper()
	var q map[string]any
	wantJSON(t, c.do(t, "POST", "/api/v1/ephemeral", body), http.StatusCreated, &q)
	return q
}

func (c *client) ephPush(t testing.TB, items ...map[string]any) []ephVerdict {
	t.Helper()
	var out []ephVerdict
	wantJSON(t, c.do(t, "POST", "/api/v1/ephemeral/push", map[string]any{"items": items}), http.StatusCreated, &out)
	return out
}

// testEphemeral covers the ephemeral-queue routes.
func (s *suite) testEphemeral(t *testing.T) {
	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		minted := c.ephCreate(t, `{}`)
		name, _ := minted["queue"].(string)
		if !strings.HasPrefix(name, "eph-") || minted["ttlSeconds"] != float64(300) {
			t.Fatalf("create without a name: %v", minted)
		}
		wantUUIDv7(t, "minted name", strings.TrimPrefix(name, "eph-"))
		q := uniq("reply")
		c.ephCreate(t, fmt.Sprintf(`{"name":%q,"ttlSeconds":60,"maxMessages":2}`, q))
		wantPlainError(t, c.do(t, "POST", "/api/v1/ephemeral", fmt.Sprintf(`{"name":%q}`, q)), http.StatusConflict,
			"ephemeral queue already exists")
		v := c.ephPush(t, map[string]any{"queue": q, "payload": 1}, map[string]any{"queue": q, "payload": 2},
			map[string]any{"queue": q, "payload": 3}, map[string]any{"queue": "nope", "payload": 4})
		if v[0].Status != "queued" || v[0].MessageID == nil || v[2].Status != "failed" || v[2].Error != "queue full" ||
			v[3].Error != "queue not found" {
			t.Fatalf("push verdicts %+v", v)
		}
		var list struct {
			Queues []map[string]any `json:"queues"`
		}
		wantJSON(t, c.do(t, "GET", "/api/v1/ephemeral", nil), http.StatusOK, &list)
		if len(list.Queues) != 2 {
			t.Fatalf("list: %+v", list)
		}
		for _, lq := range list.Queues {
			if lq["queue"] == q && lq["depth"] != float64(2) {
				t.Fatalf("depth of %s: %v", q, lq)
			}
		}
		var p ephPopResp
		wantJSON(t, c.do(t, "GET", "/api/v1/ephemeral/"+q+"/pop?batch=5", nil), http.StatusOK, &p)
		if len(p.Messages) != 2 || p.Messages[0].ID != *v[0].MessageID || p.Messages[1].Data != float64(2) {
			t.Fatalf("pop: %+v", p)
		}
		wantNoContent(t, c.do(t, "GET", "/api/v1/ephemeral/"+q+"/pop", nil))
		wantPlainError(t, c.do(t, "GET", "/api/v1/ephemeral/nope/pop", nil), http.StatusNotFound, "Ephemeral queue not found")
		var ka map[string]any
		wantJSON(t, c.do(t, "POST", "/api/v1/ephemeral/"+q+"/keepalive", nil), http.StatusOK, &ka)
		if ka["queue"] != q || ka["expiresAt"] == nil {
			t.Fatalf("keepalive: %v", ka)
		}
		wantStatus(t, c.do(t, "POST", "/api/v1/ephemeral/nope/keepalive", nil), http.StatusNotFound)
		var del map[string]any
		wantJSON(t, c.do(t, "DELETE", "/api/v1/ephemeral/"+q, nil), http.StatusOK, &del)
		if del["deleted"] != true {
			t.Fatalf("delete: %v", del)
		}
		wantJSON(t, c.do(t, "DELETE", "/api/v1/ephemeral/"+q, nil), http.StatusOK, &del)
		if del["deleted"] != false {
			t.Fatalf("second delete: %v", del)
		}
		wantError(t, c.do(t, "POST", "/api/v1/ephemeral", `{"ttlSeconds":86401}`), http.StatusBadRequest, "ttlSeconds")
		wantError(t, c.do(t, "POST", "/api/v1/ephemeral", `{"name":"a b"}`), http.StatusBadRequest, "queue name")
	})

	t.Run("LongPoll", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("eph-poll")
		c.ephCreate(t, fmt.Sprintf(`{"name":%q}`, q))
		start := time.Now()
		wantNoContent(t, c.do(t, "GET", "/api/v1/ephemeral/"+q+"/pop?wait=true&timeout=300", nil))
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Fatalf("empty long poll answered after %v, want its 300ms timeout", d)
		}
		done := make(chan *response, 1)
		go func() {
			r, _ := c.send(t.Context(), "GET", "/api/v1/ephemeral/"+q+"/pop?wait=true&timeout=20000", nil)
			done <- r
		}()
		pushed := time.AfterFunc(100*time.Millisecond, func() { c.ephPush(t, map[string]any{"queue": q, "payload": "hi"}) })
		defer pushed.Stop()
		select {
		case r := <-done:
			var p ephPopResp
			wantJSON(t, r, http.StatusOK, &p)
			if len(p.Messages) != 1 || p.Messages[0].Data != "hi" {
				t.Fatalf("long poll: %+v", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a push did not wake the long poll")
		}
	})

	t.Run("AtMostOnceUnder8Poppers", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("eph-race")
		c.ephCreate(t, fmt.Sprintf(`{"name":%q,"maxMessages":1000}`, q))
		const n = 200
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = map[string]any{"queue": q, "payload": i}
		}
		c.ephPush(t, items...)
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					r, err := c.send(t.Context(), "GET", "/api/v1/ephemeral/"+q+"/pop?batch=3", nil)
					if err != nil {
						t.Errorf("pop: %v", err)
						return
					}
					if r.Status == http.StatusNoContent {
						return
					}
					var p ephPopResp
					wantJSON(t, r, http.StatusOK, &p)
					mu.Lock()
					for _, m := range p.Messages {
						seen[m.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("%d distinct messages delivered, want %d", len(seen), n)
		}
		for id, k := range seen {
			if k != 1 {
				t.Fatalf("message %s delivered %d times", id, k)
			}
		}
	})

	t.Run("Roles", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{Tokens: apiTokens(t, "")}})
		q := uniq("eph-roles")
		rw := c.with("Authorization", bearer(apiTokenReadWrite))
		rw.ephCreate(t, fmt.Sprintf(`{"name":%q}`, q))
		wo := c.with("Authorization", bearer(apiTokenWriteOnly))
		if v := wo.ephPush(t, map[string]any{"queue": q, "payload": 1}); v[0].Status != "queued" {
			t.Fatalf("write-only push: %+v", v)
		}
		wantPlainError(t, wo.do(t, "GET", "/api/v1/ephemeral/"+q+"/pop", nil), http.StatusForbidden, "Insufficient permissions")
		wantPlainError(t, wo.do(t, "POST", "/api/v1/ephemeral", `{}`), http.StatusForbidden, "Insufficient permissions")
		wantStatus(t, rw.do(t, "GET", "/api/v1/ephemeral/"+q+"/pop", nil), http.StatusOK)
	})
}
