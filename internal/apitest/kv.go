package apitest

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/server"
)

// kvResults is the answer of POST /api/v1/kv.
type kvResults struct {
	Results []map[string]any `json:"results"`
}

func (c *client) kvBatch(t testing.TB, ops ...map[string]any) kvResults {
	t.Helper()
	var out kvResults
	wantJSON(t, c.do(t, "POST", "/api/v1/kv", map[string]any{"ops": ops}), http.StatusOK, &out)
	if len(out.Results) != len(ops) {
		t.Fatalf("kv batch: %d results for %d ops", len(out.Results), len(ops))
	}
	return out
}

func kvOp(op, ns, key string, kv ...any) map[string]any {
	m := map[string]any{"op": op, "namespace": ns, "key": key}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// testKV covers the key/value routes and kv operations in transactions.
func (s *suite) testKV(t *testing.T) {
	t.Run("BatchGetPutDelete", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("ns")
		res := c.kvBatch(t,
			kvOp("set", ns, "user:1", "value", map[string]any{"name": "ada"}),
			kvOp("incr", ns, "count"),
			kvOp("incr", ns, "count", "by", 41),
			kvOp("get", ns, "user:1"),
			kvOp("get", ns, "absent"),
			kvOp("delete", ns, "absent"))
		r := res.Results
		if r[0]["ok"] != true || r[0]["version"] != float64(1) || r[2]["value"] != float64(42) || r[2]["version"] != float64(2) {
			t.Fatalf("batch results %v", r)
		}
		if v, _ := r[3]["value"].(map[string]any); v["name"] != "ada" {
			t.Fatalf("get in batch: %v", r[3])
		}
		if r[4]["ok"] != false || r[4]["error"] != "key not found" || r[5]["deleted"] != false {
			t.Fatalf("get and delete of an absent key: %v %v", r[4], r[5])
		}
		var e map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/user:1", nil), http.StatusOK, &e)
		wantKeys(t, "key", e, "createdAt", "expiresAt", "key", "namespace", "updatedAt", "value", "version")
		if e["expiresAt"] != nil || e["version"] != float64(1) || e["namespace"] != ns {
			t.Fatalf("GET key: %v", e)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/absent", nil), http.StatusNotFound, "key not found")
		// A key with a slash travels percent-encoded.
		wantJSON(t, c.do(t, "PUT", "/api/v1/kv/"+ns+"/"+url.PathEscape("a/b"), `{"value":[1, 2]}`), http.StatusOK, &e)
		if e["key"] != "a/b" {
			t.Fatalf("PUT of a/b: %v", e)
		}
		// PUT with a failing expect: 409 with the current state, nothing written.
		r409 := c.do(t, "PUT", "/api/v1/kv/"+ns+"/user:1", `{"value":2,"expect":{"version":7}}`)
		var conflict map[string]any
		wantJSON(t, r409, http.StatusConflict, &conflict)
		cur, _ := conflict["current"].(map[string]any)
		if conflict["error"] != "expectation failed" || conflict["index"] != float64(0) || cur["version"] != float64(1) {
			t.Fatalf("409 body %v", conflict)
		}
		wantJSON(t, c.do(t, "PUT", "/api/v1/kv/"+ns+"/user:1", `{"value":2,"expect":{"version":1},"ttlSeconds":3600}`), http.StatusOK, &e)
		if e["version"] != float64(2) || e["expiresAt"] == nil {
			t.Fatalf("conditional PUT: %v", e)
		}
		// A batch whose last op fails rolls back the first.
		rb := c.do(t, "POST", "/api/v1/kv", map[string]any{"ops": []map[string]any{
			kvOp("set", ns, "new", "value", 1), kvOp("delete", ns, "user:1", "expect", map[string]any{"exists": false})}})
		wantJSON(t, rb, http.StatusConflict, &conflict)
		if conflict["index"] != float64(1) {
			t.Fatalf("409 of the batch: %v", conflict)
		}
		wantStatus(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/new", nil), http.StatusNotFound)
		// incr of something that is not a counter is a 409 too.
		wantJSON(t, c.do(t, "POST", "/api/v1/kv", map[string]any{"ops": []map[string]any{kvOp("incr", ns, "a/b")}}),
			http.StatusConflict, &conflict)
		if conflict["error"] != "not a counter" {
			t.Fatalf("incr of a list: %v", conflict)
		}
		var del map[string]any
		wantJSON(t, c.do(t, "DELETE", "/api/v1/kv/"+ns+"/user:1?expectVersion=1", nil), http.StatusConflict, &del)
		wantJSON(t, c.do(t, "DELETE", "/api/v1/kv/"+ns+"/user:1?expectVersion=2", nil), http.StatusOK, &del)
		if del["deleted"] != true {
			t.Fatalf("delete: %v", del)
		}
		wantJSON(t, c.do(t, "DELETE", "/api/v1/kv/"+ns+"/user:1", nil), http.StatusOK, &del)
		if del["deleted"] != false {
			t.Fatalf("second delete: %v", del)
		}
	})

	t.Run("ListWithCursor", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("list")
		var ops []map[string]any
		for i := 0; i < 7; i++ {
			ops = append(ops, kvOp("set", ns, fmt.Sprintf("k%d", i), "value", i))
		}
		ops = append(ops, kvOp("set", ns, "other", "value", 0))
		c.kvBatch(t, ops...)
		var keys []string
		cursor := ""
		for pages := 0; pages < 10; pages++ {
			path := "/api/v1/kv/" + ns + "?prefix=k&limit=3"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			var page struct {
				Items      []map[string]any `json:"items"`
				NextCursor *string          `json:"nextCursor"`
			}
			wantJSON(t, c.do(t, "GET", path, nil), http.StatusOK, &page)
			for _, it := range page.Items {
				keys = append(keys, it["key"].(string))
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if fmt.Sprint(keys) != "[k0 k1 k2 k3 k4 k5 k6]" {
			t.Fatalf("listing: %v", keys)
		}
		wantError(t, c.do(t, "GET", "/api/v1/kv/"+ns+"?cursor=%25%25", nil), http.StatusBadRequest, "invalid cursor")
		wantError(t, c.do(t, "GET", "/api/v1/kv/"+ns+"?limit=0", nil), http.StatusBadRequest, "bad query: limit")
	})

	t.Run("LimitsAndBadInput", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", KV: kv.Config{MaxOps: 3, MaxValueBytes: 16}})
		ns := uniq("lim")
		four := []map[string]any{kvOp("get", ns, "a"), kvOp("get", ns, "b"), kvOp("get", ns, "c"), kvOp("get", ns, "d")}
		wantPlainError(t, c.do(t, "POST", "/api/v1/kv", map[string]any{"ops": four}), http.StatusRequestEntityTooLarge,
			"too many operations: 4, the limit is 3 (QUEEN_KV_MAX_OPS)")
		wantPlainError(t, c.do(t, "PUT", "/api/v1/kv/"+ns+"/big", `{"value":"01234567890123456789"}`),
			http.StatusRequestEntityTooLarge, "value of ops[0] too large")
		for _, tc := range []struct{ body, msg string }{
			{`{"ops":[{"op":"incr","namespace":"n","key":"k","expect":{"version":1}}]}`, "expect is not supported on incr"},
			{`{"ops":[{"op":"merge","namespace":"n","key":"k"}]}`, `ops[0]: unknown op "merge"`},
			{`{"ops":[{"op":"set","namespace":"n","key":"k"}]}`, "bad body: ops[0].value is missing"},
			{`{"ops":[{"op":"get","namespace":"","key":"k"}]}`, "ops[0]: namespace is required"},
			{`{"ops":[]}`, "ops array cannot be empty"},
			{`{}`, "bad body: ops is missing"},
			{`{"ops":[{"op":"set","namespace":"n","key":"k","value":1,"ttlSeconds":-1}]}`, "bad body: ops[0].ttlSeconds"},
		} {
			wantPlainError(t, c.do(t, "POST", "/api/v1/kv", tc.body), http.StatusBadRequest, tc.msg)
		}
	})

	t.Run("TTLExpires", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("ttl")
		c.kvBatch(t, kvOp("set", ns, "short", "value", true, "ttlSeconds", 1), kvOp("set", ns, "long", "value", true))
		waitFor(t, 5*time.Second, "the key to expire", func() bool {
			return c.do(t, "GET", "/api/v1/kv/"+ns+"/short", nil).Status == http.StatusNotFound
		})
		wantStatus(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/long", nil), http.StatusOK)
	})

	t.Run("IncrRaceOverHTTP", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("race")
		const workers, each = 8, 25
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					r, err := c.send(t.Context(), "POST", "/api/v1/kv", map[string]any{"ops": []map[string]any{kvOp("incr", ns, "n")}})
					if err != nil || r.Status != http.StatusOK {
						t.Errorf("incr: %v %v", r, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		var e map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/n", nil), http.StatusOK, &e)
		if e["value"] != float64(workers*each) {
			t.Fatalf("counter %v, want %d", e["value"], workers*each)
		}
	})

	t.Run("InTransaction", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns, src, dst := uniq("tx"), uniq("tx-src"), uniq("tx-dst")
		c.kvBatch(t, kvOp("set", ns, "state", "value", "pending"))
		c.pushN(t, src, "", 1)
		p := c.popOK(t, queuePath(src))
		m := p.Messages[0]
		ops := func(version int) []map[string]any {
			return []map[string]any{
				{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.lease(), "status": "completed"},
				{"type": "push", "items": []map[string]any{item(dst, 1)}},
				{"type": "kv", "op": "incr", "namespace": ns, "key": "done"},
				{"type": "kv", "op": "set", "namespace": ns, "key": "state", "value": "done", "expect": map[string]any{"version": version}},
			}
		}
		var tx map[string]any
		wantJSON(t, c.do(t, "POST", "/api/v1/transaction", map[string]any{"operations": ops(9)}), http.StatusOK, &tx)
		if tx["success"] != false || tx["error"] == nil {
			t.Fatalf("transaction with a failing expect: %v", tx)
		}
		var e map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/state", nil), http.StatusOK, &e)
		if e["value"] != "pending" {
			t.Fatalf("state after the failed transaction: %v", e)
		}
		wantStatus(t, c.do(t, "GET", "/api/v1/kv/"+ns+"/done", nil), http.StatusNotFound)
		c.popNone(t, queuePath(dst))

		wantJSON(t, c.do(t, "POST", "/api/v1/transaction", map[string]any{"operations": ops(1)}), http.StatusOK, &tx)
		res, _ := tx["results"].([]any)
		if tx["success"] != true || len(res) != 4 {
			t.Fatalf("transaction: %v", tx)
		}
		if k, _ := res[3].(map[string]any); k["type"] != "kv" || k["version"] != float64(2) || k["value"] != "done" {
			t.Fatalf("kv result: %v", res[3])
		}
		if q := c.popOK(t, queuePath(dst)); len(q.Messages) != 1 {
			t.Fatalf("destination: %d messages", len(q.Messages))
		}
		c.popNone(t, queuePath(src))
		wantError(t, c.do(t, "POST", "/api/v1/transaction", map[string]any{"operations": []map[string]any{
			{"type": "kv", "op": "get", "namespace": ns, "key": "state"}}}), http.StatusBadRequest,
			"operations[0]: a transaction's kv operation is set, incr or delete")
	})

	t.Run("TenantsAndRoles", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true,
			Auth: auth.Config{Tokens: apiTokens(t, "")}})
		ns := uniq("tenant")
		rw := c.with("Authorization", bearer(apiTokenReadWrite))
		rw.with("X-Queen-Tenant", tenantA).kvBatch(t, kvOp("set", ns, "k", "value", "a"))
		wantStatus(t, rw.with("X-Queen-Tenant", tenantB).do(t, "GET", "/api/v1/kv/"+ns+"/k", nil), http.StatusNotFound)
		ro := c.with("Authorization", bearer(apiTokenReadOnly), "X-Queen-Tenant", tenantA)
		wantStatus(t, ro.do(t, "GET", "/api/v1/kv/"+ns+"/k", nil), http.StatusOK)
		wantPlainError(t, ro.do(t, "PUT", "/api/v1/kv/"+ns+"/k", `{"value":1}`), http.StatusForbidden, "Insufficient permissions")
		wo := c.with("Authorization", bearer(apiTokenWriteOnly), "X-Queen-Tenant", tenantA)
		wantPlainError(t, wo.do(t, "GET", "/api/v1/kv/"+ns+"/k", nil), http.StatusForbidden, "Insufficient permissions")
		wantPlainError(t, rw.do(t, "GET", "/api/v1/kv/"+ns+"/k", nil), http.StatusBadRequest, "tenant required")
	})
}
