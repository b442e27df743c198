package apitest

import (
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
)

// testMaintenance covers the maintenance routes: push maintenance sends
// every push to the disk spool (201 "buffered") and replays it when turned
// off; pop maintenance answers every pop with a bare 204.
func (s *suite) testMaintenance(t *testing.T) {
	spooled := func(t *testing.T) *client {
		return s.serverWith(t, server.Config{Version: "0.0.0-apitest", SpoolDir: t.TempDir()})
	}

	t.Run("PushMaintenanceBuffersThenReplays", func(t *testing.T) {
		t.Parallel()
		c := spooled(t)
		q := uniq("maint")
		var on map[string]any
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":true}`), http.StatusOK, &on)
		if on["maintenanceMode"] != true {
			t.Fatalf("maintenance on: body %v, want maintenanceMode true", on)
		}
		res := c.pushRaw(t, []map[string]any{item(q, map[string]any{"n": 1}), item(q, map[string]any{"n": 2})})
		for i, r := range res {
			if r.Status != "buffered" || r.MessageID == "" {
				t.Fatalf("push item %d in maintenance: %+v, want status buffered with a message_id", i, r)
			}
		}
		var st map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/system/maintenance", nil), http.StatusOK, &st)
		if st["maintenanceMode"] != true || st["bufferedMessages"] != float64(2) {
			t.Fatalf("maintenance status %v, want maintenanceMode true and bufferedMessages 2", st)
		}
		c.popNone(t, queuePath(q)) // buffered is not yet in the queue

		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":false}`), http.StatusOK, &on)
		p := c.waitPop(t, queuePath(q)+"?batch=10", 10*time.Second)
		if len(p.Messages) != 2 || p.Messages[0].ID != res[0].MessageID || p.Messages[1].ID != res[1].MessageID {
			t.Fatalf("after maintenance: popped %d messages %+v, want the 2 buffered ones in order with their ids", len(p.Messages), p.Messages)
		}
	})

	t.Run("PopMaintenanceAnswers204", func(t *testing.T) {
		t.Parallel()
		c := spooled(t)
		q := uniq("popmaint")
		c.pushN(t, q, "", 1)
		var on map[string]any
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance/pop", `{"enabled":true}`), http.StatusOK, &on)
		if on["popMaintenanceMode"] != true {
			t.Fatalf("pop maintenance on: body %v", on)
		}
		start := time.Now()
		c.popNone(t, queuePath(q)+"?wait=true&timeout=5000")
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("a long poll in pop maintenance took %v, want an immediate 204", d)
		}
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance/pop", `{"enabled":false}`), http.StatusOK, &on)
		if p := c.popOK(t, queuePath(q)); len(p.Messages) != 1 {
			t.Fatalf("after pop maintenance: %d messages, want 1", len(p.Messages))
		}
	})

	t.Run("EnabledIsRequired", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		r := c.do(t, "POST", "/api/v1/system/maintenance", `{}`)
		if msg := wantError(t, r, http.StatusBadRequest, ""); msg != "enabled (boolean) is required" {
			t.Fatalf("error %q, want %q", msg, "enabled (boolean) is required")
		}
	})
}
