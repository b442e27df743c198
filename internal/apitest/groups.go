package apitest

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"
)

// testGroups covers consumer groups and subscription modes (spec §8 and the
// consumer-group decisions).
func (s *suite) testGroups(t *testing.T) {
	t.Run("every group receives every message", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("fanout")
		c.pushN(t, q, "", 3)
		g1, g2 := uniq("g1"), uniq("g2")
		for _, g := range []string{g1, g2, ""} {
			path := queuePath(q) + "?batch=10"
			want := queueMode
			if g != "" {
				path += "&consumerGroup=" + url.QueryEscape(g)
				want = g
			}
			p := c.popOK(t, path)
			if p.ConsumerGroup != want {
				t.Fatalf("pop as %q: consumerGroup %q", want, p.ConsumerGroup)
			}
			if got := p.ns(t); !reflect.DeepEqual(got, []int{0, 1, 2}) {
				t.Fatalf("group %s: %v, want [0 1 2]", want, got)
			}
			c.ackAll(t, g, p)
		}
		// Each group committed on its own cursor.
		for _, g := range []string{g1, g2} {
			c.popNone(t, queuePath(q)+"?batch=10&consumerGroup="+url.QueryEscape(g))
		}
		c.popNone(t, queuePath(q)+"?batch=10")
		c.pushN(t, q, "", 1)
		for _, g := range []string{g1, g2} {
			p := c.popOK(t, queuePath(q)+"?batch=10&consumerGroup="+url.QueryEscape(g))
			if len(p.Messages) != 1 {
				t.Fatalf("group %s after a new push: %d messages, want 1", g, len(p.Messages))
			}
		}
	})

	t.Run("acks are per group", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("ackgroup")
		c.pushN(t, q, "", 2)
		g := uniq("g")
		pg := c.popOK(t, queuePath(q)+"?batch=10&consumerGroup="+g)
		pq := c.popOK(t, queuePath(q)+"?batch=10")
		// The group's ack with the group's lease does not touch queue mode.
		c.ackAll(t, g, pg)
		// Queue mode's lease is still held: the lane stays leased for it.
		c.popNone(t, queuePath(q)+"?batch=10")
		// An ack sent for the wrong group changes nothing: the group has
		// already committed the message (a no-op), and queue mode's lease
		// is untouched.
		a := c.ack(t, g, ackOf(pq.Messages[1], "completed"))
		if !a.Noop {
			t.Fatalf("ack of queue mode's lease under group %s: %v, want a no-op", g, a)
		}
		c.popNone(t, queuePath(q)+"?batch=10")
		c.ackAll(t, "", pq)
		c.popNone(t, queuePath(q)+"?batch=10")
	})

	for _, mode := range []string{"subscriptionMode=new", "subscriptionFrom=now"} {
		t.Run(mode+" skips earlier messages", func(t *testing.T) {
			t.Parallel()
			c := s.server(t)
			q := uniq("subnew")
			c.pushN(t, q, "", 2)
			g := uniq("late")
			path := queuePath(q) + "?batch=10&consumerGroup=" + g + "&" + mode
			c.popNone(t, path)
			nextMillisecond(time.Now())
			c.push(t, item(q, map[string]any{"n": 100}))
			p := c.popOK(t, path)
			if got := p.ns(t); !reflect.DeepEqual(got, []int{100}) {
				t.Fatalf("%s group: %v, want only [100]", mode, got)
			}
			// A lane created after the join is read from its beginning.
			c.push(t, item(q, map[string]any{"n": 200}, "partition", "later"))
			p = c.popOK(t, partitionPath(q, "later")+"?batch=10&consumerGroup="+g)
			if got := p.ns(t); !reflect.DeepEqual(got, []int{200}) {
				t.Fatalf("%s group on a new lane: %v, want [200]", mode, got)
			}
		})
	}

	t.Run("subscriptionFrom starts after the given time", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("subfrom")
		c.push(t, item(q, map[string]any{"n": 0}))
		first := c.popOK(t, queuePath(q)) // queue mode, only to learn createdAt
		t0 := wantTimestamp(t, "createdAt", first.Messages[0].CreatedAt)
		nextMillisecond(t0)
		c.push(t, item(q, map[string]any{"n": 1}))

		g := uniq("from")
		p := c.popOK(t, queuePath(q)+"?batch=10&consumerGroup="+g+"&subscriptionFrom="+url.QueryEscape(first.Messages[0].CreatedAt))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("subscriptionFrom=<first createdAt>: %v, want [1]", got)
		}
		early := t0.Add(-time.Hour).Format(time.RFC3339)
		p = c.popOK(t, queuePath(q)+"?batch=10&consumerGroup="+uniq("early")+"&subscriptionFrom="+url.QueryEscape(early))
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("subscriptionFrom an hour earlier: %v, want [0 1]", got)
		}
	})

	t.Run("unparseable subscriptionFrom is 400 bad query", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("badfrom")
		c.pushN(t, q, "", 1)
		r := c.do(t, "GET", queuePath(q)+"?consumerGroup=g&subscriptionFrom=yesterday", nil)
		wantPlainError(t, r, http.StatusBadRequest, "bad query: ")
	})

	t.Run("first join wins", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("firstjoin")
		c.pushN(t, q, "", 2)

		newG := uniq("joined-new")
		c.popNone(t, queuePath(q)+"?batch=10&consumerGroup="+newG+"&subscriptionMode=new")
		// Later pops asking for "all" do not move the group back.
		c.popNone(t, queuePath(q)+"?batch=10&consumerGroup="+newG+"&subscriptionMode=all")
		c.popNone(t, queuePath(q)+"?batch=10&consumerGroup="+newG)

		allG := uniq("joined-all")
		p := c.popOK(t, queuePath(q)+"?batch=1&consumerGroup="+allG)
		c.ackAll(t, allG, p)
		// Asking for "new" later does not skip what the group has not read yet.
		p = c.popOK(t, queuePath(q)+"?batch=10&consumerGroup="+allG+"&subscriptionMode=new")
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) {
			t.Fatalf("group joined with all, later asking new: %v, want [1]", got)
		}
	})

	t.Run("queue mode is the default group and ignores subscriptions", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("qmode")
		c.pushN(t, q, "", 2)
		p := c.popOK(t, queuePath(q)+"?batch=1&consumerGroup=&subscriptionMode=new")
		if p.ConsumerGroup != queueMode || p.Messages[0].ConsumerGroup != queueMode {
			t.Fatalf("consumerGroup %q / %q, want %s", p.ConsumerGroup, p.Messages[0].ConsumerGroup, queueMode)
		}
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0}) {
			t.Fatalf("queue mode with subscriptionMode=new: %v, want [0] (from the beginning)", got)
		}
		c.ackAll(t, "", p)
		p = c.popOK(t, queuePath(q)+"?consumerGroup="+queueMode)
		if got := p.ns(t); !reflect.DeepEqual(got, []int{1}) || p.ConsumerGroup != queueMode {
			t.Fatalf("explicit __QUEUE_MODE__ pop: %v group %q, want [1] %s", got, p.ConsumerGroup, queueMode)
		}
	})
}
