package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// txResp is the transaction envelope.
type txResp struct {
	TransactionID string           `json:"transactionId"`
	Success       bool             `json:"success"`
	Error         *string          `json:"error"`
	Results       []map[string]any `json:"results"`
}

// transaction posts body to /api/v1/transaction and checks the envelope for
// the given status; it returns the decoded envelope.
func (c *client) transaction(t testing.TB, body any, status int) txResp {
	t.Helper()
	r := c.do(t, "POST", "/api/v1/transaction", body)
	var raw map[string]any
	wantJSON(t, r, status, &raw)
	var tx txResp
	_ = json.Unmarshal(r.Body, &tx)
	wantUUIDv7(t, r.what+" transactionId", tx.TransactionID)
	if res, ok := raw["results"].([]any); !ok || res == nil {
		t.Fatalf("%s: results is not an array; body %s", r.what, r.Body)
	}
	if tx.Success {
		wantHasKeys(t, r.what, raw, "transactionId", "success", "results")
		if e, ok := raw["error"]; ok && e != nil {
			t.Fatalf("%s: success with error %v", r.what, e)
		}
	} else {
		wantKeys(t, r.what, raw, "transactionId", "success", "error", "results")
		if tx.Error == nil || *tx.Error == "" {
			t.Fatalf("%s: failure without an error text; body %s", r.what, r.Body)
		}
		wantHumanError(t, r.what, *tx.Error)
		if len(tx.Results) != 0 {
			t.Fatalf("%s: failure with results %v, want []", r.what, tx.Results)
		}
	}
	return tx
}

