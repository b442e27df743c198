package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// deadLetterKeys are the keys of one entry of GET /api/v1/dlq.
var deadLetterKeys = []string{"id", "transactionId", "partitionId", "queue", "partition", "consumerGroup",
	"errorMessage", "retryCount", "data", "isEncrypted", "producerSub", "createdAt", "failedAt"}

type deadLetterEntry struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
}

type dlqPage struct {
	Messages   []deadLetterEntry `json:"messages"`
	Pagination struct {
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	} `json:"pagination"`
}

func (p *dlqPage) txns() []string {
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// listDLQ lists dead letters and checks the shape: {"messages":[…],
// "pagination":{"limit","offset"}} with exactly Queen's keys per entry.
func (c *client) listDLQ(t testing.TB, query string) *dlqPage {
	t.Helper()
	r := c.do(t, "GET", "/api/v1/dlq?"+query, nil)
	var raw map[string]any
	wantJSON(t, r, http.StatusOK, &raw)
	wantKeys(t, r.what+" envelope", raw, "messages", "pagination")
	wantKeys(t, r.what+" pagination", raw["pagination"].(map[string]any), "limit", "offset")
	msgs, ok := raw["messages"].([]any)
	if !ok {
		t.Fatalf("%s: messages is not an array; body %s", r.what, r.Body)
	}
	for i, m := range msgs {
		mm := m.(map[string]any)
		wantKeys(t, fmt.Sprintf("%s entry %d", r.what, i), mm, deadLetterKeys...)
		wantTimestamp(t, "failedAt", mm["failedAt"].(string))
		wantTimestamp(t, "createdAt", mm["createdAt"].(string))
	}
	var out dlqPage
	_ = json.Unmarshal(r.Body, &out)
	return &out
}

// failToDLQ pops q (group "" = queue mode) and nacks until the message
// popped is dead-lettered: retryLimit+1 failures.
func (c *client) failToDLQ(t testing.TB, q, group string, retryLimit int) popMessage {
	t.Helper()
	path := queuePath(q)
	if group != "" {
		path += "?consumerGroup=" + url.QueryEscape(group)
	}
	var m popMessage
	for i := 0; i <= retryLimit; i++ {
		p := c.popOK(t, path)
		m = p.Messages[0]
		fail := ackOf(m, "failed")
		fail["error"] = "cannot process"
		a := c.ack(t, group, fail)
		if a.DLQ != (i == retryLimit) {
			t.Fatalf("failure %d of %d: dlq %v", i+1, retryLimit+1, a.DLQ)
		}
	}
	return m
}

// testDLQ covers GET, POST /retry and DELETE /api/v1/dlq.
func (s *suite) testDLQ(t *testing.T) {
	t.Run("end to end: retries exhausted, listed as the SDKs ask, retried, popped again", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("dead")
		c.configure(t, q, map[string]any{"retryLimit": 2})
		c.push(t, item(q, map[string]any{"order": 42}, "transactionId", "order-42"))
		m := c.failToDLQ(t, q, "", 2)
		c.popNone(t, queuePath(q))

		// The SDKs' call: GET /api/v1/dlq?queue=…&consumerGroup=…&limit=…
		dl := c.listDLQ(t, "queue="+url.QueryEscape(q)+"&consumerGroup="+queueMode+"&limit=10")
		if len(dl.Messages) != 1 || dl.Pagination.Limit != 10 || dl.Pagination.Offset != 0 {
			t.Fatalf("DLQ: %+v", dl)
		}
		d := dl.Messages[0]
		if d.ID != m.ID || d.TransactionID != "order-42" || d.PartitionID != m.PartitionID || d.Queue != q ||
			d.Partition != "Default" || d.ConsumerGroup != queueMode || d.ErrorMessage != "cannot process" ||
			d.RetryCount != 3 || !jsonEqual(d.Data, []byte(`{"order":42}`)) {
			t.Errorf("dead letter: %+v", d)
		}

		var res map[string]any
		wantJSON(t, c.do(t, "POST", "/api/v1/dlq/retry", map[string]any{"queue": q}), http.StatusOK, &res)
		wantKeys(t, "retry answer", res, "requeued", "failed", "messages")
		if res["requeued"] != float64(1) || len(res["failed"].([]any)) != 0 {
			t.Fatalf("retry: %v", res)
		}
		wantKeys(t, "requeued message", res["messages"].([]any)[0].(map[string]any), "partitionId", "transactionId",
			"messageId", "originalTransactionId")
		if len(c.listDLQ(t, "queue="+url.QueryEscape(q)).Messages) != 0 {
			t.Error("the dead letter is still listed after the retry")
		}
		p := c.popOK(t, queuePath(q))
		if got := p.Messages[0]; got.TransactionID != "order-42:retry:1" || !jsonEqual(got.Data, []byte(`{"order":42}`)) {
			t.Errorf("pop after the retry: %+v", got)
		}
		c.ack(t, "", ackOf(p.Messages[0], "completed"))
	})

	t.Run("retry keeps the original order", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("order")
		c.configure(t, q, map[string]any{"retryLimit": 0})
		txns := c.pushSeries(t, q, "", 4)
		// The first three die one after the other; the fourth is consumed.
		for range 3 {
			c.failToDLQ(t, q, "", 0)
		}
		c.ackAll(t, "", c.popOK(t, queuePath(q)))
		var res struct {
			Requeued int `json:"requeued"`
			Messages []struct {
				OriginalTransactionID string `json:"originalTransactionId"`
			} `json:"messages"`
		}
		wantJSON(t, c.do(t, "POST", "/api/v1/dlq/retry", `{}`), http.StatusOK, &res)
		if res.Requeued != 3 {
			t.Fatalf("requeued %d, want 3", res.Requeued)
		}
		p := c.popOK(t, queuePath(q)+"?batch=10")
		var got []string
		for _, m := range p.Messages {
			got = append(got, m.TransactionID)
		}
		want := []string{txns[0] + ":retry:1", txns[1] + ":retry:1", txns[2] + ":retry:1"}
		if !slices.Equal(got, want) {
			t.Errorf("popped %v, want %v", got, want)
		}
	})

	t.Run("retry by ids reports what it could not requeue", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("ids")
		c.configure(t, q, map[string]any{"retryLimit": 0})
		c.pushN(t, q, "", 2)
		dead := c.failToDLQ(t, q, "", 0)
		live := c.popOK(t, queuePath(q)).Messages[0]
		var res struct {
			Requeued int `json:"requeued"`
			Failed   []map[string]any
		}
		wantJSON(t, c.do(t, "POST", "/api/v1/dlq/retry", map[string]any{"ids": []any{
			map[string]any{"partitionId": dead.PartitionID, "transactionId": dead.TransactionID},
			map[string]any{"partitionId": live.PartitionID, "transactionId": live.TransactionID},
			map[string]any{"partitionId": live.PartitionID, "transactionId": "nope"},
		}}), http.StatusOK, &res)
		if res.Requeued != 1 || len(res.Failed) != 2 {
			t.Fatalf("retry by ids: %+v", res)
		}
		for i, want := range []string{"message is not in the dead letter queue", "Message not found"} {
			wantKeys(t, "failure", res.Failed[i], "partitionId", "transactionId", "error")
			if res.Failed[i]["error"] != want {
				t.Errorf("failure %d: %v, want %q", i, res.Failed[i], want)
			}
		}
	})

	t.Run("listing filters and pages, newest failure first", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("page")
		c.configure(t, q, map[string]any{"retryLimit": 0})
		txns := c.pushSeries(t, q, "", 3)
		for range 3 {
			c.failToDLQ(t, q, "g", 0)
			c.failToDLQ(t, q, "", 0)
		}
		all := c.listDLQ(t, "queue="+url.QueryEscape(q))
		if len(all.Messages) != 6 || all.Pagination.Limit != 100 {
			t.Fatalf("DLQ: %d entries, limit %d", len(all.Messages), all.Pagination.Limit)
		}
		g := c.listDLQ(t, "queue="+url.QueryEscape(q)+"&consumerGroup=g")
		if got := g.txns(); !slices.Equal(got, newestFirst(txns...)) {
			t.Errorf("group g: %v, want %v", got, newestFirst(txns...))
		}
		var pages []string
		for off := 0; off < 8; off += 4 {
			pages = append(pages, c.listDLQ(t, fmt.Sprintf("queue=%s&limit=4&offset=%d", url.QueryEscape(q), off)).txns()...)
		}
		if !slices.Equal(pages, all.txns()) {
			t.Errorf("pages of 4: %v, want %v", pages, all.txns())
		}
		if n := len(c.listDLQ(t, "queue="+url.QueryEscape(q)+"&partition=Other").Messages); n != 0 {
			t.Errorf("another partition: %d entries", n)
		}
		if n := len(c.listDLQ(t, "queue="+url.QueryEscape(q)+"&from=2999-01-01T00:00:00Z").Messages); n != 0 {
			t.Errorf("from the future: %d entries", n)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/dlq?limit=abc", nil), http.StatusBadRequest, "bad query: limit")
	})

	t.Run("delete by filter", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("purge")
		c.configure(t, q, map[string]any{"retryLimit": 0})
		c.pushN(t, q, "", 2)
		c.failToDLQ(t, q, "a", 0)
		c.failToDLQ(t, q, "b", 0)
		c.failToDLQ(t, q, "b", 0)
		var res map[string]any
		wantJSON(t, c.do(t, "DELETE", "/api/v1/dlq?queue="+url.QueryEscape(q)+"&consumerGroup=b", nil), http.StatusOK, &res)
		wantKeys(t, "delete answer", res, "deleted")
		if res["deleted"] != float64(2) {
			t.Errorf("deleted %v, want 2", res["deleted"])
		}
		if dl := c.listDLQ(t, "queue="+url.QueryEscape(q)); len(dl.Messages) != 1 || dl.Messages[0].ConsumerGroup != "a" {
			t.Errorf("left: %+v", dl.Messages)
		}
		wantJSON(t, c.do(t, "DELETE", "/api/v1/dlq?queue="+url.QueryEscape(q)+"&before=2000-01-01T00:00:00Z", nil), http.StatusOK, &res)
		if res["deleted"] != float64(0) {
			t.Errorf("deleted before 2000: %v", res["deleted"])
		}
		// The messages stay.
		if n := len(c.listMessages(t, "queue="+url.QueryEscape(q)).Messages); n != 2 {
			t.Errorf("messages after the delete: %d, want 2", n)
		}
	})
}
