package apitest

import (
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
)

// timerVerdict is one element of the answer of POST /api/v1/timers.
type timerVerdict struct {
	Index         int     `json:"index"`
	TimerID       *string `json:"timer_id"`
	TransactionID string  `json:"transaction_id"`
	QueueName     string  `json:"queueName"`
	FireAt        *string `json:"fireAt"`
	Status        string  `json:"status"`
	Error         string  `json:"error"`
}

func (c *client) schedule(t testing.TB, items ...map[string]any) []timerVerdict {
	t.Helper()
	var out []timerVerdict
	wantJSON(t, c.do(t, "POST", "/api/v1/timers", map[string]any{"items": items}), http.StatusCreated, &out)
	if len(out) != len(items) {
		t.Fatalf("schedule: %d verdicts for %d items", len(out), len(items))
	}
	return out
}

func (c *client) timer(t testing.TB, id string) map[string]any {
	t.Helper()
	var tm map[string]any
	wantJSON(t, c.do(t, "GET", "/api/v1/timers/"+id, nil), http.StatusOK, &tm)
	return tm
}

// testTimers covers the timer routes and the timer service.
func (s *suite) testTimers(t *testing.T) {
	t.Run("FiresOnTimeInOrder", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("timer")
		v := c.schedule(t,
			map[string]any{"queue": q, "payload": map[string]any{"n": 2}, "delaySeconds": 0.6},
			map[string]any{"queue": q, "payload": map[string]any{"n": 1}, "delaySeconds": 0.3},
			map[string]any{"queue": q, "payload": map[string]any{"n": 0}, "fireAt": time.Now().Add(-time.Hour).Format(time.RFC3339Nano)})
		for i, x := range v {
			if x.Status != "scheduled" || x.TimerID == nil || x.FireAt == nil || x.QueueName != q {
				t.Fatalf("verdict %d: %+v", i, x)
			}
			wantUUIDv7(t, "timer_id", *x.TimerID)
		}
		if v[1].TransactionID != "timer:"+*v[1].TimerID {
			t.Fatalf("transaction_id %q, want timer:<id>", v[1].TransactionID)
		}
		var got []int
		waitFor(t, 10*time.Second, "three timers to fire", func() bool {
			if r := c.do(t, "GET", queuePath(q)+"?batch=10", nil); r.Status == http.StatusOK {
				p := checkPop(t, r)
				got = append(got, p.ns(t)...)
				c.ackAll(t, "", p)
			}
			return len(got) >= 3
		})
		if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
			t.Fatalf("messages in order %v, want [0 1 2]", got)
		}
		for _, x := range v {
			tm := c.timer(t, *x.TimerID)
			if tm["status"] != "fired" || tm["messageId"] == nil {
				t.Fatalf("timer after the fire: %v", tm)
			}
			if x.Index == 2 {
				continue // due an hour ago: fired at once
			}
			fireAt := wantTimestamp(t, "fireAt", tm["fireAt"].(string))
			firedAt := wantTimestamp(t, "firedAt", tm["firedAt"].(string))
			// The service wakes at the due time; 250 ms is the promise, the
			// rest is slack for a loaded test machine.
			if late := firedAt.Sub(fireAt); late < 0 || late > time.Second {
				t.Errorf("timer %d fired %v after its time, want within 250ms", x.Index, late)
			} else {
				t.Logf("timer %d fired %v after its time", x.Index, late)
			}
		}
	})

	t.Run("IdempotentAndDedupedLikeAPush", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("timer-dedup")
		tm := map[string]any{"queue": q, "partition": "p", "payload": 1, "delaySeconds": 3600, "transactionId": "order-42"}
		a := c.schedule(t, tm, tm)
		b := c.schedule(t, tm)
		if a[0].Status != "scheduled" || a[1].Status != "duplicate" || b[0].Status != "duplicate" ||
			*a[1].TimerID != *a[0].TimerID || *b[0].TimerID != *a[0].TimerID {
			t.Fatalf("scheduling the same transactionId: %+v %+v", a, b)
		}
		// A timer whose transactionId a push already stored fires as a
		// duplicate: the queue keeps one message.
		pushed := c.push(t, item(q, 1, "partition", "p", "transactionId", "pay-7"))
		v := c.schedule(t, map[string]any{"queue": q, "partition": "p", "payload": 2, "delaySeconds": 0, "transactionId": "pay-7"})
		waitFor(t, 10*time.Second, "the timer to fire", func() bool { return c.timer(t, *v[0].TimerID)["status"] == "fired" })
		if tm := c.timer(t, *v[0].TimerID); tm["messageId"] != pushed[0].MessageID {
			t.Fatalf("duplicate fire: messageId %v, want the pushed %s", tm["messageId"], pushed[0].MessageID)
		}
		p := c.popOK(t, partitionPath(q, "p")+"?batch=10")
		if len(p.Messages) != 1 || p.Messages[0].ID != pushed[0].MessageID {
			t.Fatalf("queue after a duplicate fire: %+v", p.Messages)
		}
	})

	t.Run("ListGetCancel", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("timer-cancel")
		v := c.schedule(t, map[string]any{"queue": q, "payload": 1, "delaySeconds": 3600},
			map[string]any{"queue": q, "payload": 2, "delaySeconds": 0})
		var list struct {
			Timers     []map[string]any `json:"timers"`
			Pagination map[string]any   `json:"pagination"`
		}
		wantJSON(t, c.do(t, "GET", "/api/v1/timers?queue="+q+"&status=scheduled", nil), http.StatusOK, &list)
		waitFor(t, 10*time.Second, "the due timer to fire", func() bool { return c.timer(t, *v[1].TimerID)["status"] == "fired" })
		wantJSON(t, c.do(t, "GET", "/api/v1/timers?queue="+q, nil), http.StatusOK, &list)
		if len(list.Timers) != 2 || list.Pagination["total"] != float64(2) {
			t.Fatalf("list: %+v", list)
		}
		var ok map[string]any
		wantJSON(t, c.do(t, "DELETE", "/api/v1/timers/"+*v[0].TimerID, nil), http.StatusOK, &ok)
		if ok["cancelled"] != true || c.timer(t, *v[0].TimerID)["status"] != "cancelled" {
			t.Fatalf("cancel: %v", ok)
		}
		wantPlainError(t, c.do(t, "DELETE", "/api/v1/timers/"+*v[1].TimerID, nil), http.StatusConflict, "timer already fired")
		wantPlainError(t, c.do(t, "GET", "/api/v1/timers/0192f0a0-0000-7000-8000-000000000000", nil), http.StatusNotFound, "Timer not found")
		wantPlainError(t, c.do(t, "DELETE", "/api/v1/timers/0192f0a0-0000-7000-8000-000000000000", nil), http.StatusNotFound, "Timer not found")
		wantError(t, c.do(t, "GET", "/api/v1/timers?status=done", nil), http.StatusBadRequest, "status must be")
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, tc := range []struct{ body, msg string }{
			{`{"items":[{"queue":"q","payload":1}]}`, "items[0]: exactly one of fireAt and delaySeconds is required"},
			{`{"items":[{"queue":"q","payload":1,"delaySeconds":1,"fireAt":"2030-01-01T00:00:00Z"}]}`, "items[0]: exactly one"},
			{`{"items":[{"queue":"q","payload":1,"delaySeconds":31536001}]}`, "items[0]: fires more than 31536000 seconds ahead"},
			{`{"items":[{"queue":"q","payload":1,"fireAt":"tomorrow"}]}`, "bad body: items[0].fireAt: expected an RFC 3339 time"},
			{`{"items":[{"payload":1,"delaySeconds":1}]}`, "bad body: items[0].queue is missing"},
			{`{"items":[]}`, "items array cannot be empty"},
		} {
			wantPlainError(t, c.do(t, "POST", "/api/v1/timers", tc.body), http.StatusBadRequest, tc.msg)
		}
	})

	t.Run("WriteOnlySchedules", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{Tokens: apiTokens(t, "")}})
		q := uniq("timer-wo")
		wo := c.with("Authorization", bearer(apiTokenWriteOnly))
		wo.schedule(t, map[string]any{"queue": q, "payload": 1, "delaySeconds": 60})
		wantPlainError(t, wo.do(t, "GET", "/api/v1/timers", nil), http.StatusForbidden, "Insufficient permissions")
		ro := c.with("Authorization", bearer(apiTokenReadOnly))
		wantPlainError(t, ro.do(t, "POST", "/api/v1/timers", `{"items":[]}`), http.StatusForbidden, "Insufficient permissions")
		wantStatus(t, ro.do(t, "GET", "/api/v1/timers", nil), http.StatusOK)
	})
}
