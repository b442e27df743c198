package apitest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

// testPop covers the pop routes (spec §4).
func (s *suite) testPop(t *testing.T) {
	t.Run("envelope and message have exactly the documented keys", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("keys")
		pushed := c.push(t, item(q, map[string]any{"id": 1}, "transactionId", "order-1", "partition", "acct-42"))[0]
		p := c.popOK(t, queuePath(q)) // checkPop asserts the exact key sets
		m := p.Messages[0]
		if p.Queue != q || p.Partition != "acct-42" || p.ConsumerGroup != queueMode || p.LeaseID == nil {
			t.Fatalf("envelope %+v: want queue %q, partition acct-42, consumerGroup %s, a leaseId", p, q, queueMode)
		}
		if m.ID != pushed.MessageID || m.TransactionID != "order-1" || m.Partition != "acct-42" || m.PartitionID != p.PartitionID {
			t.Fatalf("message %+v does not match the push %+v", m, pushed)
		}
		if m.TraceID != nil || m.ProducerSub != nil {
			t.Fatalf("message traceId %s producerSub %s, want null and null", strp(m.TraceID), strp(m.ProducerSub))
		}
	})

	t.Run("data round-trips", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("data")
		payloads := []string{
			`{"a":1,"b":[true,null,"x"],"c":{"d":1.5,"e":"ünïcødé \"quoted\""}}`,
			`"hello"`,
			`42`,
			`-3.25`,
			`null`,
			`[1,"two",{"three":3}]`,
			`true`,
			`{}`,
		}
		var items []map[string]any
		for _, pl := range payloads {
			items = append(items, item(q, json.RawMessage(pl)))
		}
		c.push(t, items...)
		p := c.popOK(t, queuePath(q)+"?batch=100")
		if len(p.Messages) != len(payloads) {
			t.Fatalf("pop: %d messages, want %d", len(p.Messages), len(payloads))
		}
		for i, m := range p.Messages {
			if !jsonEqual(m.Data, []byte(payloads[i])) {
				t.Fatalf("message %d: data %s, want %s", i, m.Data, payloads[i])
			}
		}
	})

	t.Run("FIFO within a partition", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("fifo")
		var items []map[string]any
		for i := range 5 {
			items = append(items, item(q, map[string]any{"n": i}))
		}
		c.push(t, items...)
		for i := 5; i < 10; i++ {
			c.push(t, item(q, map[string]any{"n": i}))
		}
		var got []int
		for len(got) < 10 {
			p := c.popOK(t, queuePath(q)+"?batch=3")
			if len(p.Messages) > 3 {
				t.Fatalf("pop batch=3 returned %d messages", len(p.Messages))
			}
			got = append(got, p.ns(t)...)
			c.ackAll(t, "", p)
		}
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery order %v, want %v", got, want)
		}
		c.popNone(t, queuePath(q))
	})

	t.Run("batch defaults to 1", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("batch1")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q))
		if len(p.Messages) != 1 {
			t.Fatalf("pop without batch: %d messages, want 1", len(p.Messages))
		}
	})

	t.Run("batch and partitions below 1 are treated as 1", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("batch0")
		c.pushN(t, q, "a", 3)
		c.pushN(t, q, "b", 3)
		for i, qs := range []string{"batch=0", "batch=-5&partitions=0", "batch=1&partitions=-2"} {
			p := c.popOK(t, queuePath(q)+"?"+qs)
			if len(p.Messages) != 1 {
				t.Fatalf("pop %d ?%s: %d messages, want 1", i, qs, len(p.Messages))
			}
			c.ackAll(t, "", p)
		}
		p := c.popOK(t, queuePath(q)+"?batch=10&partitions=0")
		lanes := map[string]bool{}
		for _, m := range p.Messages {
			lanes[m.Partition] = true
		}
		if len(lanes) != 1 {
			t.Fatalf("pop partitions=0: messages from %d partitions, want 1", len(lanes))
		}
	})

	t.Run("lanes are offered least recently claimed first", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("fair")
		c.pushN(t, q, "a", 3)
		c.pushN(t, q, "b", 3)
		var got []string
		for range 4 {
			p := c.popOK(t, queuePath(q))
			got = append(got, p.Partition)
			c.ackAll(t, "", p)
		}
		if got[0] == got[1] || got[0] != got[2] || got[1] != got[3] {
			t.Fatalf("partitions of successive pops %v, want them to alternate", got)
		}
	})

	t.Run("pinned partition route", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("pinned")
		c.pushN(t, q, "a", 2)
		c.pushN(t, q, "acct 42", 3)
		p := c.popOK(t, partitionPath(q, "acct 42")+"?batch=10")
		if p.Partition != "acct 42" || len(p.Messages) != 3 {
			t.Fatalf("pinned pop: partition %q with %d messages, want \"acct 42\" with 3", p.Partition, len(p.Messages))
		}
		for _, m := range p.Messages {
			if m.Partition != "acct 42" {
				t.Fatalf("pinned pop returned a message of partition %q", m.Partition)
			}
		}
		c.popNone(t, partitionPath(q, "acct 42"))                        // leased / drained
		c.popNone(t, partitionPath(q, "no-such-lane"))                   // unknown partition
		c.popNone(t, partitionPath(uniq("nope"), "a"))                   // unknown queue
		pa := c.popOK(t, partitionPath(q, "a")+"?batch=10&partitions=5") // partitions is ignored when pinned
		if pa.Partition != "a" || len(pa.Messages) != 2 {
			t.Fatalf("pinned pop of a: partition %q with %d messages", pa.Partition, len(pa.Messages))
		}
	})

	t.Run("unknown queue is 204", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		c.popNone(t, queuePath(uniq("ghost")))
		c.popNone(t, queuePath(uniq("ghost"))+"?consumerGroup=g&batch=10&partitions=4")
	})

	t.Run("one in-flight leased batch per partition and group", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("onelease")
		c.pushN(t, q, "", 3)
		p1 := c.popOK(t, queuePath(q))
		if got := p1.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("first pop: %v, want [0]", got)
		}
		// The lane is leased: the same group gets nothing, even though two
		// messages are waiting and even on the pinned route.
		c.popNone(t, queuePath(q)+"?batch=10")
		c.popNone(t, partitionPath(q, "Default")+"?batch=10")
		// Another group leases the same lane independently.
		g := c.popOK(t, queuePath(q)+"?batch=10&consumerGroup="+uniq("other"))
		if got := g.ns(t); !reflect.DeepEqual(got, []int{0, 1, 2}) {
			t.Fatalf("other group's pop: %v, want [0 1 2]", got)
		}
		if g.lease() == p1.lease() {
			t.Fatalf("two pops share leaseId %s", g.lease())
		}
		// Releasing the lease makes the rest available to the first group.
		c.ackAll(t, "", p1)
		p2 := c.popOK(t, queuePath(q)+"?batch=10")
		if got := p2.ns(t); !reflect.DeepEqual(got, []int{1, 2}) {
			t.Fatalf("pop after ack: %v, want [1 2]", got)
		}
	})

	t.Run("multi-partition pop shares one lease", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("multi")
		parts := []string{"p0", "p1", "p2", "p3"}
		var items []map[string]any
		for i := range 8 {
			items = append(items, item(q, map[string]any{"n": i / 4}, "partition", parts[i%4]))
		}
		c.push(t, items...)
		p := c.popOK(t, queuePath(q)+"?partitions=4&batch=100")
		if len(p.Messages) != 8 {
			t.Fatalf("pop partitions=4: %d messages, want all 8", len(p.Messages))
		}
		// Lanes are concatenated: each partition's messages are contiguous and in order.
		lanes := map[string]int{}
		last := ""
		for _, m := range p.Messages {
			if m.Partition != last {
				if _, seen := lanes[m.Partition]; seen {
					t.Fatalf("partition %s appears in two runs; lanes must be concatenated", m.Partition)
				}
				last = m.Partition
				lanes[last] = 0
			}
			if n := m.n(t); n != lanes[last] {
				t.Fatalf("partition %s: message n=%d, want %d (FIFO)", last, n, lanes[last])
			}
			lanes[last]++
		}
		if len(lanes) != 4 {
			t.Fatalf("messages came from %d partitions, want 4", len(lanes))
		}
		if p.LeaseID == nil {
			t.Fatalf("multi-partition pop without a leaseId")
		}
		// Every lane is leased under that one lease: nothing more to pop.
		c.popNone(t, queuePath(q)+"?partitions=4&batch=100")
	})

	t.Run("batch is a global cap across partitions", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("cap")
		var items []map[string]any
		for i := range 12 {
			items = append(items, item(q, map[string]any{"n": i}, "partition", []string{"a", "b", "c", "d"}[i%4]))
		}
		c.push(t, items...)
		p := c.popOK(t, queuePath(q)+"?partitions=4&batch=3")
		if len(p.Messages) != 3 {
			t.Fatalf("pop partitions=4&batch=3: %d messages, want 3", len(p.Messages))
		}
	})

	t.Run("namespace and task pop over derived names", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("billing")
		q := ns + ".invoices"
		c.pushN(t, q, "", 3)
		c.pushN(t, uniq("unrelated")+".invoices-not", "", 1)

		p := c.popOK(t, "/api/v1/pop?namespace="+url.QueryEscape(ns))
		if p.Queue != q || !reflect.DeepEqual(p.ns(t), []int{0}) {
			t.Fatalf("namespace pop: queue %q payloads %v, want %q [0]", p.Queue, p.ns(t), q)
		}
		c.ackAll(t, "", p)
		p = c.popOK(t, "/api/v1/pop?task=invoices")
		if p.Queue != q || !reflect.DeepEqual(p.ns(t), []int{1}) {
			t.Fatalf("task pop: queue %q payloads %v, want %q [1]", p.Queue, p.ns(t), q)
		}
		c.ackAll(t, "", p)
		p = c.popOK(t, "/api/v1/pop?namespace="+url.QueryEscape(ns)+"&task=invoices&batch=10")
		if p.Queue != q || !reflect.DeepEqual(p.ns(t), []int{2}) {
			t.Fatalf("namespace+task pop: queue %q payloads %v, want %q [2]", p.Queue, p.ns(t), q)
		}
		c.popNone(t, "/api/v1/pop?namespace="+url.QueryEscape(uniq("nobody")))
		c.popNone(t, "/api/v1/pop?namespace="+url.QueryEscape(ns)+"&task=other")
	})

	t.Run("namespace and task pop over configured names", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, ns := uniq("plain"), uniq("ns")
		c.configure(t, q, nil, "namespace", ns, "task", "work")
		c.pushN(t, q, "", 1)
		p := c.popOK(t, "/api/v1/pop?namespace="+url.QueryEscape(ns)+"&task=work")
		if p.Queue != q {
			t.Fatalf("namespace/task pop: queue %q, want %q", p.Queue, q)
		}
	})

	t.Run("namespace pop without namespace or task is 400", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, path := range []string{"/api/v1/pop", "/api/v1/pop?batch=5", "/api/v1/pop?consumerGroup=g"} {
			wantError(t, c.do(t, "GET", path, nil), http.StatusBadRequest, "")
		}
	})

	t.Run("namespace pop serves higher priority queues first", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("prio")
		low, high := "a-low-"+ns, "z-high-"+ns // name order alone would pick low
		c.configure(t, low, map[string]any{"priority": 1}, "namespace", ns)
		c.configure(t, high, map[string]any{"priority": 5}, "namespace", ns)
		c.pushN(t, low, "", 2)
		c.pushN(t, high, "", 2)
		p := c.popOK(t, "/api/v1/pop?namespace="+url.QueryEscape(ns)+"&batch=10")
		if p.Queue != high {
			t.Fatalf("namespace pop: queue %q, want the priority-5 queue %q", p.Queue, high)
		}
		if len(p.Messages) != 2 {
			t.Fatalf("namespace pop: %d messages, want the 2 of %q", len(p.Messages), high)
		}
		c.ackAll(t, "", p)
		p = c.popOK(t, "/api/v1/pop?namespace="+url.QueryEscape(ns)+"&batch=10")
		if p.Queue != low {
			t.Fatalf("second namespace pop: queue %q, want %q", p.Queue, low)
		}
	})

	t.Run("namespace pop visits equal-priority queues by name", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		ns := uniq("byname")
		first, second := "a-"+ns, "b-"+ns
		c.configure(t, second, map[string]any{"priority": 2}, "namespace", ns)
		c.configure(t, first, map[string]any{"priority": 2}, "namespace", ns)
		c.pushN(t, second, "", 1)
		c.pushN(t, first, "", 1)
		p := c.popOK(t, "/api/v1/pop?namespace="+url.QueryEscape(ns)+"&batch=10")
		if p.Queue != first {
			t.Fatalf("namespace pop: queue %q, want %q (same priority, name order)", p.Queue, first)
		}
	})

	t.Run("autoAck returns a null leaseId and does not redeliver", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("autoack")
		c.pushN(t, q, "", 3)
		p := c.popOK(t, queuePath(q)+"?autoAck=true&batch=2")
		if p.LeaseID != nil {
			t.Fatalf("autoAck pop: leaseId %s, want null", strp(p.LeaseID))
		}
		for i, m := range p.Messages {
			if m.LeaseID != nil {
				t.Fatalf("autoAck pop: message %d leaseId %s, want null", i, strp(m.LeaseID))
			}
		}
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("autoAck pop: %v, want [0 1]", got)
		}
		// No lease is held and the cursor has moved: the next pop gets only the third.
		p = c.popOK(t, queuePath(q)+"?batch=10")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{2}) {
			t.Fatalf("pop after autoAck: %v, want [2]", got)
		}
	})
}
