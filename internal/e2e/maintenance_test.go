package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
)

// Maintenance modes are broker-wide. Push maintenance turned on through
// broker A makes pushes on broker B go to B's spool within a few seconds;
// turned off through A, both brokers replay their spools. Pop maintenance
// turned on through A makes pops on B answer 204 at once.
func TestMaintenanceModeIsSharedByBrokers(t *testing.T) {
	testURL(t)
	const queue = "e2e-maintenance"
	a, b := twoBrokersWith(t, 4,
		server.Config{SpoolDir: t.TempDir()}, server.Config{SpoolDir: t.TempDir()})
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	setMaintenance := func(node *broker, on bool) {
		t.Helper()
		var m map[string]any
		status, body, err := c.do(ctx, "POST", node.url+"/api/v1/system/maintenance", fmt.Sprintf(`{"enabled":%v}`, on))
		if err != nil {
			t.Fatalf("maintenance %v on %s: %v", on, node.name, err)
		}
		if status != http.StatusOK {
			t.Fatalf("maintenance %v on %s: status %d, body %s", on, node.name, status, body)
		}
		if _, _, err := c.getJSON(ctx, node.url+"/api/v1/system/maintenance", &m); err != nil || m["maintenanceMode"] != on {
			t.Fatalf("maintenance %v on %s: then GET says %v (%v)", on, node.name, m, err)
		}
	}
	maintenanceOf := func(node *broker) map[string]any {
		var m map[string]any
		if _, _, err := c.getJSON(ctx, node.url+"/api/v1/system/maintenance", &m); err != nil {
			t.Fatalf("GET maintenance on %s: %v", node.name, err)
		}
		return m
	}
	// accepted holds every item answered queued or buffered, by
	// transactionId, with the message id it was given.
	accepted := map[string]string{}
	seq := 0
	pushOne := func(node *broker) string {
		t.Helper()
		txn := fmt.Sprintf("%s-%d", node.name, seq)
		seq++
		res, err := c.push(ctx, node.url, []pushItem{{Queue: queue, TransactionID: txn, Payload: map[string]any{"seq": seq}}})
		if err != nil {
			t.Fatalf("push on %s: %v", node.name, err)
		}
		switch res[0].Status {
		case "queued", "buffered":
			accepted[txn] = res[0].MessageID
		default:
			t.Fatalf("push on %s: %+v, want queued or buffered", node.name, res[0])
		}
		return res[0].Status
	}

	if st := pushOne(b); st != "queued" {
		t.Fatalf("before maintenance: push on B answered %s, want queued", st)
	}
	setMaintenance(a, true)
	on := time.Now()
	var last string
	if !waitUntil(3500*time.Millisecond, 100*time.Millisecond, func() bool {
		last = pushOne(b)
		return last == "buffered"
	}) {
		t.Fatalf("push maintenance turned on through A: pushes on B still answer %s after %v", last, time.Since(on))
	}
	t.Logf("push maintenance on through A: a push on B answered buffered %v later", time.Since(on).Round(time.Millisecond))
	if m := maintenanceOf(b); m["maintenanceMode"] != true {
		t.Errorf("B reports maintenance status %v, want maintenanceMode true", m)
	}
	if st := pushOne(a); st != "buffered" {
		t.Errorf("in maintenance: push on A answered %s, want buffered", st)
	}

	setMaintenance(a, false)
	off := time.Now()
	var ma, mb map[string]any
	if !waitUntil(10*time.Second, 100*time.Millisecond, func() bool {
		ma, mb = maintenanceOf(a), maintenanceOf(b)
		return mb["maintenanceMode"] == false && ma["bufferedMessages"] == float64(0) && mb["bufferedMessages"] == float64(0)
	}) {
		t.Fatalf("push maintenance turned off through A: after 10s A reports %v, B reports %v; want both off with nothing buffered", ma, mb)
	}
	t.Logf("push maintenance off through A: both spools replayed %v later", time.Since(off).Round(time.Millisecond))
	if st := pushOne(b); st != "queued" {
		t.Errorf("after maintenance: push on B answered %s, want queued", st)
	}

	found := map[string]int{}
	record := func(p *popResponse) {
		t.Helper()
		for _, m := range p.Messages {
			found[m.TransactionID]++
			if id, ok := accepted[m.TransactionID]; ok && id != m.ID {
				t.Errorf("message %s: stored as %s, answered %s", m.TransactionID, m.ID, id)
			}
		}
		if err := c.ackAll(ctx, b.url, p); err != nil {
			t.Fatalf("%v", err)
		}
	}

	// Pop maintenance through A: B's pops answer 204 at once, long polls
	// included, though the queue holds messages. (Pops made before B
	// adopts the mode deliver; those messages are acked and counted.)
	setPopMaintenance := func(on bool) {
		t.Helper()
		status, body, err := c.do(ctx, "POST", a.url+"/api/v1/system/maintenance/pop", fmt.Sprintf(`{"enabled":%v}`, on))
		if err != nil || status != http.StatusOK {
			t.Fatalf("pop maintenance %v on A: %d %s %v", on, status, body, err)
		}
	}
	// Enough messages that the polling pops below cannot empty the queue.
	more := make([]pushItem, 100)
	for i := range more {
		more[i] = pushItem{Queue: queue, TransactionID: fmt.Sprintf("more-%d", i), Payload: map[string]any{"more": i}}
	}
	res, err := c.push(ctx, a.url, more)
	if err != nil {
		t.Fatalf("push on A: %v", err)
	}
	for i, r := range res {
		if r.Status != "queued" {
			t.Fatalf("push on A after maintenance: item %d %+v, want queued", i, r)
		}
		accepted[more[i].TransactionID] = r.MessageID
	}
	setPopMaintenance(true)
	on = time.Now()
	var popErr error
	if !waitUntil(3500*time.Millisecond, 100*time.Millisecond, func() bool {
		var p *popResponse
		p, popErr = c.pop(ctx, b.url, queuePath(queue)+"?batch=1")
		if p != nil {
			record(p)
		}
		return popErr == nil && p == nil
	}) {
		t.Fatalf("pop maintenance turned on through A: pops on B still deliver after %v (last error %v)", time.Since(on), popErr)
	}
	t.Logf("pop maintenance on through A: a pop on B answered 204 %v later", time.Since(on).Round(time.Millisecond))
	var pm map[string]any
	if _, _, err := c.getJSON(ctx, b.url+"/api/v1/system/maintenance/pop", &pm); err != nil || pm["popMaintenanceMode"] != true {
		t.Errorf("in pop maintenance: B reports %v (%v), want popMaintenanceMode true", pm, err)
	}
	start := time.Now()
	if p, err := c.pop(ctx, b.url, queuePath(queue)+"?wait=true&timeout=5000"); err != nil || p != nil {
		t.Fatalf("in pop maintenance: long poll on B: %v, %v; want 204", p, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("in pop maintenance: a long poll on B took %v, want an immediate 204", d)
	}
	setPopMaintenance(false)
	if !waitUntil(3500*time.Millisecond, 100*time.Millisecond, func() bool {
		p, err := c.pop(ctx, b.url, queuePath(queue)+"?batch=1")
		if p != nil {
			record(p)
		}
		return err == nil && p != nil
	}) {
		t.Fatalf("pop maintenance turned off through A: pops on B still answer 204 after 3.5s")
	}

	// Every accepted item is in the queue exactly once, under its id.
	for empty := 0; empty < 2; {
		p, err := c.pop(ctx, b.url, queuePath(queue)+"?batch=1000")
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if p == nil {
			empty++
			continue
		}
		empty = 0
		record(p)
	}
	for txn := range accepted {
		if found[txn] != 1 {
			t.Errorf("item %s: in the queue %d times, want once", txn, found[txn])
		}
	}
	if len(found) != len(accepted) {
		t.Errorf("%d distinct items in the queue, %d accepted", len(found), len(accepted))
	}
	t.Logf("maintenance across brokers: %d items accepted, %d found", len(accepted), len(found))
}
