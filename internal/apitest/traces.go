package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// recordTrace posts a trace of m and returns its traceId.
func (c *client) recordTrace(t testing.TB, m popMessage, data any, names any) string {
	t.Helper()
	body := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "data": data}
	if names != nil {
		body["traceNames"] = names
	}
	r := c.do(t, "POST", "/api/v1/traces", body)
	var res map[string]any
	wantJSON(t, r, http.StatusCreated, &res)
	wantKeys(t, "trace answer", res, "success", "traceId")
	id, _ := res["traceId"].(string)
	if res["success"] != true {
		t.Fatalf("trace: %s", r.Body)
	}
	wantUUIDv7(t, "traceId", id)
	return id
}

func tracesPath(m popMessage) string {
	return "/api/v1/traces/" + m.PartitionID + "/" + url.PathEscape(m.TransactionID)
}

// testTraces covers the trace routes: snake_case keys, as Queen answers.
func (s *suite) testTraces(t *testing.T) {
	t.Run("record, then read a message's traces oldest first", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("traced")
		c.pushN(t, q, "", 1)
		m := c.popOK(t, queuePath(q)).Messages[0]
		first := c.recordTrace(t, m, map[string]any{"step": 1}, "checkout")
		r := c.do(t, "POST", "/api/v1/traces", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"data": map[string]any{"step": 2}, "consumerGroup": "billing", "eventType": "error",
			"traceNames": []string{"order-7", "checkout", "order-7"}, "workerId": "w1"})
		var rec map[string]any
		wantJSON(t, r, http.StatusCreated, &rec)
		second := rec["traceId"].(string)

		r = c.do(t, "GET", tracesPath(m), nil)
		var raw map[string]any
		wantJSON(t, r, http.StatusOK, &raw)
		wantKeys(t, "traces envelope", raw, "traces")
		list := raw["traces"].([]any)
		if len(list) != 2 {
			t.Fatalf("traces: %s", r.Body)
		}
		for i, tr := range list {
			wantKeys(t, fmt.Sprintf("trace %d", i), tr.(map[string]any), "id", "event_type", "data", "consumer_group",
				"worker_id", "created_at", "trace_names")
		}
		var got struct {
			Traces []struct {
				ID            string          `json:"id"`
				EventType     string          `json:"event_type"`
				Data          json.RawMessage `json:"data"`
				ConsumerGroup string          `json:"consumer_group"`
				WorkerID      *string         `json:"worker_id"`
				CreatedAt     string          `json:"created_at"`
				TraceNames    []string        `json:"trace_names"`
			} `json:"traces"`
		}
		_ = json.Unmarshal(r.Body, &got)
		a, b := got.Traces[0], got.Traces[1]
		if a.ID != first || a.EventType != "info" || a.ConsumerGroup != queueMode || a.WorkerID != nil ||
			!slices.Equal(a.TraceNames, []string{"checkout"}) || !jsonEqual(a.Data, []byte(`{"step":1}`)) {
			t.Errorf("first trace: %+v", a)
		}
		if b.ID != second || b.EventType != "error" || b.ConsumerGroup != "billing" || b.WorkerID == nil || *b.WorkerID != "w1" ||
			!slices.Equal(b.TraceNames, []string{"checkout", "order-7"}) {
			t.Errorf("second trace: %+v", b)
		}
		wantTimestamp(t, "created_at", a.CreatedAt)

		unknown := m
		unknown.TransactionID = "nope"
		if msg := wantPlainError(t, c.do(t, "GET", tracesPath(unknown), nil), http.StatusNotFound, ""); msg != "Message not found" {
			t.Errorf("traces of an unknown message: %q", msg)
		}
		if msg := wantPlainError(t, c.do(t, "POST", "/api/v1/traces", map[string]any{"transactionId": "nope",
			"partitionId": m.PartitionID, "data": map[string]any{}}), http.StatusNotFound, ""); msg != "Message not found" {
			t.Errorf("trace of an unknown message: %q", msg)
		}
		for body, want := range map[string]string{
			`{"partitionId":"` + m.PartitionID + `","data":{}}`:                                    "transactionId and partitionId are required",
			`{"transactionId":"x","data":{}}`:                                                      "transactionId and partitionId are required",
			`{"transactionId":"x","partitionId":"` + m.PartitionID + `"}`:                          "data is required",
			`{"transactionId":"x","partitionId":"not-a-uuid","data":{}}`:                           "bad body: partitionId is not a UUID",
			`{"transactionId":"x","partitionId":"` + m.PartitionID + `","data":{},"traceNames":5}`: "bad body: traceNames",
			`{`: "bad body: ",
		} {
			wantPlainError(t, c.do(t, "POST", "/api/v1/traces", body), http.StatusBadRequest, want)
		}
	})

	t.Run("by name and names: totals and pages", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("flows")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q)+"?batch=2")
		name := uniq("flow")
		var ids []string
		for i := range 3 {
			ids = append(ids, c.recordTrace(t, p.Messages[i%2], map[string]any{"i": i}, name))
		}
		c.recordTrace(t, p.Messages[0], map[string]any{}, []string{"other-" + name})

		r := c.do(t, "GET", "/api/v1/traces/by-name/"+url.PathEscape(name)+"?limit=2", nil)
		var raw map[string]any
		wantJSON(t, r, http.StatusOK, &raw)
		wantKeys(t, "by-name envelope", raw, "traces", "total", "pagination")
		wantKeys(t, "pagination", raw["pagination"].(map[string]any), "limit", "offset")
		if raw["total"] != float64(3) {
			t.Errorf("total %v, want 3", raw["total"])
		}
		list := raw["traces"].([]any)
		if len(list) != 2 {
			t.Fatalf("page of 2: %s", r.Body)
		}
		tr := list[0].(map[string]any)
		wantKeys(t, "named trace", tr, "id", "transaction_id", "partition_id", "event_type", "data", "consumer_group",
			"worker_id", "created_at", "queue_name", "partition_name", "message_payload", "is_encrypted", "trace_names")
		if tr["id"] != ids[0] || tr["queue_name"] != q || tr["partition_name"] != "Default" ||
			tr["transaction_id"] != p.Messages[0].TransactionID || tr["partition_id"] != p.Messages[0].PartitionID {
			t.Errorf("first named trace: %v", tr)
		}
		if b, _ := json.Marshal(tr["message_payload"]); !jsonEqual(b, p.Messages[0].Data) {
			t.Errorf("message_payload %s, want %s", b, p.Messages[0].Data)
		}
		var page2 struct {
			Traces []struct {
				ID string `json:"id"`
			} `json:"traces"`
			Total int `json:"total"`
		}
		wantJSON(t, c.do(t, "GET", "/api/v1/traces/by-name/"+url.PathEscape(name)+"?limit=2&offset=2", nil), http.StatusOK, &page2)
		if page2.Total != 3 || len(page2.Traces) != 1 || page2.Traces[0].ID != ids[2] {
			t.Errorf("second page: %+v", page2)
		}

		r = c.do(t, "GET", "/api/v1/traces/names?limit=1", nil)
		raw = nil
		wantJSON(t, r, http.StatusOK, &raw)
		wantKeys(t, "names envelope", raw, "trace_names", "total", "pagination")
		if raw["total"] != float64(2) {
			t.Errorf("names total %v, want 2", raw["total"])
		}
		names := raw["trace_names"].([]any)
		if len(names) != 1 {
			t.Fatalf("names page of 1: %s", r.Body)
		}
		n := names[0].(map[string]any)
		wantKeys(t, "trace name", n, "trace_name", "trace_count", "message_count", "last_seen")
		if n["trace_name"] != "other-"+name || n["trace_count"] != float64(1) || n["message_count"] != float64(1) {
			t.Errorf("most recent name: %v", n)
		}
		raw = nil
		wantJSON(t, c.do(t, "GET", "/api/v1/traces/names?offset=1", nil), http.StatusOK, &raw)
		n = raw["trace_names"].([]any)[0].(map[string]any)
		if n["trace_name"] != name || n["trace_count"] != float64(3) || n["message_count"] != float64(2) {
			t.Errorf("second name: %v", n)
		}
		wantTimestamp(t, "last_seen", n["last_seen"].(string))

		var none map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/traces/by-name/nope-"+name, nil), http.StatusOK, &none)
		if none["total"] != float64(0) || len(none["traces"].([]any)) != 0 {
			t.Errorf("unknown name: %v", none)
		}
	})
}
