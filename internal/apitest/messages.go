package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// listedKeys are the keys of one message of GET /api/v1/messages.
var listedKeys = []string{"id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace", "task",
	"status", "queueStatus", "busStatus", "traceId", "producerSub", "queuePriority", "createdAt", "leaseExpiresAt"}

// listedMessage is one message of a listing.
type listedMessage struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	QueuePath     string `json:"queuePath"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Status        string `json:"status"`
	QueueStatus   string `json:"queueStatus"`
	BusStatus     struct {
		ConsumedBy  int `json:"consumedBy"`
		TotalGroups int `json:"totalGroups"`
	} `json:"busStatus"`
	LeaseExpiresAt *string `json:"leaseExpiresAt"`
	CreatedAt      string  `json:"createdAt"`
}

type messageList struct {
	Messages []listedMessage `json:"messages"`
	Mode     struct {
		HasQueueMode   bool   `json:"hasQueueMode"`
		BusGroupsCount int    `json:"busGroupsCount"`
		Type           string `json:"type"`
	} `json:"mode"`
}

// listMessages lists messages with the given query and checks the shape of
// the answer: exactly the documented keys on the envelope, on every message
// and on mode.
func (c *client) listMessages(t testing.TB, query string) *messageList {
	t.Helper()
	r := c.do(t, "GET", "/api/v1/messages?"+query, nil)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what+" envelope", raw, "messages", "mode")
	mode, _ := raw["mode"].(map[string]any)
	wantKeys(t, r.what+" mode", mode, "hasQueueMode", "busGroupsCount", "type")
	msgs, _ := raw["messages"].([]any)
	if msgs == nil {
		t.Fatalf("%s: messages is not an array; body %s", r.what, r.Body)
	}
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		wantKeys(t, fmt.Sprintf("%s message %d", r.what, i), mm, listedKeys...)
		bus, _ := mm["busStatus"].(map[string]any)
		wantKeys(t, fmt.Sprintf("%s message %d busStatus", r.what, i), bus, "consumedBy", "totalGroups")
		wantUUIDv7(t, "id", mm["id"].(string))
		wantUUIDv7(t, "partitionId", mm["partitionId"].(string))
		wantTimestamp(t, "createdAt", mm["createdAt"].(string))
	}
	var out messageList
	_ = json.Unmarshal(r.Body, &out)
	return &out
}

func (l *messageList) txns() []string {
	out := make([]string, len(l.Messages))
	for i, m := range l.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// pushSeries pushes n messages to queue/partition one at a time, each in a
// later millisecond than the one before, and returns their transactionIds.
func (c *client) pushSeries(t testing.TB, queue, partition string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		start := time.Now()
		res := c.push(t, item(queue, map[string]any{"n": i}, "partition", partition))
		out[i] = res[0].TransactionID
		nextMillisecond(start)
	}
	return out
}

// newestFirst returns txns reversed.
func newestFirst(txns ...string) []string {
	out := slices.Clone(txns)
	slices.Reverse(out)
	return out
}

// messagePath is the control route of one message.
func messagePath(partitionID, txn string) string {
	return "/api/v1/messages/" + partitionID + "/" + url.PathEscape(txn)
}

// testMessages covers GET /api/v1/messages, one message's read, delete,
// retry and move to the DLQ (management.md §6).
func (s *suite) testMessages(t *testing.T) {
	t.Run("listing: exact keys, newest first, status per message", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("list")
		txns := c.pushSeries(t, q, "p", 3)
		p := c.popOK(t, partitionPath(q, "p")+"?batch=2")
		c.ack(t, "", ackOf(p.Messages[0], "completed"))
		l := c.listMessages(t, "queue="+url.QueryEscape(q))
		if got := l.txns(); !slices.Equal(got, newestFirst(txns...)) {
			t.Fatalf("listing %v, want newest first %v", got, newestFirst(txns...))
		}
		for i, want := range []string{"pending", "processing", "completed"} {
			m := l.Messages[i]
			if m.Status != want || m.QueueStatus != want {
				t.Errorf("message %d: status %q queueStatus %q, want %q", i, m.Status, m.QueueStatus, want)
			}
			if m.Queue != q || m.Partition != "p" || m.QueuePath != q+"/p" || m.PartitionID != p.PartitionID {
				t.Errorf("message %d: %+v", i, m)
			}
		}
		if l.Messages[1].LeaseExpiresAt == nil || l.Messages[0].LeaseExpiresAt != nil {
			t.Errorf("leaseExpiresAt: processing %v, pending %v", l.Messages[1].LeaseExpiresAt, l.Messages[0].LeaseExpiresAt)
		}
		if l.Mode.Type != "queue" || !l.Mode.HasQueueMode || l.Mode.BusGroupsCount != 0 {
			t.Errorf("mode %+v, want queue", l.Mode)
		}
	})

	t.Run("listing: busStatus with two groups at different cursors", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("bus")
		txns := c.pushSeries(t, q, "", 3)
		for g, n := range map[string]int{"g1": 3, "g2": 1} {
			p := c.popOK(t, queuePath(q)+fmt.Sprintf("?batch=%d&consumerGroup=%s", n, g))
			c.ackAll(t, g, p)
		}
		l := c.listMessages(t, "queue="+url.QueryEscape(q))
		if got := l.txns(); !slices.Equal(got, newestFirst(txns...)) {
			t.Fatalf("listing %v", got)
		}
		for i, want := range []int{1, 1, 2} { // newest first
			m := l.Messages[i]
			status := "pending"
			if want == 2 {
				status = "completed"
			}
			if m.BusStatus.ConsumedBy != want || m.BusStatus.TotalGroups != 2 || m.Status != status {
				t.Errorf("message %d: busStatus %+v status %s, want %d of 2, %s", i, m.BusStatus, m.Status, want, status)
			}
		}
		if l.Mode.Type != "bus" || l.Mode.BusGroupsCount != 2 || l.Mode.HasQueueMode {
			t.Errorf("mode %+v, want bus with 2 groups", l.Mode)
		}
	})

	t.Run("listing: filters, window and pages", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("ns")
		qa, qb := ns+".orders", ns+".mail"
		start := time.Now().UTC()
		a := c.pushSeries(t, qa, "p1", 3)
		b := c.pushSeries(t, qb, "p2", 2)
		all := newestFirst(append(slices.Clone(a), b...)...)
		// "to" counts its whole minute: checked only when the pushes did not
		// cross into the next minute.
		sameMinute := time.Now().UTC().Truncate(time.Minute).Equal(start.Truncate(time.Minute))
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"ns=" + url.QueryEscape(ns), all},
			{"ns=" + url.QueryEscape(ns) + "&task=mail", newestFirst(b...)},
			{"queue=" + url.QueryEscape(qa), newestFirst(a...)},
			{"queue=" + url.QueryEscape(qa) + "&partition=p1", newestFirst(a...)},
			{"queue=" + url.QueryEscape(qa) + "&partition=p2", nil},
			{"ns=" + url.QueryEscape(ns) + "&partition=p2", newestFirst(b...)},
			{"ns=" + url.QueryEscape(ns) + "&status=pending", all},
			{"ns=" + url.QueryEscape(ns) + "&status=completed", nil},
			{"ns=" + url.QueryEscape(ns) + "&from=" + start.Add(time.Hour).Format(time.RFC3339), nil},
			{"ns=" + url.QueryEscape(ns) + "&to=" + start.Add(-2*time.Minute).Format(time.RFC3339Nano), nil},
			{"ns=" + url.QueryEscape(ns) + "&from=" + start.Add(-time.Minute).Format(time.RFC3339) +
				"&to=" + start.Format(time.RFC3339Nano), all},
			{"queue=nope-" + ns, nil},
		} {
			got := c.listMessages(t, tc.query).txns()
			if strings.Contains(tc.query, "&to=") && len(tc.want) > 0 && !sameMinute {
				continue
			}
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
			}
		}
		var pages []string
		for off := 0; off < 10; off += 2 {
			pages = append(pages, c.listMessages(t, fmt.Sprintf("ns=%s&limit=2&offset=%d", url.QueryEscape(ns), off)).txns()...)
		}
		if !slices.Equal(pages, all) {
			t.Errorf("pages of 2: %v, want %v", pages, all)
		}
		// Queen's CLI lists with --limit 10000 (and more): served, the
		// largest clamped to the broker's page, never refused.
		for _, limit := range []string{"10000", "100000"} {
			if got := c.listMessages(t, "ns="+url.QueryEscape(ns)+"&limit="+limit).txns(); !slices.Equal(got, all) {
				t.Errorf("limit=%s: %v, want %v", limit, got, all)
			}
		}
	})

	t.Run("one message: exact keys, payload, 404 and 400", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("get")
		c.configure(t, q, map[string]any{"retryLimit": 5, "priority": 3})
		c.push(t, item(q, map[string]any{"hello": "world"}, "transactionId", "tx/1", "traceId", "trace-9"))
		p := c.popOK(t, queuePath(q))
		m := p.Messages[0]
		r := c.do(t, "GET", messagePath(m.PartitionID, "tx/1"), nil)
		var raw map[string]any
		wantJSON(t, r, http.StatusOK, &raw)
		wantKeys(t, "message", raw, "id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace",
			"task", "status", "payload", "isEncrypted", "traceId", "producerSub", "createdAt", "errorMessage",
			"retryCount", "leaseExpiresAt", "queueConfig", "mode", "consumerGroups")
		wantKeys(t, "queueConfig", raw["queueConfig"].(map[string]any), "leaseTime", "retryLimit", "retryDelay", "ttl", "priority")
		wantKeys(t, "mode", raw["mode"].(map[string]any), "hasQueueMode", "busGroupsCount", "consumedByGroups", "type")
		groups := raw["consumerGroups"].([]any)
		if len(groups) != 1 {
			t.Fatalf("consumerGroups %v", groups)
		}
		wantKeys(t, "consumer group", groups[0].(map[string]any), "name", "consumed", "leaseExpiresAt")
		var d struct {
			ID, TransactionID, Status, Queue string
			Payload                          json.RawMessage
			TraceID                          string
			LeaseExpiresAt                   *string
			QueueConfig                      struct{ RetryLimit, Priority int }
		}
		_ = json.Unmarshal(r.Body, &d)
		if d.ID != m.ID || d.TransactionID != "tx/1" || d.Status != "processing" || d.Queue != q ||
			!jsonEqual(d.Payload, []byte(`{"hello":"world"}`)) || d.TraceID != "trace-9" || d.LeaseExpiresAt == nil ||
			d.QueueConfig.RetryLimit != 5 || d.QueueConfig.Priority != 3 {
			t.Errorf("message: %s", r.Body)
		}
		if got := groups[0].(map[string]any); got["name"] != queueMode || got["consumed"] != false || got["leaseExpiresAt"] == nil {
			t.Errorf("consumer group %v", got)
		}

		// Unknown: 404 with Queen's text; not a UUID: 400.
		for _, path := range []string{messagePath(m.PartitionID, "nope"), messagePath("0192f0a0-aaaa-7000-8000-00000000000a", "tx/1")} {
			if msg := wantPlainError(t, c.do(t, "GET", path, nil), http.StatusNotFound, ""); msg != "Message not found" {
				t.Errorf("GET %s: %q", path, msg)
			}
		}
		wantPlainError(t, c.do(t, "GET", messagePath("not-a-uuid", "tx/1"), nil), http.StatusBadRequest, "bad path: partitionId is not a UUID")
		// The partitionId may come in upper case.
		wantStatus(t, c.do(t, "GET", messagePath(upper(m.PartitionID), "tx/1"), nil), http.StatusOK)
	})

	t.Run("delete: 200 either way, and the message is gone", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("del")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q)+"?batch=2")
		m := p.Messages[0]
		for i, want := range []map[string]any{
			{"success": true, "partitionId": m.PartitionID, "transactionId": m.TransactionID, "message": "Message deleted successfully"},
			{"success": false, "partitionId": m.PartitionID, "transactionId": m.TransactionID, "message": "Message not found"},
		} {
			var got map[string]any
			wantJSON(t, c.do(t, "DELETE", messagePath(m.PartitionID, m.TransactionID), nil), http.StatusOK, &got)
			wantKeys(t, "delete answer", got, "success", "partitionId", "transactionId", "message")
			for k, v := range want {
				if got[k] != v {
					t.Errorf("delete %d: %s = %v, want %v", i, k, got[k], v)
				}
			}
		}
		wantStatus(t, c.do(t, "GET", messagePath(m.PartitionID, m.TransactionID), nil), http.StatusNotFound)
		if got := c.listMessages(t, "queue="+url.QueryEscape(q)).txns(); !slices.Equal(got, []string{p.Messages[1].TransactionID}) {
			t.Errorf("listing after delete: %v", got)
		}
		wantPlainError(t, c.do(t, "DELETE", messagePath("nope", "x"), nil), http.StatusBadRequest, "bad path: partitionId")
	})

	t.Run("move to the DLQ, retry: 200, 404, 409 and the message comes back", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("repair")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		m := p.Messages[0]
		c.ack(t, "", ackOf(m, "completed"))
		path := messagePath(m.PartitionID, m.TransactionID)

		// Retry of a message that is not dead: 409.
		if msg := wantPlainError(t, c.do(t, "POST", path+"/retry", `{}`), http.StatusConflict, ""); msg != "message is not in the dead letter queue" {
			t.Errorf("retry of a live message: %q", msg)
		}
		var moved map[string]any
		wantJSON(t, c.do(t, "POST", path+"/dlq", `{}`), http.StatusOK, &moved)
		if !reflect.DeepEqual(moved, map[string]any{"success": true, "dlq": true}) {
			t.Errorf("move: %v", moved)
		}
		if msg := wantPlainError(t, c.do(t, "POST", path+"/dlq", nil), http.StatusConflict, ""); msg != "message is already in the dead letter queue" {
			t.Errorf("second move: %q", msg)
		}
		l := c.listMessages(t, "queue="+url.QueryEscape(q))
		if len(l.Messages) != 1 || l.Messages[0].Status != "dead_letter" {
			t.Errorf("listing after the move: %+v", l.Messages)
		}
		dl := c.listDLQ(t, "queue="+url.QueryEscape(q))
		if len(dl.Messages) != 1 || dl.Messages[0].ErrorMessage != "manual" || dl.Messages[0].ConsumerGroup != queueMode {
			t.Errorf("DLQ after the move: %+v", dl.Messages)
		}

		var retried map[string]any
		wantJSON(t, c.do(t, "POST", path+"/retry", nil), http.StatusOK, &retried)
		wantKeys(t, "retry answer", retried, "success", "requeued", "messageId", "transactionId")
		if retried["success"] != true || retried["requeued"] != float64(1) || retried["transactionId"] != m.TransactionID+":retry:1" {
			t.Errorf("retry: %v", retried)
		}
		wantUUIDv7(t, "messageId", retried["messageId"].(string))
		wantStatus(t, c.do(t, "POST", path+"/retry", nil), http.StatusConflict)
		got := c.popOK(t, queuePath(q))
		if got.Messages[0].TransactionID != m.TransactionID+":retry:1" || got.Messages[0].ID != retried["messageId"] {
			t.Errorf("pop after retry: %+v", got.Messages[0])
		}

		for _, suffix := range []string{"/retry", "/dlq"} {
			if msg := wantPlainError(t, c.do(t, "POST", messagePath(m.PartitionID, "nope")+suffix, nil), http.StatusNotFound, ""); msg != "Message not found" {
				t.Errorf("%s of an unknown message: %q", suffix, msg)
			}
		}
		wantPlainError(t, c.do(t, "POST", path+"/dlq", `{"consumerGroup":""`), http.StatusBadRequest, "bad body: ")
	})
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
