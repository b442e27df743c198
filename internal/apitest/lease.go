package apitest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"
)

// extendResp is the answer of a lease extension.
type extendResp struct {
	Renewed   int     `json:"renewed"`
	ExpiresAt *string `json:"expiresAt"`
}

// extend posts body to the lease's extend route and checks the answer's shape.
func (c *client) extend(t testing.TB, leaseID string, body any) extendResp {
	t.Helper()
	r := c.do(t, "POST", "/api/v1/lease/"+url.PathEscape(leaseID)+"/extend", body)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what, raw, "renewed", "expiresAt")
	var e extendResp
	_ = json.Unmarshal(r.Body, &e)
	if (e.Renewed == 0) != (e.ExpiresAt == nil) {
		t.Fatalf("%s: renewed %d with expiresAt %s", r.what, e.Renewed, strp(e.ExpiresAt))
	}
	return e
}

// testLease covers POST /api/v1/lease/:leaseId/extend (spec §6).
func (s *suite) testLease(t *testing.T) {
	t.Run("extend by seconds", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("extend")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		before := time.Now()
		e := c.extend(t, p.lease(), map[string]any{"seconds": 120})
		after := time.Now()
		if e.Renewed != 1 || e.ExpiresAt == nil {
			t.Fatalf("extend: renewed %d expiresAt %s, want 1 and a timestamp", e.Renewed, strp(e.ExpiresAt))
		}
		// The default leaseTime is 300 s and an extension never shortens a
		// lease, so the deadline is now+300 s (it would be now+120 s if
		// extensions could shorten). Allow for clock granularity either side.
		exp := wantTimestamp(t, "expiresAt", *e.ExpiresAt)
		if exp.Before(before.Add(119*time.Second)) || exp.After(after.Add(301*time.Second)) {
			t.Fatalf("expiresAt %s is not within [now+120s, now+300s]", exp)
		}
	})

	t.Run("extend with an empty body defaults to 60 seconds", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("extend-empty")
		c.configure(t, q, map[string]any{"leaseTime": 30}) // shorter than the 60 s default extension
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		for _, body := range []any{rawBody{data: ""}, `{}`} {
			before := time.Now()
			e := c.extend(t, p.lease(), body)
			if e.Renewed != 1 {
				t.Fatalf("extend with body %v: renewed %d, want 1", body, e.Renewed)
			}
			exp := wantTimestamp(t, "expiresAt", *e.ExpiresAt)
			if exp.Before(before.Add(59*time.Second)) || exp.After(time.Now().Add(61*time.Second)) {
				t.Fatalf("extend with body %v: expiresAt %s, want about now+60s", body, exp)
			}
		}
	})

	t.Run("unknown lease renews nothing", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, id := range []string{"0197f2b2-0000-7000-8000-000000000001", "not-a-lease"} {
			r := c.do(t, "POST", "/api/v1/lease/"+id+"/extend", map[string]any{"seconds": 30})
			var m map[string]any
			wantJSON(t, r, http.StatusOK, &m)
			if !reflect.DeepEqual(m, map[string]any{"renewed": 0.0, "expiresAt": nil}) {
				t.Fatalf("%s: body %s, want {\"renewed\":0,\"expiresAt\":null}", r.what, r.Body)
			}
		}
	})

	t.Run("released lease renews nothing", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("released")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		c.ackAll(t, "", p)
		if e := c.extend(t, p.lease(), map[string]any{"seconds": 30}); e.Renewed != 0 {
			t.Fatalf("extend of a released lease: renewed %d, want 0", e.Renewed)
		}
	})

	t.Run("multi-partition lease renews every lane", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("extend-multi")
		c.push(t, item(q, 1, "partition", "a"), item(q, 2, "partition", "b"), item(q, 3, "partition", "c"))
		p := c.popOK(t, queuePath(q)+"?partitions=3&batch=30")
		lanes := map[string]bool{}
		for _, m := range p.Messages {
			lanes[m.PartitionID] = true
		}
		if len(lanes) != 3 {
			t.Fatalf("pop partitions=3: %d lanes, want 3", len(lanes))
		}
		if e := c.extend(t, p.lease(), map[string]any{"seconds": 60}); e.Renewed != 3 {
			t.Fatalf("extend of a 3-lane lease: renewed %d, want 3", e.Renewed)
		}
	})

	t.Run("an extended lease outlives its leaseTime", func(t *testing.T) {
		t.Parallel()
		clk := newClock(time.Now())
		c := s.serverAt(t, clk)
		q := uniq("outlive")
		c.configure(t, q, map[string]any{"leaseTime": 1})
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		if e := c.extend(t, p.lease(), map[string]any{"seconds": 30}); e.Renewed != 1 {
			t.Fatalf("extend: renewed %d, want 1", e.Renewed)
		}
		clk.Advance(1500 * time.Millisecond) // past the original 1 s lease
		c.popNone(t, queuePath(q))
		wantAck(t, "ack after the original lease time", c.ack(t, "", ackOf(p.Messages[0], "completed")), true, false, "")
	})
}
