package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// timerCounts reads how many of the queue's timers are scheduled and fired.
func timerCounts(ctx context.Context, c *client, base, queue string) (scheduled, fired int, err error) {
	for _, st := range []string{"scheduled", "fired"} {
		var out struct {
			Pagination struct {
				Total int `json:"total"`
			} `json:"pagination"`
		}
		status, body, err := c.getJSON(ctx, base+"/api/v1/timers?limit=1&queue="+queue+"&status="+st, &out)
		if err != nil {
			return 0, 0, err
		}
		if status != http.StatusOK {
			return 0, 0, fmt.Errorf("list timers: %d %s", status, body)
		}
		if st == "scheduled" {
			scheduled = out.Pagination.Total
		} else {
			fired = out.Pagination.Total
		}
	}
	return scheduled, fired, nil
}

// The timer service of a broker killed with SIGKILL in the middle of firing
// (some fire transactions committed, others not yet run or in flight) loses
// no timer and fires none twice: after a restart on the same database every
// timer has fired exactly once, and the queue holds exactly one message per
// timer. A fire is one transaction (the pushes and the status change), so
// the kill either committed it or left it to the next broker.
func TestTimerServiceKilledMidFire(t *testing.T) {
	u := testURL(t)
	schema := newSchema(t)
	env := []string{"QUEEN_DATABASE_URL=" + u, "QUEEN_PG_SCHEMA=" + schema, "DB_POOL_SIZE=8",
		"TIMER_BATCH_SIZE=25", "LOG_LEVEL=warn", "QUEEN_TENANT_BURST=100000"}
	p := startProcess(t, env...)
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const n, queue = 3000, "e2e-timer-kill"
	fireAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	for start := 0; start < n; start += 500 {
		items := make([]map[string]any, 500)
		for i := range items {
			items[i] = map[string]any{"queue": queue, "payload": map[string]any{"n": start + i}, "fireAt": fireAt,
				"transactionId": fmt.Sprintf("t-%d", start+i)}
		}
		status, body, err := c.do(ctx, "POST", p.url+"/api/v1/timers", map[string]any{"items": items})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("schedule: %d %s %v", status, body, err)
		}
	}

	// Kill the broker as soon as the first fire has committed.
	var firedAtKill int
	if !waitUntil(30*time.Second, 2*time.Millisecond, func() bool {
		_, fired, err := timerCounts(ctx, c, p.url, queue)
		firedAtKill = fired
		return err == nil && fired > 0
	}) {
		t.Fatal("no timer fired within 30s")
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	t.Logf("killed with %d of %d timers fired (seen before the kill)", firedAtKill, n)

	p2 := startProcess(t, env...)
	if !waitUntil(60*time.Second, 50*time.Millisecond, func() bool {
		scheduled, _, err := timerCounts(ctx, c, p2.url, queue)
		return err == nil && scheduled == 0
	}) {
		t.Fatal("timers still scheduled 60s after the restart")
	}
	if _, fired, err := timerCounts(ctx, c, p2.url, queue); err != nil || fired != n {
		t.Fatalf("fired timers after the restart: %d (%v), want %d", fired, err, n)
	}
	seen := make(map[string]int, n)
	for {
		res, err := c.pop(ctx, p2.url, queuePath(queue)+"?batch=1000")
		if err != nil {
			t.Fatal(err)
		}
		if res == nil {
			break
		}
		for _, m := range res.Messages {
			seen[m.TransactionID]++
			var payload struct{ N int }
			if err := json.Unmarshal(m.Data, &payload); err != nil || fmt.Sprintf("t-%d", payload.N) != m.TransactionID {
				t.Fatalf("message %s: payload %s does not match its transactionId", m.ID, m.Data)
			}
		}
		if err := c.ackAll(ctx, p2.url, res); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages in the queue, want %d (a timer was lost)", len(seen), n)
	}
	for txn, k := range seen {
		if k != 1 {
			t.Fatalf("timer %s fired %d times", txn, k)
		}
	}
}
