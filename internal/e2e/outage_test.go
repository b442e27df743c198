package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
)

// dbAddr returns the host:port of the database at u.
func dbAddr(t testing.TB, u string) string {
	t.Helper()
	cc, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatalf("parse QUEEN_TEST_DATABASE_URL: %v", err)
	}
	return net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
}

// proxiedURL returns the database URL u rewritten to reach the database
// through addr (host:port).
func proxiedURL(u, addr string) string {
	if pu, err := url.Parse(u); err == nil && (pu.Scheme == "postgres" || pu.Scheme == "postgresql") {
		pu.Host = addr
		q := pu.Query()
		q.Del("host")
		q.Del("port")
		pu.RawQuery = q.Encode()
		return pu.String()
	}
	// A key=value DSN: later keys win.
	host, port, _ := net.SplitHostPort(addr)
	return u + " host=" + host + " port=" + port
}

// outagePayload is the payload of TestOutageLosesNothing's messages.
type outagePayload struct {
	Producer int `json:"producer"`
	Seq      int `json:"seq"`
}

// verdict is what the broker answered for one pushed item.
type verdict struct {
	status    string // queued, buffered, failed, … or "error" (no verdict)
	messageID string
	detail    string
}

// pushCall is one push request of the outage test's producers.
type pushCall struct {
	start, end time.Time
	statuses   map[string]int
	err        string
}

