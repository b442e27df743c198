package apitest

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"time"
)

// groupPath is the route of a consumer group, plus rest.
func groupPath(group, rest string) string {
	return "/api/v1/consumer-groups/" + url.PathEscape(group) + rest
}

// seekPath is the seek route of group on queue.
func seekPath(group, queue string) string {
	return groupPath(group, "/queues/"+url.PathEscape(queue)+"/seek")
}

// seek posts body to path and requires a 200; it returns the answer.
func (c *client) seek(t testing.TB, path string, body any) map[string]any {
	t.Helper()
	var m map[string]any
	wantJSON(t, c.do(t, "POST", path, body), http.StatusOK, &m)
	return m
}

// drain pops the whole queue as group, acking as it goes, and returns the
// payloads' "n" in delivery order.
func (c *client) drain(t testing.TB, queue, group string) []int {
	t.Helper()
	var got []int
	for {
		p := c.pop(t, queuePath(queue)+"?batch=100&partitions=100&consumerGroup="+url.QueryEscape(group))
		if p == nil {
			return got
		}
		got = append(got, p.ns(t)...)
		c.ackAll(t, group, p)
	}
}

// testGroupAdmin covers the consumer-group management routes
// (management.md §1.3, §5) and the calls queenctl makes.
func (s *suite) testGroupAdmin(t *testing.T) {
	t.Run("seek backwards: the messages come again, in order", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, g := uniq("replay"), uniq("g")
		c.pushN(t, q, "", 4)
		if got := c.drain(t, q, g); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
			t.Fatalf("first read: %v", got)
		}
		// queenctl replay --to beginning.
		m := c.seek(t, seekPath(g, q), map[string]any{"timestamp": "1970-01-01T00:00:00Z"})
		wantKeys(t, "seek", m, "success", "consumerGroup", "queueName", "seekToEnd", "targetTimestamp",
			"partitionsUpdated", "joined")
		if m["success"] != true || m["consumerGroup"] != g || m["queueName"] != q || m["seekToEnd"] != false ||
			m["targetTimestamp"] != "1970-01-01T00:00:00.000Z" || num(t, "updated", m["partitionsUpdated"]) != 1 ||
			m["joined"] != false {
			t.Fatalf("seek to the beginning: %v", m)
		}
		if got := c.drain(t, q, g); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
			t.Fatalf("after a seek to the beginning: %v, want [0 1 2 3] again", got)
		}
		// Other groups are not moved.
		c.drain(t, q, "")
		c.seek(t, seekPath(g, q), map[string]any{"timestamp": "1970-01-01T00:00:00Z"})
		c.popNone(t, queuePath(q))
	})

	t.Run("seek to a timestamp of whole seconds (queenctl's format)", func(t *testing.T) {
		t.Parallel()
		// The broker's clock, half a second before a whole one.
		clk := newClock(time.Now().Truncate(time.Second).Add(500 * time.Millisecond))
		c := s.serverAt(t, clk)
		q, g := uniq("replayts"), uniq("g")
		c.pushN(t, q, "", 2)
		// The next full second, formatted as queenctl does: after the
		// first push, before the second.
		at := clk.Now().Truncate(time.Second).Add(time.Second)
		clk.Advance(at.Sub(clk.Now()) + 2*time.Millisecond)
		c.push(t, item(q, map[string]any{"n": 10}), item(q, map[string]any{"n": 11}))
		c.drain(t, q, g)
		c.seek(t, seekPath(g, q), map[string]any{"timestamp": at.UTC().Format(time.RFC3339)})
		if got := c.drain(t, q, g); !reflect.DeepEqual(got, []int{10, 11}) {
			t.Fatalf("after a seek to %s: %v, want [10 11]", at.UTC().Format(time.RFC3339), got)
		}
	})

	t.Run("seek toEnd: only new messages", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, g := uniq("toend"), uniq("g")
		c.pushN(t, q, "a", 3)
		c.pushN(t, q, "b", 2)
		held := c.popOK(t, partitionPath(q, "a")+"?batch=10&consumerGroup="+g)
		m := c.seek(t, seekPath(g, q), map[string]any{"toEnd": true})
		if m["seekToEnd"] != true || m["targetTimestamp"] != nil || num(t, "updated", m["partitionsUpdated"]) != 2 {
			t.Fatalf("seek to the end: %v", m)
		}
		c.popNone(t, queuePath(q)+"?partitions=10&consumerGroup="+g)
		if a := c.ack(t, g, ackOf(held.Messages[0], "completed")); a.Success {
			t.Errorf("ack under a lease the seek dropped: %v", a)
		}
		c.push(t, item(q, map[string]any{"n": 42}, "partition", "b"))
		if got := c.drain(t, q, g); !reflect.DeepEqual(got, []int{42}) {
			t.Fatalf("after a seek to the end and a push: %v, want [42]", got)
		}
		// queue mode was never moved: it reads everything.
		if got := c.drain(t, q, ""); len(got) != 6 {
			t.Errorf("queue mode: %v, want all 6", got)
		}
	})

	t.Run("seek one partition; a group that never popped joins where it seeks", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, g := uniq("pseek"), uniq("g")
		c.pushN(t, q, "a", 2)
		c.pushN(t, q, "b", 2)
		c.drain(t, q, g)
		m := c.seek(t, groupPath(g, "/queues/"+q+"/partitions/a/seek"), map[string]any{"timestamp": "1970-01-01T00:00:00Z"})
		wantKeys(t, "partition seek", m, "success", "consumerGroup", "queueName", "partitionName", "updated",
			"cursorMovedTo", "joined")
		if m["updated"] != true || m["cursorMovedTo"] != nil || m["partitionName"] != "a" {
			t.Fatalf("seek of a to the beginning: %v", m)
		}
		if got := c.drain(t, q, g); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("after seeking a back: %v, want a's [0 1] only", got)
		}
		// No body: to the end (Queen's partition seek takes none).
		m = c.seek(t, groupPath(g, "/queues/"+q+"/partitions/a/seek"), nil)
		if m["updated"] != true {
			t.Fatalf("partition seek without a body: %v", m)
		}
		wantTimestamp(t, "cursorMovedTo", m["cursorMovedTo"].(string))

		late := uniq("late")
		m = c.seek(t, seekPath(late, q), map[string]any{"toEnd": true})
		if m["joined"] != true || num(t, "updated", m["partitionsUpdated"]) != 2 {
			t.Fatalf("seek of a new group: %v", m)
		}
		c.popNone(t, queuePath(q)+"?partitions=10&consumerGroup="+late)

		wantPlainError(t, c.do(t, "POST", groupPath(g, "/queues/"+q+"/partitions/nope/seek"), nil),
			http.StatusNotFound, "Partition not found")
		wantPlainError(t, c.do(t, "POST", seekPath(g, uniq("missing")), map[string]any{"toEnd": true}),
			http.StatusNotFound, "Queue not found")
	})

	t.Run("seek refuses what it cannot read", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("badseek")
		c.pushN(t, q, "", 1)
		for _, tc := range []struct {
			body   any
			prefix string
		}{
			{`{}`, "Must specify either 'toEnd': true or 'timestamp'"},
			{nil, "Must specify either 'toEnd': true or 'timestamp'"},
			{`{"toEnd":false}`, "Must specify either 'toEnd': true or 'timestamp'"},
			{`{"toEnd":true,"timestamp":"1970-01-01T00:00:00Z"}`, "Specify either"},
			{`{"timestamp":"yesterday"}`, "bad body: timestamp: expected an RFC 3339 timestamp"},
			{`{"toEnd":"yes"}`, "bad body: toEnd"},
			{`{`, "bad body: "},
		} {
			wantPlainError(t, c.do(t, "POST", seekPath("g", q), tc.body), http.StatusBadRequest, tc.prefix)
		}
		wantPlainError(t, c.do(t, "POST", seekPath("a\x01b", q), `{"toEnd":true}`), http.StatusBadRequest,
			"bad path: group")
	})

	t.Run("list, describe and lagging: Queen's shapes", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, g, h := uniq("cg"), uniq("g"), uniq("h")
		c.pushN(t, q, "a", 3)
		c.pushN(t, q, "b", 1)
		p := c.popOK(t, partitionPath(q, "a")+"?batch=2&consumerGroup="+g)
		c.ack(t, g, ackOf(p.Messages[0], "completed"))
		c.drain(t, q, h)
		nextMillisecond(time.Now())

		var list []map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/consumer-groups", nil), http.StatusOK, &list)
		if len(list) != 2 {
			t.Fatalf("groups: %v", list)
		}
		byName := map[string]map[string]any{}
		for _, e := range list {
			wantKeys(t, "group", e, "name", "topics", "queueName", "members", "partitionsWithLag", "totalLag",
				"maxTimeLag", "state", "subscriptionMode", "subscriptionTimestamp", "subscriptionCreatedAt")
			byName[e["name"].(string)] = e
		}
		eg, eh := byName[g], byName[h]
		if eg == nil || eh == nil {
			t.Fatalf("groups %v, want %s and %s", list, g, h)
		}
		if !reflect.DeepEqual(eg["topics"], []any{q}) || eg["queueName"] != q || num(t, "lag", eg["totalLag"]) != 3 ||
			num(t, "with lag", eg["partitionsWithLag"]) != 2 || eg["state"] != "Stable" ||
			eg["subscriptionMode"] != "all" || eg["subscriptionTimestamp"] != nil {
			t.Errorf("group %s: %v", g, eg)
		}
		members := arr(t, "members", eg["members"])
		if len(members) != 1 {
			t.Fatalf("members of %s: %v, want its lease on a", g, members)
		}
		wantKeys(t, "member", obj(t, "member", members[0]), "partition", "partitionId", "leaseId", "leaseExpiresAt")
		if num(t, "lag", eh["totalLag"]) != 0 || len(arr(t, "members", eh["members"])) != 0 {
			t.Errorf("group %s: %v", h, eh)
		}
		wantTimestamp(t, "subscriptionCreatedAt", eg["subscriptionCreatedAt"].(string))
		wantJSON(t, c.do(t, "GET", "/api/v1/consumer-groups?limit=1&offset=1", nil), http.StatusOK, &list)
		if len(list) != 1 {
			t.Errorf("groups page 2 of 1: %v", list)
		}

		var detail map[string]map[string][]map[string]any
		wantJSON(t, c.do(t, "GET", groupPath(g, ""), nil), http.StatusOK, &detail)
		lanes := detail[q]["partitions"]
		if len(detail) != 1 || len(lanes) != 2 {
			t.Fatalf("group %s: %v", g, detail)
		}
		for _, l := range lanes {
			wantKeys(t, "lane", l, "partition", "partitionId", "workerId", "lastConsumedAt", "totalConsumed",
				"offsetLag", "timeLagSeconds", "leaseActive")
		}
		a := lanes[0]
		if a["partition"] != "a" || num(t, "consumed", a["totalConsumed"]) != 1 || num(t, "lag", a["offsetLag"]) != 2 ||
			a["leaseActive"] != true || a["workerId"] == nil || a["timeLagSeconds"].(float64) <= 0 {
			t.Errorf("lane a: %v", a)
		}
		if b := lanes[1]; b["partition"] != "b" || b["leaseActive"] != false || b["workerId"] != nil ||
			b["lastConsumedAt"] != nil {
			t.Errorf("lane b: %v", b)
		}
		wantPlainError(t, c.do(t, "GET", groupPath(uniq("nobody"), ""), nil), http.StatusNotFound,
			"Consumer group not found")

		var lagging []map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=0", nil), http.StatusOK, &lagging)
		if len(lagging) != 2 {
			t.Fatalf("lagging lanes: %v, want %s's two", lagging, g)
		}
		for _, l := range lagging {
			wantKeys(t, "lagging lane", l, "consumer_group", "queue_name", "partition_name", "partition_id", "worker_id",
				"offset_lag", "time_lag_seconds", "lag_hours", "oldest_unconsumed_at", "last_consumed_at")
			if l["consumer_group"] != g || l["queue_name"] != q {
				t.Errorf("lagging lane %v", l)
			}
		}
		if lagging[0]["partition_name"] != "a" || num(t, "lag", lagging[0]["offset_lag"]) != 2 {
			t.Errorf("most behind first: %v", lagging)
		}
		wantJSON(t, c.do(t, "GET", "/api/v1/consumer-groups/lagging", nil), http.StatusOK, &lagging)
		if len(lagging) != 0 {
			t.Errorf("lagging over the default hour: %v", lagging)
		}
		wantPlainError(t, c.do(t, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=abc", nil),
			http.StatusBadRequest, "bad query: minLagSeconds")
		wantPlainError(t, c.do(t, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=-1", nil),
			http.StatusBadRequest, "bad query: minLagSeconds")
	})

	t.Run("delete: with metadata (queenctl cg delete --metadata) and without", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, r, g, h := uniq("del"), uniq("del2"), uniq("g"), uniq("h")
		c.pushN(t, q, "", 2)
		c.pushN(t, r, "", 1)
		for _, group := range []string{g, h} {
			c.drain(t, q, group)
		}
		c.drain(t, r, g)

		var m map[string]any
		wantJSON(t, c.do(t, "DELETE", groupPath(g, "?deleteMetadata=true"), nil), http.StatusOK, &m)
		wantKeys(t, "delete", m, "success", "consumerGroup", "deletedPartitions", "metadataDeleted")
		if m["success"] != true || m["consumerGroup"] != g || num(t, "deleted", m["deletedPartitions"]) != 2 ||
			m["metadataDeleted"] != true {
			t.Fatalf("delete of %s: %v", g, m)
		}
		wantPlainError(t, c.do(t, "GET", groupPath(g, ""), nil), http.StatusNotFound, "Consumer group not found")
		var list []map[string]any
		wantJSON(t, c.do(t, "GET", "/api/v1/consumer-groups", nil), http.StatusOK, &list)
		for _, e := range list {
			if e["name"] == g {
				t.Errorf("%s still listed: %v", g, e)
			}
		}
		// Deleting again is not an error.
		m = nil
		wantJSON(t, c.do(t, "DELETE", groupPath(g, "?deleteMetadata=1"), nil), http.StatusOK, &m)
		if num(t, "deleted", m["deletedPartitions"]) != 0 {
			t.Errorf("second delete: %v", m)
		}

		// Without metadata, on one queue: h stays and reads again from its
		// subscription (the beginning).
		m = nil
		wantJSON(t, c.do(t, "DELETE", groupPath(h, "/queues/"+q), nil), http.StatusOK, &m)
		wantKeys(t, "delete on a queue", m, "success", "consumerGroup", "queueName", "deletedPartitions",
			"metadataDeleted")
		if m["queueName"] != q || m["metadataDeleted"] != false || num(t, "deleted", m["deletedPartitions"]) != 1 {
			t.Fatalf("delete of %s on %s: %v", h, q, m)
		}
		if got := c.drain(t, q, h); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Errorf("%s after its cursors were deleted: %v, want [0 1]", h, got)
		}
		wantPlainError(t, c.do(t, "DELETE", groupPath(h, "/queues/"+uniq("missing")), nil), http.StatusNotFound,
			"Queue not found")
		wantPlainError(t, c.do(t, "DELETE", groupPath(h, "?deleteMetadata=maybe"), nil), http.StatusBadRequest,
			"bad query: deleteMetadata")
	})

	t.Run("subscription and stats refresh", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q, g := uniq("sub"), uniq("g")
		c.pushN(t, q, "", 1)
		c.drain(t, q, g)
		var m map[string]any
		wantJSON(t, c.do(t, "POST", groupPath(g, "/subscription"), map[string]any{
			"subscriptionTimestamp": "2026-07-30T09:12:44.031Z"}), http.StatusOK, &m)
		wantKeys(t, "subscription", m, "success", "consumerGroup", "newTimestamp", "rowsUpdated")
		if m["newTimestamp"] != "2026-07-30T09:12:44.031Z" || num(t, "rows", m["rowsUpdated"]) != 1 {
			t.Errorf("subscription: %v", m)
		}
		wantPlainError(t, c.do(t, "POST", groupPath(g, "/subscription"), `{}`), http.StatusBadRequest,
			"Missing subscriptionTimestamp in request body")
		wantPlainError(t, c.do(t, "POST", groupPath(g, "/subscription"), `{"subscriptionTimestamp":"x"}`),
			http.StatusBadRequest, "bad body: subscriptionTimestamp")
		wantPlainError(t, c.do(t, "POST", groupPath(uniq("nobody"), "/subscription"),
			`{"subscriptionTimestamp":"2026-07-30T09:12:44Z"}`), http.StatusNotFound, "Consumer group not found")

		m = nil
		wantJSON(t, c.do(t, "POST", "/api/v1/stats/refresh", nil), http.StatusOK, &m)
		wantKeys(t, "stats refresh", m, "success", "statsAge", "message")
	})
}

