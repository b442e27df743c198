package apitest

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// testPush covers POST /api/v1/push (spec §3).
func (s *suite) testPush(t *testing.T) {
	t.Run("response elements have exactly the documented keys and UUIDv7 ids", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("shape")
		res := c.push(t, item(q, map[string]any{"a": 1}, "transactionId", "order-1-created", "partition", "acct-42"))
		e := res[0]
		if e.Status != "queued" || e.QueueName != q || e.TransactionID != "order-1-created" || e.Index != 0 {
			t.Fatalf("push element %+v, want index 0, queueName %q, transaction_id order-1-created, status queued", e, q)
		}
		wantUUIDv7(t, "message_id", e.MessageID)
		p := c.popOK(t, partitionPath(q, "acct-42"))
		m := p.Messages[0]
		if m.ID != e.MessageID || m.TransactionID != "order-1-created" || m.Partition != "acct-42" {
			t.Fatalf("popped %+v, want id %s transactionId order-1-created partition acct-42", m, e.MessageID)
		}
	})

	t.Run("partition defaults to Default", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("defpart")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, queuePath(q))
		if p.Partition != "Default" || p.Messages[0].Partition != "Default" {
			t.Fatalf("pop: partition %q / message partition %q, want Default", p.Partition, p.Messages[0].Partition)
		}
		c.pushN(t, q, "", 1)
		c.ackAll(t, "", p)
		p = c.popOK(t, partitionPath(q, "Default"))
		if p.Partition != "Default" {
			t.Fatalf("pinned pop of Default: partition %q", p.Partition)
		}
	})

	t.Run("missing transactionId is minted per item", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("mint")
		res := c.push(t, item(q, 1), item(q, 2), item(q, 3, "transactionId", ""))
		seen := map[string]bool{}
		for i, e := range res {
			if e.TransactionID == "" {
				t.Fatalf("push element %d: empty transaction_id", i)
			}
			wantUUIDv7(t, "minted transaction_id", e.TransactionID)
			if seen[e.TransactionID] {
				t.Fatalf("push element %d: transaction_id %s minted twice", i, e.TransactionID)
			}
			seen[e.TransactionID] = true
		}
		p := c.popOK(t, queuePath(q)+"?batch=10")
		if len(p.Messages) != 3 {
			t.Fatalf("pop: %d messages, want 3 (minted ids never collide)", len(p.Messages))
		}
		for i, m := range p.Messages {
			if m.TransactionID != res[i].TransactionID || m.ID != res[i].MessageID {
				t.Fatalf("message %d: id %s transactionId %s, push said %s / %s", i, m.ID, m.TransactionID, res[i].MessageID, res[i].TransactionID)
			}
		}
	})

	t.Run("empty items is 201 with an empty array", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		r := c.do(t, "POST", "/api/v1/push", `{"items":[]}`)
		var res []any
		wantJSON(t, r, http.StatusCreated, &res)
		if strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("%s: body %q, want []", r.what, r.Body)
		}
	})

	t.Run("dedup across requests returns the first message id", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("dedup")
		first := c.push(t, item(q, "first", "transactionId", "t-1"))[0]
		again := c.pushRaw(t, []map[string]any{item(q, "second", "transactionId", "t-1")})[0]
		if again.Status != "duplicate" || again.MessageID != first.MessageID || again.TransactionID != "t-1" {
			t.Fatalf("second push of t-1: %+v, want status duplicate with message_id %s", again, first.MessageID)
		}
		p := c.popOK(t, queuePath(q)+"?batch=10")
		if len(p.Messages) != 1 || !jsonEqual(p.Messages[0].Data, []byte(`"first"`)) {
			t.Fatalf("pop: %d messages (first data %s), want only the first", len(p.Messages), p.Messages[0].Data)
		}
	})

	t.Run("dedup within one request: first occurrence wins", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("dedup-in")
		res := c.pushRaw(t, []map[string]any{
			item(q, "a", "transactionId", "t-a"),
			item(q, "b", "transactionId", "t-b"),
			item(q, "a2", "transactionId", "t-a"),
			item(q, "a3", "transactionId", "t-a"),
		})
		wantStatuses := []string{"queued", "queued", "duplicate", "duplicate"}
		for i, e := range res {
			if e.Status != wantStatuses[i] {
				t.Fatalf("push element %d: status %q, want %q; elements %+v", i, e.Status, wantStatuses[i], res)
			}
		}
		if res[2].MessageID != res[0].MessageID || res[3].MessageID != res[0].MessageID {
			t.Fatalf("duplicates carry message ids %s, %s; want the winner's %s", res[2].MessageID, res[3].MessageID, res[0].MessageID)
		}
		if res[1].MessageID == res[0].MessageID {
			t.Fatalf("distinct transactionIds got the same message id %s", res[0].MessageID)
		}
		p := c.popOK(t, queuePath(q)+"?batch=10")
		if len(p.Messages) != 2 || !jsonEqual(p.Messages[0].Data, []byte(`"a"`)) || !jsonEqual(p.Messages[1].Data, []byte(`"b"`)) {
			t.Fatalf("pop: want payloads a, b; got %d messages %+v", len(p.Messages), p.Messages)
		}
	})

	t.Run("same transactionId in another partition is not a duplicate", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("dedup-part")
		res := c.push(t, item(q, 1, "transactionId", "t-x", "partition", "p1"), item(q, 2, "transactionId", "t-x", "partition", "p2"))
		if res[0].MessageID == res[1].MessageID {
			t.Fatalf("both partitions got message id %s", res[0].MessageID)
		}
		again := c.push(t, item(q, 3, "transactionId", "t-x", "partition", "p3"))[0]
		if again.MessageID == res[0].MessageID || again.MessageID == res[1].MessageID {
			t.Fatalf("a third partition reused message id %s", again.MessageID)
		}
		// Same transactionId in another queue is not a duplicate either.
		c.push(t, item(uniq("dedup-other"), 4, "transactionId", "t-x", "partition", "p1"))
	})

	t.Run("one createdAt per push call", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("created")
		var items []map[string]any
		for i := range 6 {
			items = append(items, item(q, map[string]any{"n": i}, "partition", []string{"p1", "p2"}[i%2]))
		}
		c.push(t, items...)
		var created []string
		for _, part := range []string{"p1", "p2"} {
			p := c.popOK(t, partitionPath(q, part)+"?batch=10")
			if len(p.Messages) != 3 {
				t.Fatalf("pop %s: %d messages, want 3", part, len(p.Messages))
			}
			for _, m := range p.Messages {
				wantTimestamp(t, "createdAt", m.CreatedAt)
				created = append(created, m.CreatedAt)
			}
		}
		for _, ts := range created {
			if ts != created[0] {
				t.Fatalf("messages of one push have createdAt %v, want one value", created)
			}
		}
	})

	t.Run("traceId round-trips and producerSub is never taken from the client", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("trace")
		trace := "0197f2b1-8c4e-7a3b-9d2e-1f2a3b4c5d6e"
		c.push(t,
			item(q, 1, "traceId", trace, "producerSub", "mallory"),
			item(q, 2),
		)
		p := c.popOK(t, queuePath(q)+"?batch=10")
		if len(p.Messages) != 2 {
			t.Fatalf("pop: %d messages, want 2", len(p.Messages))
		}
		if got := p.Messages[0].TraceID; got == nil || *got != trace {
			t.Fatalf("message 0: traceId %s, want %q", strp(got), trace)
		}
		if got := p.Messages[1].TraceID; got != nil {
			t.Fatalf("message 1 (no traceId pushed): traceId %s, want null", strp(got))
		}
		for i, m := range p.Messages {
			if m.ProducerSub != nil {
				t.Fatalf("message %d: producerSub %s, want null with auth off", i, strp(m.ProducerSub))
			}
		}
	})

	t.Run("push to several queues in one call", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		qa, qb := uniq("multi-a"), uniq("multi-b")
		c.push(t, item(qa, "a"), item(qb, "b"), item(qa, "a2"))
		pa := c.popOK(t, queuePath(qa)+"?batch=10")
		pb := c.popOK(t, queuePath(qb)+"?batch=10")
		var da, db []string
		for _, m := range pa.Messages {
			da = append(da, string(m.Data))
		}
		for _, m := range pb.Messages {
			db = append(db, string(m.Data))
		}
		if !reflect.DeepEqual(da, []string{`"a"`, `"a2"`}) || !reflect.DeepEqual(db, []string{`"b"`}) {
			t.Fatalf("queue a got %v, queue b got %v", da, db)
		}
		if pa.Queue != qa || pb.Queue != qb {
			t.Fatalf("pop queue names %q, %q; want %q, %q", pa.Queue, pb.Queue, qa, qb)
		}
	})
}
