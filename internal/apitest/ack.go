package apitest

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// testAck covers /api/v1/ack and /api/v1/ack/batch (spec §5, decisions on
// offsets and acknowledgements).
func (s *suite) testAck(t *testing.T) {
	t.Run("single ack answers an array of one with the seven keys", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("single")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		a := c.ack(t, "", ackOf(p.Messages[0], "completed")) // checkAcks asserts the exact keys
		wantAck(t, "ack", a, true, false, "")
		if !a.LeaseReleased || a.DLQ {
			t.Fatalf("ack of the whole batch: %v, want leaseReleased:true dlq:false", a)
		}
		c.pushN(t, q, "", 1)
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) || p.Messages[0].TransactionID == "" {
			t.Fatalf("pop after ack: %v, want only the newly pushed message", got)
		}
	})

	t.Run("batch ack releases the lease on the item that completes the batch", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("batch")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?batch=3")
		res := c.ackBatch(t, "", ackOf(p.Messages[0], "completed"), ackOf(p.Messages[1], "completed"), ackOf(p.Messages[2], "completed"))
		for i, a := range res {
			wantAck(t, fmt.Sprintf("ack %d", i), a, true, false, "")
		}
		if res[0].LeaseReleased || res[1].LeaseReleased || !res[2].LeaseReleased {
			t.Fatalf("leaseReleased %v %v %v, want false false true", res[0].LeaseReleased, res[1].LeaseReleased, res[2].LeaseReleased)
		}
		c.popNone(t, queuePath(q)+"?batch=10")
	})

	t.Run("missing or mistyped partitionId or transactionId is 400", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("missing")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		m := p.Messages[0]
		for _, body := range []map[string]any{
			{"transactionId": m.TransactionID, "leaseId": p.lease()},
			{"partitionId": m.PartitionID, "leaseId": p.lease()},
			{"transactionId": nil, "partitionId": m.PartitionID},
			{"transactionId": 5, "partitionId": m.PartitionID},
			{"transactionId": m.TransactionID, "partitionId": 5},
		} {
			wantError(t, c.do(t, "POST", "/api/v1/ack", body), http.StatusBadRequest, "")
			wantError(t, c.do(t, "POST", "/api/v1/ack/batch", map[string]any{"acknowledgments": []any{ackOf(m, ""), body}}), http.StatusBadRequest, "")
		}
		for _, body := range []string{`{}`, `{"acknowledgments":{}}`, `{"acknowledgments":"x"}`} {
			wantError(t, c.do(t, "POST", "/api/v1/ack/batch", body), http.StatusBadRequest, "")
		}
		// The rejected batches did not apply their valid first item.
		a := c.ack(t, "", ackOf(m, "completed"))
		wantAck(t, "ack after rejected requests", a, true, false, "")
	})

	t.Run("status normalisation", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		completed := []any{"completed", "success", "acked", "ok", nil, "<absent>"}
		for _, st := range completed {
			q := uniq("norm")
			c.pushN(t, q, "", 2)
			p := c.popOK(t, queuePath(q))
			a := ackOf(p.Messages[0], "")
			if st != "<absent>" {
				a["status"] = st
			}
			res := c.ack(t, "", a)
			wantAck(t, fmt.Sprintf("status %v", st), res, true, false, "")
			if res.DLQ || !res.LeaseReleased {
				t.Fatalf("status %v: %v, want dlq:false leaseReleased:true", st, res)
			}
			// Completed: the next pop moves on.
			if got := c.popOK(t, queuePath(q)).ns(t); !reflect.DeepEqual(got, []int{1}) {
				t.Fatalf("after status %v: next pop %v, want [1]", st, got)
			}
		}
		for _, st := range []string{"oops", "failed", "nack", "retry"} {
			q := uniq("norm-neg")
			c.pushN(t, q, "", 2)
			p := c.popOK(t, queuePath(q))
			res := c.ack(t, "", ackOf(p.Messages[0], st))
			wantAck(t, "status "+st, res, true, false, "")
			if res.DLQ || !res.LeaseReleased {
				t.Fatalf("status %s: %v, want dlq:false leaseReleased:true", st, res)
			}
			// Failed or retry: the same message comes back at once.
			if got := c.popOK(t, queuePath(q)).ns(t); !reflect.DeepEqual(got, []int{0}) {
				t.Fatalf("after status %s: next pop %v, want [0] again", st, got)
			}
		}
		q := uniq("norm-dlq")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q))
		res := c.ack(t, "", ackOf(p.Messages[0], "dlq"))
		if !res.Success || !res.DLQ || !res.LeaseReleased {
			t.Fatalf("status dlq: %v, want success:true dlq:true leaseReleased:true", res)
		}
		if got := c.popOK(t, queuePath(q)).ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("after status dlq: next pop %v, want [1]", got)
		}
	})

	t.Run("acking the last message commits the whole batch", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("offset")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?batch=3")
		m1, m2, m3 := p.Messages[0], p.Messages[1], p.Messages[2]
		a := c.ack(t, "", ackOf(m3, "completed"))
		wantAck(t, "ack of the third message", a, true, false, "")
		if !a.LeaseReleased {
			t.Fatalf("ack of the last message of the batch: %v, want leaseReleased:true", a)
		}
		c.popNone(t, queuePath(q)+"?batch=10") // nothing is redelivered

		// Re-ack at the cursor: a no-op success.
		wantAck(t, "re-ack of the message at the cursor", c.ack(t, "", noLease(ackOf(m3, "completed"))), true, true, "")
		// Below the cursor: already committed, whatever the status.
		wantAck(t, "ack below the cursor", c.ack(t, "", noLease(ackOf(m1, "completed"))), false, true, "already committed")
		wantAck(t, "negative ack below the cursor", c.ack(t, "", noLease(ackOf(m2, "failed"))), false, true, "already committed")
		wantAck(t, "negative ack at the cursor", c.ack(t, "", noLease(ackOf(m3, "failed"))), false, true, "already committed")
		c.popNone(t, queuePath(q)+"?batch=10")
	})

	t.Run("unknown transactionId is unresolvable", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("unres")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		m := p.Messages[0]
		a := c.ack(t, "", map[string]any{"transactionId": "no-such-tx", "partitionId": m.PartitionID, "status": "completed"})
		wantAck(t, "ack of an unknown transactionId", a, false, true, "unresolvable")
		// A transactionId is resolved only inside its own partition.
		other := c.push(t, item(q, 1, "partition", "other"))[0]
		a = c.ack(t, "", map[string]any{"transactionId": other.TransactionID, "partitionId": m.PartitionID})
		wantAck(t, "ack of another partition's transactionId", a, false, true, "unresolvable")
		// Nothing changed: the original lease still holds the message.
		wantAck(t, "ack with the real lease", c.ack(t, "", ackOf(m, "completed")), true, false, "")
	})

	t.Run("wrong leaseId is rejected and changes nothing", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("wronglease")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q)+"?batch=2")
		bad := ackOf(p.Messages[1], "completed")
		bad["leaseId"] = "0197f2b2-0000-7000-8000-000000000000"
		wantAck(t, "ack with a foreign leaseId", c.ack(t, "", bad), false, false, "invalid or expired lease")
		// The lease is intact: nothing else can pop the lane, and the right lease acks.
		c.popNone(t, queuePath(q)+"?batch=10")
		res := c.ackBatch(t, "", ackOf(p.Messages[0], "completed"), ackOf(p.Messages[1], "completed"))
		wantAck(t, "ack 0 with the right lease", res[0], true, false, "")
		wantAck(t, "ack 1 with the right lease", res[1], true, false, "")
	})

	t.Run("a negative ack clamps the cursor for the rest of the call", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("clamp")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?batch=3")
		res := c.ackBatch(t, "",
			ackOf(p.Messages[0], "completed"),
			ackOf(p.Messages[1], "failed"),
			ackOf(p.Messages[2], "completed"),
		)
		wantAck(t, "completed m1", res[0], true, false, "")
		wantAck(t, "failed m2", res[1], true, false, "")
		if !res[1].LeaseReleased || res[1].DLQ {
			t.Fatalf("failed m2: %v, want leaseReleased:true dlq:false", res[1])
		}
		wantAck(t, "completed m3 above the negative ack", res[2], false, true, "cancelled by a negative ack at a lower offset")
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1, 2}) {
			t.Fatalf("pop after the clamped call: %v, want [1 2] (redelivery from m2)", got)
		}
	})

	t.Run("a negative ack commits everything before it", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("negcommit")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?batch=3")
		a := c.ack(t, "", ackOf(p.Messages[1], "failed"))
		if !a.Success || a.DLQ || !a.LeaseReleased {
			t.Fatalf("failed ack of m2: %v, want success:true dlq:false leaseReleased:true", a)
		}
		p2 := c.popOK(t, queuePath(q)+"?batch=10")
		if got := p2.ns(t); !reflect.DeepEqual(got, []int{1, 2}) {
			t.Fatalf("pop after a failed ack of m2: %v, want [1 2] (m1 committed)", got)
		}
		// The cursor sits at m1: re-acking it is a no-op success.
		wantAck(t, "ack of m1 after the nack of m2", c.ack(t, "", noLease(ackOf(p.Messages[0], "completed"))), true, true, "")
	})

	t.Run("negative acks above the lowest one are cancelled", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("clamp-neg")
		c.pushN(t, q, "", 4)
		p := c.popOK(t, queuePath(q)+"?batch=4")
		res := c.ackBatch(t, "",
			ackOf(p.Messages[3], "dlq"),
			ackOf(p.Messages[1], "retry"),
			ackOf(p.Messages[2], "failed"),
			ackOf(p.Messages[0], "completed"),
		)
		wantAck(t, "dlq m4 above the lowest negative ack", res[0], false, true, "cancelled by a negative ack at a lower offset")
		wantAck(t, "retry m2 (lowest negative ack)", res[1], true, false, "")
		wantAck(t, "failed m3 above the lowest negative ack", res[2], false, true, "cancelled by a negative ack at a lower offset")
		wantAck(t, "completed m1 below the lowest negative ack", res[3], true, false, "")
		if res[0].DLQ || res[2].DLQ {
			t.Fatalf("cancelled acks report dlq: %v %v", res[0], res[2])
		}
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1, 2, 3}) {
			t.Fatalf("pop after the clamped call: %v, want [1 2 3]", got)
		}
	})

	t.Run("dlq beats retry at the same offset", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("clamp-same")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q)+"?batch=2")
		res := c.ackBatch(t, "", ackOf(p.Messages[0], "retry"), ackOf(p.Messages[0], "dlq"))
		if !res[1].DLQ {
			t.Fatalf("dlq and retry of one message: dlq verdict %v, want dlq:true", res[1])
		}
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("pop after dlq+retry of m1: %v, want [1]", got)
		}
	})

	t.Run("an ack without leaseId is applied without lease checks", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("nolease")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q)+"?batch=2")
		a := c.ack(t, "", noLease(ackOf(p.Messages[1], "completed")))
		wantAck(t, "ack of the last message without leaseId", a, true, false, "")
		if !a.LeaseReleased {
			t.Fatalf("ack reaching the end of the leased batch: %v, want leaseReleased:true", a)
		}
		c.popNone(t, queuePath(q)+"?batch=10")
		c.pushN(t, q, "", 1)
		if got := c.popOK(t, queuePath(q)+"?batch=10").ns(t); !reflect.DeepEqual(got, []int{0}) || len(got) != 1 {
			t.Fatalf("pop after the lease-less ack: %v, want only the new message", got)
		}
	})

	t.Run("the retry counter resets when the cursor moves", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("reset")
		c.configure(t, q, map[string]any{"retryLimit": 1})
		c.pushN(t, q, "", 3)
		// m1 fails once, then completes.
		p := c.popOK(t, queuePath(q))
		if a := c.ack(t, "", ackOf(p.Messages[0], "failed")); a.DLQ {
			t.Fatalf("first failure of m1: %v", a)
		}
		p = c.popOK(t, queuePath(q))
		c.ackAll(t, "", p)
		// m2 gets its own budget: one failure is a retry, not a DLQ.
		p = c.popOK(t, queuePath(q))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("after completing m1: %v, want [1]", got)
		}
		if a := c.ack(t, "", ackOf(p.Messages[0], "failed")); !a.Success || a.DLQ {
			t.Fatalf("first failure of m2: %v, want success:true dlq:false", a)
		}
		p = c.popOK(t, queuePath(q))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("after m2's first failure: %v, want [1] again", got)
		}
	})

	t.Run("retry redelivers without using the retry budget", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("retry")
		c.configure(t, q, map[string]any{"retryLimit": 0})
		c.pushN(t, q, "", 2)
		for i := range 4 {
			p := c.popOK(t, queuePath(q))
			if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
				t.Fatalf("delivery %d: %v, want [0]", i+1, got)
			}
			a := c.ack(t, "", ackOf(p.Messages[0], "retry"))
			if !a.Success || a.DLQ || !a.LeaseReleased {
				t.Fatalf("retry %d: %v, want success:true dlq:false leaseReleased:true", i+1, a)
			}
		}
		// retryLimit 0: the first real failure dead-letters it.
		p := c.popOK(t, queuePath(q))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("delivery after retries: %v, want [0]", got)
		}
		if a := c.ack(t, "", ackOf(p.Messages[0], "failed")); !a.Success || !a.DLQ {
			t.Fatalf("failure with retryLimit 0: %v, want success:true dlq:true", a)
		}
	})

	t.Run("retryLimit then DLQ", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("retrylimit")
		c.configure(t, q, map[string]any{"retryLimit": 1})
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("first delivery: %v, want [0]", got)
		}
		a := c.ack(t, "", ackOf(p.Messages[0], "failed"))
		if !a.Success || a.DLQ || !a.LeaseReleased {
			t.Fatalf("first failure: %v, want success:true dlq:false leaseReleased:true", a)
		}
		p = c.popOK(t, queuePath(q))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("second delivery: %v, want [0]", got)
		}
		a = c.ack(t, "", ackOf(p.Messages[0], "failed"))
		if !a.Success || !a.DLQ || !a.LeaseReleased {
			t.Fatalf("second failure with retryLimit 1: %v, want success:true dlq:true leaseReleased:true", a)
		}
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("after the DLQ: %v, want [1] (the dead-lettered message is not delivered again)", got)
		}
	})

	t.Run("dlq status dead-letters at once", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("dlq")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?batch=3")
		a := c.ackBatch(t, "", map[string]any{
			"transactionId": p.Messages[0].TransactionID, "partitionId": p.Messages[0].PartitionID,
			"leaseId": p.lease(), "status": "dlq", "error": "unparseable payload",
		})[0]
		if !a.Success || !a.DLQ || !a.LeaseReleased {
			t.Fatalf("dlq ack: %v, want success:true dlq:true leaseReleased:true", a)
		}
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1, 2}) {
			t.Fatalf("after dlq: %v, want [1 2]", got)
		}
	})

	t.Run("lease expiry redelivers the unacked messages", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("expiry")
		c.configure(t, q, map[string]any{"leaseTime": 1})
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?batch=3")
		wantAck(t, "ack of m1", c.ack(t, "", ackOf(p.Messages[0], "completed")), true, false, "")
		again := c.waitPop(t, queuePath(q)+"?batch=10", 10*time.Second)
		if got := again.ns(t); !reflect.DeepEqual(got, []int{1, 2}) {
			t.Fatalf("after lease expiry: %v, want [1 2]", got)
		}
		if again.lease() == p.lease() {
			t.Fatalf("redelivery reused the expired leaseId %s", p.lease())
		}
		wantAck(t, "ack with the expired lease", c.ack(t, "", ackOf(p.Messages[2], "completed")), false, false, "invalid or expired lease")
	})

	t.Run("lease expiry counts as an attempt", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("expiry-dlq")
		c.configure(t, q, map[string]any{"leaseTime": 1, "retryLimit": 0})
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("first pop: %v, want [0]", got)
		}
		again := c.waitPop(t, queuePath(q)+"?batch=10", 10*time.Second)
		if got := again.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("after one expiry with retryLimit 0: %v, want [1] (the head went to the DLQ)", got)
		}
	})
}
