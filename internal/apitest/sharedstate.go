package apitest

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// testSharedState covers Queen's shared-state and broker-to-broker routes:
// the three stats paths answer one document with Queen's keys, and notify
// wakes this broker's long polls of a queue, which look again and, finding
// nothing, wait on until their own timeout.
func (s *suite) testSharedState(t *testing.T) {
	t.Run("StatsHaveQueensKeys", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		c.pushN(t, uniq("shared"), "", 1)
		for _, path := range []string{"/api/v1/system/shared-state", "/internal/api/shared-state/stats",
			"/internal/api/inter-instance/stats"} {
			var st map[string]any
			wantJSON(t, c.do(t, "GET", path, nil), http.StatusOK, &st)
			for _, k := range []string{"enabled", "running", "server_id", "transport", "queue_config_cache",
				"server_health", "maintenance_mode", "pop_maintenance_mode"} {
				if _, ok := st[k]; !ok {
					t.Fatalf("%s: no %q in %v", path, k, st)
				}
			}
			tr, _ := st["transport"].(map[string]any)
			for _, k := range []string{"server_id", "session_id", "port", "peer_count", "learned_identities_count",
				"peers", "learned_identities", "messages_sent", "messages_received", "messages_dropped",
				"signature_failures", "sequence_rejections"} {
				if _, ok := tr[k]; !ok {
					t.Fatalf("%s: no transport.%q in %v", path, k, tr)
				}
			}
			cache, _ := st["queue_config_cache"].(map[string]any)
			for _, k := range []string{"size", "hits", "misses", "hit_rate"} {
				if _, ok := cache[k]; !ok {
					t.Fatalf("%s: no queue_config_cache.%q in %v", path, k, cache)
				}
			}
			want := c.engine == "postgres"
			if st["enabled"] != want || (tr["type"] == "none") == want {
				t.Fatalf("%s on %s: enabled %v, transport type %v", path, c.engine, st["enabled"], tr["type"])
			}
			if st["maintenance_mode"] != false || st["pop_maintenance_mode"] != false {
				t.Fatalf("%s: maintenance modes %v %v, want both false", path, st["maintenance_mode"], st["pop_maintenance_mode"])
			}
		}
	})

	t.Run("NotifyNeedsAQueue", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, body := range []string{`{}`, `{"queue":""}`, `{"partition":"p"}`} {
			r := c.do(t, "POST", "/internal/api/notify", body)
			if msg := wantError(t, r, http.StatusBadRequest, ""); msg != "queue is required" {
				t.Fatalf("notify %s: error %q, want %q", body, msg, "queue is required")
			}
		}
		wantError(t, c.do(t, "POST", "/internal/api/notify", `{"queue":`), http.StatusBadRequest, "bad body")
		var ok map[string]any
		wantJSON(t, c.do(t, "POST", "/internal/api/notify", `{"queue":"nowhere","partition":"p"}`), http.StatusOK, &ok)
		if len(ok) != 1 || ok["status"] != "ok" {
			t.Fatalf("notify: %v, want {\"status\":\"ok\"}", ok)
		}
	})

	t.Run("NotifiedPollWaitsOnWhenNothingCame", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("notified")
		c.pushN(t, q, "", 1)
		c.popOK(t, queuePath(q)) // the queue exists and is empty for queue mode
		const timeout = 1500 * time.Millisecond
		var wg sync.WaitGroup
		var took time.Duration
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			c.popNone(t, queuePath(q)+"?wait=true&timeout=1500")
			took = time.Since(start)
		}()
		deadline := time.Now().Add(timeout / 2)
		for time.Now().Before(deadline) {
			wantStatus(t, c.do(t, "POST", "/internal/api/notify", `{"queue":"`+q+`"}`), http.StatusOK)
			time.Sleep(50 * time.Millisecond)
		}
		wg.Wait()
		if took < timeout-100*time.Millisecond {
			t.Fatalf("a notified long poll that found nothing answered after %v, before its timeout %v", took, timeout)
		}
	})
}
