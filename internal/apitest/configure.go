package apitest

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

// defaultOptions are the options of a queue nobody configured (spec §9.1).
func defaultOptions() map[string]any {
	return map[string]any{
		"priority": 0.0, "leaseTime": 300.0, "retryLimit": 3.0, "retryDelay": 0.0, "maxSize": 0.0, "ttl": 3600.0,
		"deadLetterQueue": false, "dlqAfterMaxRetries": false, "delayedProcessing": 0.0, "windowBuffer": 0.0,
		"retentionSeconds": 0.0, "completedRetentionSeconds": 0.0, "retentionEnabled": false,
		"encryptionEnabled": false, "maxWaitTimeSeconds": 0.0,
	}
}

// wantOptions fails unless got["options"] equals defaults overridden by want.
func wantOptions(t testing.TB, got map[string]any, want map[string]any) {
	t.Helper()
	exp := defaultOptions()
	for k, v := range want {
		exp[k] = v
	}
	opts, ok := got["options"].(map[string]any)
	if !ok {
		t.Fatalf("configure: options is not an object: %v", got)
	}
	if !reflect.DeepEqual(opts, exp) {
		t.Fatalf("configure: options\n%v\nwant\n%v", opts, exp)
	}
}

// testConfigure covers POST /api/v1/configure and queue deletion (spec §9).
func (s *suite) testConfigure(t *testing.T) {
	t.Run("configure answers the stored configuration", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("cfg")
		m := c.configure(t, q, map[string]any{"leaseTime": 10, "retryLimit": 2, "priority": 3}, "namespace", "n", "task", "t")
		wantHasKeys(t, "configure", m, "configured", "queue", "namespace", "task", "queueId", "partitionId", "options")
		if m["configured"] != true || m["queue"] != q || m["namespace"] != "n" || m["task"] != "t" {
			t.Fatalf("configure: %v, want configured:true queue %q namespace n task t", m, q)
		}
		qid, _ := m["queueId"].(string)
		pid, _ := m["partitionId"].(string)
		wantUUIDv7(t, "queueId", qid)
		wantUUIDv7(t, "partitionId", pid)
		wantOptions(t, m, map[string]any{"leaseTime": 10.0, "retryLimit": 2.0, "priority": 3.0})

		// Configure created the Default partition: a push lands in it.
		c.pushN(t, q, "", 1)
		if p := c.popOK(t, queuePath(q)); p.PartitionID != pid {
			t.Fatalf("pushed message in partition %s, configure reported Default as %s", p.PartitionID, pid)
		}
	})

	t.Run("configure with every option", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("cfg-all")
		opts := map[string]any{
			"priority": 9.0, "leaseTime": 45.0, "retryLimit": 7.0, "retryDelay": 250.0, "maxSize": 1000.0, "ttl": 60.0,
			"deadLetterQueue": true, "dlqAfterMaxRetries": true, "delayedProcessing": 0.0, "windowBuffer": 0.0,
			"retentionSeconds": 86400.0, "completedRetentionSeconds": 3600.0, "retentionEnabled": true,
			"encryptionEnabled": false, "maxWaitTimeSeconds": 600.0,
		}
		wantOptions(t, c.configure(t, q, opts), opts)
	})

	t.Run("configure is a full replace", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("cfg-replace")
		first := c.configure(t, q, map[string]any{"leaseTime": 10, "retryLimit": 2, "priority": 3})
		second := c.configure(t, q, map[string]any{"priority": 7})
		wantOptions(t, second, map[string]any{"priority": 7.0})
		if first["queueId"] != second["queueId"] || first["partitionId"] != second["partitionId"] {
			t.Fatalf("reconfiguring changed ids: %v/%v then %v/%v", first["queueId"], first["partitionId"], second["queueId"], second["partitionId"])
		}
		wantOptions(t, c.configure(t, q, nil), nil)
	})

	t.Run("configure an existing queue keeps its messages", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("cfg-existing")
		c.pushN(t, q, "", 2)
		c.configure(t, q, map[string]any{"retryLimit": 5})
		if got := c.popOK(t, queuePath(q)+"?batch=10").ns(t); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("pop after configure: %v, want [0 1]", got)
		}
	})

	t.Run("configure without queue is 400", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, body := range []string{`{}`, `{"options":{"leaseTime":10}}`, `{"queue":5}`} {
			wantError(t, c.do(t, "POST", "/api/v1/configure", body), http.StatusBadRequest, "")
		}
	})

	t.Run("wrong-typed option is 400 bad body", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("cfg-typed")
		for _, body := range []string{
			`{"queue":"` + q + `","options":{"leaseTime":"abc"}}`,
			`{"queue":"` + q + `","options":{"encryptionEnabled":"yes"}}`,
			`{"queue":"` + q + `","options":"fast"}`,
		} {
			wantPlainError(t, c.do(t, "POST", "/api/v1/configure", body), http.StatusBadRequest, "bad body: ")
		}
	})

	t.Run("delete a queue", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("del")
		c.push(t, item(q, map[string]any{"n": 0}, "transactionId", "t-0"), item(q, map[string]any{"n": 1}, "partition", "p2"))
		path := "/api/v1/resources/queues/" + url.PathEscape(q)

		var m map[string]any
		wantJSON(t, c.do(t, "DELETE", path, nil), http.StatusOK, &m)
		if !reflect.DeepEqual(m, map[string]any{"deleted": true, "queue": q}) {
			t.Fatalf("delete: %v, want {\"deleted\":true,\"queue\":%q}", m, q)
		}
		c.popNone(t, queuePath(q)+"?batch=10&partitions=10")

		m = nil
		wantJSON(t, c.do(t, "DELETE", path, nil), http.StatusOK, &m)
		wantKeys(t, "second delete", m, "deleted", "queue", "message")
		if m["deleted"] != false || m["queue"] != q {
			t.Fatalf("second delete: %v, want deleted:false queue %q", m, q)
		}
		if msg, _ := m["message"].(string); msg == "" {
			t.Fatalf("second delete: message %v, want a non-empty string", m["message"])
		}

		// The queue starts afresh: its old transactionIds are free again.
		res := c.push(t, item(q, map[string]any{"n": 5}, "transactionId", "t-0"))
		if got := c.popOK(t, queuePath(q)+"?batch=10").ns(t); !reflect.DeepEqual(got, []int{5}) || res[0].Status != "queued" {
			t.Fatalf("pop after re-creating the queue: %v, want [5]", got)
		}
	})
}