// testTransaction covers POST /api/v1/transaction (spec §7, decisions on
// transactions).
func (s *suite) testTransaction(t *testing.T) {
	t.Run("push and ack commit together", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, dst := uniq("tx-src"), uniq("tx-dst")
		c.pushN(t, src, "", 2)
		p := c.popOK(t, queuePath(src))
		m := p.Messages[0]
		ackOp := ackOf(m, "completed")
		ackOp["type"] = "ack"
		tx := c.transaction(t, map[string]any{
			"operations": []any{
				map[string]any{"type": "push", "items": []any{
					item(dst, map[string]any{"n": 10}, "partition", "acct-42", "transactionId", "stage-2-a"),
					item(dst, map[string]any{"n": 11}, "partition", "acct-42"),
				}},
				ackOp,
			},
			"requiredLeases": []string{p.lease()},
		}, http.StatusOK)
		if !tx.Success {
			t.Fatalf("transaction failed: %s", strp(tx.Error))
		}
		if len(tx.Results) != 3 {
			t.Fatalf("transaction results %v, want 3 (two pushed items, one ack)", tx.Results)
		}
		for i, res := range tx.Results[:2] {
			wantKeys(t, fmt.Sprintf("push result %d", i), res, "index", "type", "success", "transactionId", "messageId", "partitionId", "queueName")
			if res["index"] != float64(i) || res["type"] != "push" || res["success"] != true || res["queueName"] != dst {
				t.Fatalf("push result %d: %v", i, res)
			}
		}
		if tx.Results[0]["transactionId"] != "stage-2-a" {
			t.Fatalf("push result 0: transactionId %v, want stage-2-a", tx.Results[0]["transactionId"])
		}
		ar := tx.Results[2]
		wantKeys(t, "ack result", ar, "index", "type", "success", "transactionId", "error", "dlq")
		if ar["index"] != 2.0 || ar["type"] != "ack" || ar["success"] != true || ar["transactionId"] != m.TransactionID || ar["error"] != nil || ar["dlq"] != false {
			t.Fatalf("ack result: %v", ar)
		}

		// The pushed messages exist with the ids the transaction reported.
		d := c.popOK(t, partitionPath(dst, "acct-42")+"?batch=10")
		if got := d.ns(t); !reflect.DeepEqual(got, []int{10, 11}) {
			t.Fatalf("pop of the destination: %v, want [10 11]", got)
		}
		if d.Messages[0].ID != tx.Results[0]["messageId"] || d.PartitionID != tx.Results[0]["partitionId"] {
			t.Fatalf("pushed message %s in %s, transaction reported %v in %v", d.Messages[0].ID, d.PartitionID, tx.Results[0]["messageId"], tx.Results[0]["partitionId"])
		}
		// The ack committed the source message and released its lease.
		if got := c.popOK(t, queuePath(src)+"?batch=10").ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("pop of the source after the transaction: %v, want [1]", got)
		}
	})

	t.Run("a failed ack in a transaction uses the retry budget", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src := uniq("tx-fail")
		c.pushN(t, src, "", 2)
		p := c.popOK(t, queuePath(src))
		ackOp := ackOf(p.Messages[0], "failed")
		ackOp["type"] = "ack"
		tx := c.transaction(t, map[string]any{"operations": []any{ackOp}, "requiredLeases": []string{p.lease()}}, http.StatusOK)
		if !tx.Success || len(tx.Results) != 1 {
			t.Fatalf("transaction with a failed ack: success %v results %v error %s", tx.Success, tx.Results, strp(tx.Error))
		}
		if tx.Results[0]["dlq"] != false || tx.Results[0]["success"] != true {
			t.Fatalf("failed ack with retries left: %v, want success:true dlq:false", tx.Results[0])
		}
		if got := c.popOK(t, queuePath(src)).ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("pop after a failed ack in a transaction: %v, want [0] again", got)
		}
	})

	t.Run("a dead required lease fails the whole transaction", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, dst := uniq("tx-src"), uniq("tx-dst")
		c.pushN(t, src, "", 2)
		p := c.popOK(t, queuePath(src))
		m := p.Messages[0]
		ackOp := ackOf(m, "completed")
		ackOp["type"] = "ack"
		tx := c.transaction(t, map[string]any{
			"operations": []any{
				map[string]any{"type": "push", "items": []any{item(dst, map[string]any{"n": 1})}},
				ackOp,
			},
			"requiredLeases": []string{p.lease(), "0197f2b2-0000-7000-8000-00000000dead"},
		}, http.StatusOK)
		if tx.Success {
			t.Fatalf("transaction with an unknown required lease succeeded")
		}
		// Nothing was written: no push, no ack.
		c.popNone(t, queuePath(dst)+"?batch=10")
		wantAck(t, "ack of the source message after the failed transaction", c.ack(t, "", ackOf(m, "completed")), true, false, "")
	})

	t.Run("an ack that does not succeed fails the whole transaction", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		src, dst := uniq("tx-src"), uniq("tx-dst")
		c.pushN(t, src, "", 1)
		p := c.popOK(t, queuePath(src))
		ackOp := ackOf(p.Messages[0], "completed")
		ackOp["type"] = "ack"
		ackOp["leaseId"] = "0197f2b2-0000-7000-8000-00000000beef"
		tx := c.transaction(t, map[string]any{"operations": []any{
			map[string]any{"type": "push", "items": []any{item(dst, 1)}},
			ackOp,
		}}, http.StatusOK)
		if tx.Success {
			t.Fatalf("transaction with a wrong-lease ack succeeded")
		}
		c.popNone(t, queuePath(dst))
	})

	t.Run("a duplicate push fails the whole transaction", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		dst := uniq("tx-dup")
		c.push(t, item(dst, map[string]any{"n": 0}, "transactionId", "dup"))
		tx := c.transaction(t, map[string]any{"operations": []any{
			map[string]any{"type": "push", "items": []any{
				item(dst, map[string]any{"n": 1}, "transactionId", "fresh"),
				item(dst, map[string]any{"n": 2}, "transactionId", "dup"),
			}},
		}}, http.StatusOK)
		if tx.Success {
			t.Fatalf("transaction pushing a stored transactionId succeeded")
		}
		if got := c.popOK(t, queuePath(dst)+"?batch=10").ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("queue after the failed transaction: %v, want [0]", got)
		}
	})

	t.Run("pre-flight failures are 400 with the envelope", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("tx-pre")
		for _, body := range []any{
			`{"operations":[]}`,
			`{}`,
			`{"operations":{}}`,
			`{"operations":[{"type":"frobnicate"}]}`,
			map[string]any{"operations": []any{
				map[string]any{"type": "push", "items": []any{item(q, 1)}},
				map[string]any{"type": "teleport"},
			}},
			`{`,
			`not json`,
		} {
			tx := c.transaction(t, body, http.StatusBadRequest)
			if tx.Success {
				t.Fatalf("pre-flight failure of %v reported success", body)
			}
		}
		c.popNone(t, queuePath(q))
	})
}
