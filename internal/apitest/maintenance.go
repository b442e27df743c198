package apitest

import (
	"net/http"
	"strings"
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

	t.Run("FullSpoolFailsPushItemsAndKeepsWhatItHolds", func(t *testing.T) {
		t.Parallel()
		// A few records of a small payload fill 2 KiB.
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", SpoolDir: t.TempDir(), SpoolMaxBytes: 2048})
		q := uniq("spoolcap")
		var on map[string]any
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":true}`), http.StatusOK, &on)
		var buffered []pushResult
		var failed pushResult
		for n := 0; failed.Status == "" && n < 100; n++ {
			r := c.pushRaw(t, []map[string]any{item(q, map[string]any{"n": n})})[0] // 201 whatever the verdict
			switch r.Status {
			case "buffered":
				buffered = append(buffered, r)
			case "failed":
				failed = r
			default:
				t.Fatalf("push %d in maintenance with a 2 KiB spool: %+v, want buffered or failed", n, r)
			}
		}
		if len(buffered) == 0 || failed.Status != "failed" {
			t.Fatalf("%d pushes buffered and no failed verdict: the cap did not hold", len(buffered))
		}
		if !strings.Contains(failed.Error, "disk buffer is full") || !strings.Contains(failed.Error, "FILE_BUFFER_MAX_BYTES") {
			t.Fatalf("failed verdict's error %q, want it to say the disk buffer is full and name FILE_BUFFER_MAX_BYTES", failed.Error)
		}
		// A push of several items fails whole, every item with the verdict.
		for i, r := range c.pushRaw(t, []map[string]any{item(q, map[string]any{"x": 1}), item(q, map[string]any{"x": 2})}) {
			if r.Status != "failed" || r.Error != failed.Error {
				t.Fatalf("item %d of a push to a full spool: %+v, want failed with %q", i, r, failed.Error)
			}
		}
		var st map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/system/maintenance", nil), http.StatusOK, &st)
		if st["bufferedMessages"] != float64(len(buffered)) {
			t.Fatalf("maintenance status %v, want bufferedMessages %d", st, len(buffered))
		}
		mfs := c.scrape(t)
		if v, ok := series(mfs, "queen_spool_full_refusals_total"); !ok || v != 3 {
			t.Fatalf("queen_spool_full_refusals_total %v (present %v), want 3", v, ok)
		}
		if v, ok := series(mfs, "queen_spool_bytes"); !ok || v <= 0 || v > 2048 {
			t.Fatalf("queen_spool_bytes %v (present %v), want from 1 to 2048", v, ok)
		}

		// Turning maintenance off replays what the spool took, in order;
		// the failed items are nowhere.
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":false}`), http.StatusOK, &on)
		var got []popMessage
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < len(buffered) && time.Now().Before(deadline) {
			if p := c.pop(t, queuePath(q)+"?batch=100&wait=true&timeout=1000&autoAck=true"); p != nil {
				got = append(got, p.Messages...)
			}
		}
		if len(got) != len(buffered) {
			t.Fatalf("after maintenance: popped %d messages, want the %d buffered ones", len(got), len(buffered))
		}
		for i := range got {
			if got[i].ID != buffered[i].MessageID {
				t.Fatalf("message %d popped is %s, want %s (the buffered ones in order)", i, got[i].ID, buffered[i].MessageID)
			}
		}
		c.popNone(t, queuePath(q))
		// Replay freed the spool: maintenance spools again.
		wantJSON(t, c.do(t, "POST", "/api/v1/system/maintenance", `{"enabled":true}`), http.StatusOK, &on)
		if r := c.pushRaw(t, []map[string]any{item(q, map[string]any{"after": true})})[0]; r.Status != "buffered" {
			t.Fatalf("push after replay freed the spool: %+v, want buffered", r)
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
