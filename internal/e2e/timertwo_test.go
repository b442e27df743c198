package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Two brokers on one database both run a timer service; timers scheduled on
// either fire once each (one broker fires at a time, under the job lock),
// and a consumer long-polling on the broker that did not fire them wakes
// (the fire's push announces the queue like any push).
func TestTimersOnTwoBrokers(t *testing.T) {
	a, b := twoBrokers(t, 8)
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, queue = 400, "e2e-timers-two"
	fireAt := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	for i, br := range []*broker{a, b} {
		items := make([]map[string]any, n/2)
		for j := range items {
			items[j] = map[string]any{"queue": queue, "payload": j, "fireAt": fireAt,
				"transactionId": fmt.Sprintf("b%d-%d", i, j)}
		}
		status, body, err := c.do(ctx, "POST", br.url+"/api/v1/timers", map[string]any{"items": items})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("schedule on %s: %d %s %v", br.name, status, body, err)
		}
	}
	seen := map[string]int{}
	total := 0
	for total < n && ctx.Err() == nil {
		for _, br := range []*broker{a, b} {
			res, err := c.pop(ctx, br.url, queuePath(queue)+"?batch=500&wait=true&timeout=1000")
			if err != nil {
				t.Fatal(err)
			}
			if res == nil {
				continue
			}
			for _, m := range res.Messages {
				seen[m.TransactionID]++
				total++
			}
			if err := c.ackAll(ctx, br.url, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if total != n || len(seen) != n {
		t.Fatalf("received %d messages (%d distinct), want %d once each", total, len(seen), n)
	}
	if _, fired, err := timerCounts(ctx, c, a.url, queue); err != nil || fired != n {
		t.Fatalf("fired timers: %d (%v), want %d", fired, err, n)
	}
}