// While PostgreSQL is unreachable the broker reports it (/health 503, pops
// 5xx) and keeps accepting pushes into its disk spool; once the database is
// back it replays the spool by itself, and every item it answered queued or
// buffered is in the queue exactly once.
func TestOutageLosesNothing(t *testing.T) {
	u := testURL(t)
	schema := newSchema(t)
	const (
		queue      = "e2e-outage"
		producers  = 4
		batch      = 10
		partitions = 4
		cutFor     = 2500 * time.Millisecond
	)
	// The proxy goes first so that it outlives the broker at cleanup.
	px := startProxy(t, dbAddr(t, u))
	br := startBroker(t, "outage",
		postgres.Config{URL: proxiedURL(u, px.Addr()), Schema: schema, PoolSize: 4, StatementTimeout: 2 * time.Second},
		server.Config{SpoolDir: t.TempDir()})
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()

	var (
		mu       sync.Mutex
		verdicts = map[string]*verdict{} // by transactionId
		calls    []pushCall
	)
	count := func(status string, after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, pc := range calls {
			if !pc.start.Before(after) {
				n += pc.statuses[status]
			}
		}
		return n
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for id := range producers {
		wg.Go(func() {
			for seq := 0; ; {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				items := make([]pushItem, batch)
				for j := range items {
					items[j] = pushItem{Queue: queue, Partition: fmt.Sprintf("p%d", (seq+id)%partitions),
						TransactionID: fmt.Sprintf("w%d-%d", id, seq), Payload: outagePayload{Producer: id, Seq: seq}}
					seq++
				}
				pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
				start := time.Now()
				res, err := c.push(pctx, br.url, items)
				end := time.Now()
				pcancel()
				pc := pushCall{start: start, end: end, statuses: map[string]int{}}
				mu.Lock()
				for j, it := range items {
					v := &verdict{}
					if err != nil {
						v.status, v.detail = "error", err.Error()
						pc.err = err.Error()
					} else {
						v.status, v.messageID, v.detail = res[j].Status, res[j].MessageID, res[j].Error
					}
					pc.statuses[v.status]++
					verdicts[it.TransactionID] = v
				}
				calls = append(calls, pc)
				mu.Unlock()
				// A steady load, not a flood: while the spool is not empty
				// every push goes to it, so the spool only drains if replay
				// outruns the producers, which -race on two cores barely does
				// at full speed.
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	stopProducers := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopProducers()

	maintenance := func() (map[string]any, error) {
		var m map[string]any
		status, body, err := c.getJSON(ctx, br.url+"/api/v1/system/maintenance", &m)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("maintenance: status %d, body %s", status, body)
		}
		return m, err
	}

	// Normal operation first.
	if !waitUntil(30*time.Second, 20*time.Millisecond, func() bool { return count("queued", time.Time{}) >= 200 }) {
		t.Fatalf("before the outage: only %d items queued after 30s", count("queued", time.Time{}))
	}

	// The outage.
	px.Cut()
	cutAt := time.Now()
	t.Logf("database cut at %s", cutAt.Format("15:04:05.000"))

	// /health reports it.
	var health map[string]any
	var healthStatus int
	var healthBody []byte
	if !waitUntil(10*time.Second, 50*time.Millisecond, func() bool {
		var err error
		health = nil
		healthStatus, healthBody, err = c.getJSON(ctx, br.url+"/health", &health)
		return err == nil && healthStatus == http.StatusServiceUnavailable
	}) {
		t.Errorf("during the outage: /health answered %d %s, want 503", healthStatus, healthBody)
	} else if health["status"] != "unhealthy" || health["database"] != "disconnected" {
		t.Errorf("during the outage: /health body %s, want status unhealthy and database disconnected", healthBody)
	} else {
		t.Logf("during the outage: /health %d %s (%v after the cut)", healthStatus, healthBody, time.Since(cutAt).Round(time.Millisecond))
	}

	// A pop fails with 503 and an error body.
	status, body, err := c.do(ctx, "GET", br.url+queuePath(queue)+"?batch=10", nil)
	if err == nil {
		err = outageError(status, body)
	}
	if err != nil {
		t.Errorf("during the outage: pop: %v", err)
	} else {
		t.Logf("during the outage: pop %d %s", status, body)
	}

	// Pushes keep being accepted, into the spool.
	if !waitUntil(10*time.Second, 20*time.Millisecond, func() bool { return count("buffered", cutAt) >= 1 }) {
		t.Errorf("during the outage: no push answered buffered within 10s of the cut")
	}
	if m, err := maintenance(); err != nil {
		t.Errorf("during the outage: %v", err)
	} else {
		t.Logf("during the outage: maintenance status %v", m)
	}
	time.Sleep(time.Until(cutAt.Add(cutFor)))
	// Health is still 503 at the end of the cut.
	if st, b, err := c.getJSON(ctx, br.url+"/health", &health); err != nil || st != http.StatusServiceUnavailable {
		t.Errorf("at the end of the outage: /health %d %s %v, want 503", st, b, err)
	}
	if m, err := maintenance(); err != nil {
		t.Errorf("at the end of the outage: %v", err)
	} else {
		t.Logf("at the end of the outage: bufferedMessages %v", m["bufferedMessages"])
	}
	px.Restore()
	restoredAt := time.Now()
	t.Logf("database restored at %s after %v", restoredAt.Format("15:04:05.000"), restoredAt.Sub(cutAt).Round(time.Millisecond))

	// Every push that started after the cut and was answered before the
	// restore was spooled.
	mu.Lock()
	var duringCut, duringCutItems int
	var wrongDuringCut []string
	for _, pc := range calls {
		if pc.start.After(cutAt) && pc.end.Before(restoredAt) {
			duringCut++
			for s, n := range pc.statuses {
				duringCutItems += n
				if s != "buffered" {
					wrongDuringCut = append(wrongDuringCut, fmt.Sprintf("%d items %s (%s)", n, s, pc.err))
				}
			}
		}
	}
	mu.Unlock()
	t.Logf("during the outage: %d pushes (%d items) started and answered", duringCut, duringCutItems)
	if duringCut == 0 {
		t.Errorf("no push started and was answered during the %v outage", cutFor)
	}
	if len(wrongDuringCut) != 0 {
		t.Errorf("pushes during the outage not answered buffered: %v", wrongDuringCut)
	}

	// Recovery: the broker reconnects and replays the spool by itself.
	var last map[string]any
	recovered := waitUntil(60*time.Second, 50*time.Millisecond, func() bool {
		m, err := maintenance()
		if err != nil {
			return false
		}
		last = m
		if m["bufferedMessages"] != float64(0) {
			return false
		}
		st, _, err := c.getJSON(ctx, br.url+"/health", &health)
		return err == nil && st == http.StatusOK
	})
	recoveredAt := time.Now()
	if !recovered {
		t.Fatalf("60s after the restore: maintenance status %v, /health %v; want bufferedMessages 0 and 200", last, health)
	}
	t.Logf("recovered (spool replayed, /health 200) %v after the restore", recoveredAt.Sub(restoredAt).Round(time.Millisecond))
	// Pushes go straight to the database again.
	if !waitUntil(30*time.Second, 20*time.Millisecond, func() bool { return count("queued", recoveredAt) >= 1 }) {
		t.Errorf("after recovery: no push answered queued within 30s")
	}
	stopProducers()
	// The last pushes may have met a spool that was not quite empty.
	if !waitUntil(60*time.Second, 50*time.Millisecond, func() bool {
		m, err := maintenance()
		last = m
		return err == nil && m["bufferedMessages"] == float64(0)
	}) {
		t.Fatalf("after the producers stopped: maintenance status %v, want bufferedMessages 0", last)
	}

	// Drain the queue through the broker.
	found := map[string][]message{}
	type orderKey struct {
		partition string
		producer  int
	}
	lastSeq := map[orderKey]int{}
	var orderErrors []string
	empty := 0
	drainStart := time.Now()
	for empty < 2 {
		if time.Since(drainStart) > 60*time.Second {
			t.Fatalf("drain: not empty after 60s, %d transactionIds found so far", len(found))
		}
		p, err := c.pop(ctx, br.url, queuePath(queue)+"?batch=1000")
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
		if p == nil {
			empty++
			continue
		}
		empty = 0
		for _, m := range p.Messages {
			found[m.TransactionID] = append(found[m.TransactionID], m)
			var pl outagePayload
			if err := json.Unmarshal(m.Data, &pl); err != nil {
				t.Errorf("drain: message %s has payload %s", m.ID, m.Data)
				continue
			}
			k := orderKey{m.Partition, pl.Producer}
			if prev, ok := lastSeq[k]; ok && pl.Seq <= prev {
				orderErrors = append(orderErrors, fmt.Sprintf("partition %s producer %d: seq %d after %d", m.Partition, pl.Producer, pl.Seq, prev))
			}
			lastSeq[k] = pl.Seq
		}
		if err := c.ackAll(ctx, br.url, p); err != nil {
			t.Fatalf("drain: %v", err)
		}
	}

	// Every accepted item is there exactly once, under the id it was given.
	mu.Lock()
	defer mu.Unlock()
	byStatus := map[string]int{}
	var missing, duplicated, failedButStored, wrongID, unknown, others []string
	for txn, v := range verdicts {
		byStatus[v.status]++
		got := found[txn]
		switch v.status {
		case "queued", "buffered":
			switch {
			case len(got) == 0:
				missing = append(missing, fmt.Sprintf("%s (%s %s)", txn, v.status, v.messageID))
			case len(got) > 1:
				duplicated = append(duplicated, fmt.Sprintf("%s ×%d", txn, len(got)))
			case got[0].ID != v.messageID:
				wrongID = append(wrongID, fmt.Sprintf("%s: answered %s, stored %s", txn, v.messageID, got[0].ID))
			}
		case "failed":
			if len(got) != 0 {
				failedButStored = append(failedButStored, fmt.Sprintf("%s (%s)", txn, v.detail))
			}
		default:
			others = append(others, fmt.Sprintf("%s: %s %s (stored %d×)", txn, v.status, v.detail, len(got)))
			if len(got) > 1 {
				duplicated = append(duplicated, fmt.Sprintf("%s ×%d", txn, len(got)))
			}
		}
	}
	dupMessages := 0
	for txn, got := range found {
		dupMessages += len(got) - 1
		if verdicts[txn] == nil {
			unknown = append(unknown, txn)
		}
	}
	t.Logf("outage: items pushed %d: queued %d, buffered %d, failed %d, other %d; found in the queue %d (distinct %d), duplicates %d, missing %d; %d pushes in all",
		len(verdicts), byStatus["queued"], byStatus["buffered"], byStatus["failed"], len(others),
		len(found)+dupMessages, len(found), dupMessages, len(missing), len(calls))
	if byStatus["buffered"] == 0 {
		t.Errorf("no item was answered buffered: the outage did not happen under load")
	}
	report := func(what string, list []string) {
		if len(list) != 0 {
			t.Errorf("%d items %s, e.g. %v", len(list), what, list[:min(10, len(list))])
		}
	}
	report("answered queued or buffered but missing from the queue", missing)
	report("stored more than once", duplicated)
	report("answered failed but stored", failedButStored)
	report("stored under another message id than the one answered", wrongID)
	report("answered neither queued nor buffered", others)
	report("in the queue but never pushed by this test", unknown)
	if len(orderErrors) != 0 {
		t.Errorf("%d order violations within a partition, e.g. %v", len(orderErrors), orderErrors[:min(5, len(orderErrors))])
	}
	if byStatus["failed"] != 0 {
		t.Logf("note: %d items answered failed (spool write failed)", byStatus["failed"])
	}
}