// testSeekWake: a seek backwards wakes a long poll parked for the group,
// instead of leaving it to the broker's 1 s re-poll. It runs alone (a
// latency test), judged by the best of a few rounds.
func (s *suite) testSeekWake(t *testing.T) {
	c := s.server(t)
	q, g := uniq("seekwake"), uniq("g")
	c.pushN(t, q, "", 2)
	c.drain(t, q, g)
	var lats []time.Duration
	for range 3 {
		c.waitParked(t, 0)
		ch := c.popAsync(context.Background(), queuePath(q)+"?wait=true&timeout=5000&batch=10&consumerGroup="+g)
		c.waitParked(t, 1)
		select {
		case res := <-ch:
			t.Fatalf("the long poll returned before the seek: %v %v", res.err, res.r)
		default:
		}
		c.seek(t, seekPath(g, q), map[string]any{"timestamp": "1970-01-01T00:00:00Z"})
		seeked := time.Now()
		res := <-ch
		if res.err != nil {
			t.Fatal(res.err)
		}
		p := checkPop(t, res.r)
		if got := p.ns(t); !reflect.DeepEqual(got, []int{0, 1}) {
			t.Fatalf("the woken pop delivered %v, want [0 1]", got)
		}
		c.ackAll(t, g, p)
		lats = append(lats, res.done.Sub(seeked))
	}
	slices.Sort(lats)
	t.Logf("long poll answered %v after the seek's answer", lats)
	// A missed wake-up answers at the re-poll, about 1 s after the seek.
	if lats[0] > 300*time.Millisecond {
		t.Fatalf("the seek did not wake the long poll: best of %v", lats)
	}
}
