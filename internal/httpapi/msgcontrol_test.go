package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMessageControlAccess pins the access level of the messages, DLQ and
// traces routes (management.md §1.4 and §6).
func TestMessageControlAccess(t *testing.T) {
	want := map[string]Access{
		"GET /api/v1/messages":                                      AccessRead,
		"GET /api/v1/messages/{partitionId}/{transactionId}":        AccessRead,
		"DELETE /api/v1/messages/{partitionId}/{transactionId}":     AccessReadWrite,
		"POST /api/v1/messages/{partitionId}/{transactionId}/retry": AccessReadWrite,
		"POST /api/v1/messages/{partitionId}/{transactionId}/dlq":   AccessReadWrite,
		"GET /api/v1/dlq":                                  AccessRead,
		"POST /api/v1/dlq/retry":                           AccessReadWrite,
		"DELETE /api/v1/dlq":                               AccessAdmin,
		"POST /api/v1/traces":                              AccessReadWrite,
		"GET /api/v1/traces/{partitionId}/{transactionId}": AccessRead,
		"GET /api/v1/traces/by-name/{traceName}":           AccessRead,
		"GET /api/v1/traces/names":                         AccessRead,
	}
	for _, rt := range Routes() {
		key := rt.Method + " " + rt.Pattern
		if w, ok := want[key]; ok {
			delete(want, key)
			if rt.Access != w {
				t.Errorf("%s: access %v, want %v", key, rt.Access, w)
			}
		}
	}
	for key := range want {
		t.Errorf("%s is not in the route table", key)
	}
}

// TestMessageControlRefusesBeforeTheStore: a request whose path, query or
// body is invalid is answered 400 without reaching the control plane (the
// API here has none: reaching it would panic).
func TestMessageControlRefusesBeforeTheStore(t *testing.T) {
	const uuid = "0192f0a0-aaaa-7000-8000-00000000000a"
	h := New(Config{})
	for _, tc := range []struct {
		method, path, body, want string
	}{
		{"GET", "/api/v1/messages/not-a-uuid/t1", "", "bad path: partitionId is not a UUID"},
		{"DELETE", "/api/v1/messages/12345/t1", "", "bad path: partitionId is not a UUID"},
		{"POST", "/api/v1/messages/x/t1/retry", "", "bad path: partitionId is not a UUID"},
		{"POST", "/api/v1/messages/" + uuid + "/t%00/dlq", "", "bad path: transactionId contains a NUL character"},
		{"POST", "/api/v1/messages/" + uuid + "/t1/dlq", `{"consumerGroup":1}`, "bad body: "},
		{"GET", "/api/v1/traces/" + uuid + "x/t1", "", "bad path: partitionId is not a UUID"},
		{"GET", "/api/v1/messages?status=done", "", "bad query: status: expected pending"},
		{"GET", "/api/v1/messages?limit=0", "", "bad query: limit: 0 is out of range"},
		{"GET", "/api/v1/messages?limit=x", "", "bad query: limit: expected a base-10 integer"},
		{"GET", "/api/v1/messages?offset=10001", "", "bad query: offset: 10001 is out of range"},
		{"GET", "/api/v1/messages?from=yesterday", "", "bad query: from: expected an RFC 3339 timestamp"},
		{"GET", "/api/v1/messages?queue=%00", "", "bad query: queue contains a NUL character"},
		{"GET", "/api/v1/dlq?limit=0", "", "bad query: limit: 0 is out of range"},
		{"GET", "/api/v1/dlq?to=now", "", "bad query: to: expected an RFC 3339 timestamp"},
		{"DELETE", "/api/v1/dlq?before=x", "", "bad query: before: expected an RFC 3339 timestamp"},
		{"POST", "/api/v1/dlq/retry", `{"ids":[{"partitionId":"x","transactionId":"t"}]}`, "bad body: ids[0].partitionId is not a UUID"},
		{"POST", "/api/v1/dlq/retry", `{"ids":[{"partitionId":"` + uuid + `"}]}`, "bad body: ids[0].transactionId is missing"},
		{"POST", "/api/v1/dlq/retry", `{"ids":[]}`, "bad body: ids is empty"},
		{"POST", "/api/v1/dlq/retry", `{"limit":0}`, "bad body: limit: 0 is out of range"},
		{"POST", "/api/v1/traces", `{"partitionId":"` + uuid + `","data":{}}`, "transactionId and partitionId are required"},
		{"POST", "/api/v1/traces", `{"partitionId":"` + uuid + `","transactionId":"t"}`, "data is required"},
		{"POST", "/api/v1/traces", `{"partitionId":"` + uuid + `","transactionId":"t","data":null}`, "data is required"},
		{"POST", "/api/v1/traces", `{"partitionId":"p","transactionId":"t","data":{}}`, "bad body: partitionId is not a UUID"},
		{"POST", "/api/v1/traces", `{"partitionId":"` + uuid + `","transactionId":"t","data":{},"traceNames":[1]}`, "bad body: traceNames: expected a string or an array of strings"},
		{"POST", "/api/v1/traces", `{"partitionId":"` + uuid + `","transactionId":"t","data":{},"traceNames":"a\u0001"}`, "bad body: traceNames[0] contains the control character"},
		{"GET", "/api/v1/traces/by-name/x?limit=-1", "", "bad query: limit: -1 is out of range"},
		{"GET", "/api/v1/traces/names?offset=x", "", "bad query: offset: expected a base-10 integer"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"error":"`+tc.want) {
			t.Errorf("%s %s %s: %d %s, want 400 starting %q", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.want)
		}
	}
}
