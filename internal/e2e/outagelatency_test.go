package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
)

// latencyPayload is the payload of TestOutageLatencyAfterReturn's messages.
type latencyPayload struct {
	Producer int `json:"producer"`
	Seq      int `json:"seq"`
}

// tracked is what TestOutageLatencyAfterReturn knows of one message.
type tracked struct {
	producer, seq int
	partition     string
	partitionID   string    // as delivered
	pushStart     time.Time // the push request was sent
	pushEnd       time.Time // its answer arrived
	status        string    // queued, buffered, …, or "error"; "" while the push is in flight
	detail        string
	messageID     string
	delivered     time.Time // first delivery
	deliveryRank  int       // the first delivery's place among all first deliveries
	deliveries    int
	acked         bool // an acknowledgement was confirmed
	// ambiguous: an acknowledgement sent again because the outage swallowed
	// the answer was refused as "invalid or expired lease", which it is
	// too when the first one committed (and released the lease).
	ambiguous bool
	ackedBy   string   // the transactionId whose acknowledgement covered it
	otherIDs  []string // ids it was delivered under other than the one answered
	afterAck  int      // deliveries after a confirmed acknowledgement
}

// ackOutcome is the broker's verdict on one acknowledgement.
type ackOutcome struct {
	success, noop bool
	err           string
}

// ackEach acknowledges every message of p as completed in one batch and
// returns the verdict on each. An error means there is no verdict: the
// request failed or was answered with anything but 200.
func (c *client) ackEach(ctx context.Context, base string, p *popResponse) ([]ackOutcome, error) {
	acks := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		a := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "completed"}
		if m.LeaseID != nil {
			a["leaseId"] = *m.LeaseID
		}
		acks[i] = a
	}
	status, body, err := c.do(ctx, "POST", base+"/api/v1/ack/batch", map[string]any{"acknowledgments": acks})
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("ack batch: status %d, body %s", status, body)
	}
	var res []struct {
		TransactionID string  `json:"transactionId"`
		Success       bool    `json:"success"`
		Noop          bool    `json:"noop"`
		Error         *string `json:"error"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("ack batch: body %s: %w", body, err)
	}
	if len(res) != len(acks) {
		return nil, fmt.Errorf("ack batch: %d verdicts for %d acks; body %s", len(res), len(acks), body)
	}
	out := make([]ackOutcome, len(res))
	for i, r := range res {
		if r.TransactionID != p.Messages[i].TransactionID {
			return nil, fmt.Errorf("ack batch: verdict %d is for %s, not %s; body %s", i, r.TransactionID, p.Messages[i].TransactionID, body)
		}
		out[i].success, out[i].noop = r.Success, r.Noop
		if r.Error != nil {
			out[i].err = *r.Error
		}
	}
	return out, nil
}

// Producers push at a steady rate and consumers pop and acknowledge
// continuously while PostgreSQL goes away twice for a few seconds. Once the
// database is back, pushes must not queue behind the spool for as long as
// the load lasts (the old behaviour: every push went to the spool while it
// held anything, so under a load its replay could not outrun it drained
// only when the load stopped). So after each restore the spool empties
// while the load goes on, no push made after that is spooled, and the
// median push-to-delivery latency of pushes made after the return stays
// under a second. Nothing accepted is lost, nothing is stored twice or
// delivered again after a confirmed acknowledgement, and each producer's
// messages leave each partition in the order it pushed them.
//
// It logs push-to-delivery latencies (median, p99) per phase and how long
// the spool held pushes after each restore.
func TestOutageLatencyAfterReturn(t *testing.T) {
	u := testURL(t)
	schema := newSchema(t)
	const (
		queue      = "e2e-outage-latency"
		producers  = 4
		batch      = 10
		partitions = 4
		consumers  = 4
		// Large pops, so that consumers drain an outage's backlog quickly
		// and what is measured is the broker, not the consumers.
		popBatch  = 1000
		leaseTime = 3 // seconds
		warmUp    = 2 * time.Second
		cutFor    = 5 * time.Second
		upBetween = 5 * time.Second
		upAfter   = 10 * time.Second
		// medianBound is the bound on the median latency of pushes made
		// after the database came back.
		medianBound = time.Second
	)
	// Messages per second, all producers together. The race detector makes
	// every request several times dearer; at the full rate the two cores of
	// a CI machine saturate, and what would be measured is the CPU.
	rate := 2000
	if raceEnabled {
		rate = 1000
	}
	interval := time.Second * producers * batch / time.Duration(rate)

	px := startProxy(t, dbAddr(t, u))
	br := startBroker(t, "latency",
		postgres.Config{URL: proxiedURL(u, px.Addr()), Schema: schema, PoolSize: 8, StatementTimeout: 2 * time.Second},
		server.Config{SpoolDir: t.TempDir()})
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	// A short lease, so that a batch whose acknowledgement the outage
	// refused comes back soon; retries enough that none reaches the DLQ.
	status, body, err := c.do(ctx, "POST", br.url+"/api/v1/configure", map[string]any{
		"queue": queue, "options": map[string]any{"leaseTime": leaseTime, "retryLimit": 1000, "retryDelay": 0}})
	if err != nil || status != http.StatusOK {
		t.Fatalf("configure %s: %d %s %v", queue, status, body, err)
	}

	var (
		mu            sync.Mutex
		msgs          = map[string]*tracked{} // by transactionId
		unknown       []string                // delivered, never pushed
		firsts        int                     // first deliveries so far
		lastDelivery  time.Time
		ackRetried    int // acknowledgements sent again because the first got no verdict
		ackRefused    int // acknowledgements refused (the lease expired): redelivery expected
		ackAmbiguous  int // acknowledgements that became ambiguous (see tracked.ambiguous)
		redeliveredOK int // deliveries after a refused or ambiguous acknowledgement
	)

	// Producers: a push of batch items every interval each, spread over the
	// partitions, on a fixed schedule: a slow push is followed by quick
	// ones until the producer is back on schedule, unless it fell more
	// than a second behind. The producers' schedules are staggered, so
	// that pushes arrive evenly rather than in bursts with pauses between.
	stopProducers := make(chan struct{})
	var pwg sync.WaitGroup
	for id := range producers {
		pwg.Go(func() {
			next := time.Now().Add(time.Duration(id) * interval / producers)
			for seq := 0; ; {
				next = next.Add(interval)
				if time.Since(next) > time.Second {
					next = time.Now()
				}
				select {
				case <-stopProducers:
					return
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				items := make([]pushItem, batch)
				ts := make([]*tracked, batch)
				start := time.Now()
				mu.Lock()
				for j := range items {
					txn := fmt.Sprintf("l%d-%d", id, seq)
					items[j] = pushItem{Queue: queue, Partition: fmt.Sprintf("p%d", (seq+id)%partitions),
						TransactionID: txn, Payload: latencyPayload{Producer: id, Seq: seq}}
					// Recorded before the push: a consumer may get the
					// message before the producer hears the verdict.
					ts[j] = &tracked{producer: id, seq: seq, partition: items[j].Partition, pushStart: start}
					msgs[txn] = ts[j]
					seq++
				}
				mu.Unlock()
				pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
				res, err := c.push(pctx, br.url, items)
				pcancel()
				end := time.Now()
				mu.Lock()
				for j, tr := range ts {
					tr.pushEnd = end
					if err != nil {
						tr.status, tr.detail = "error", err.Error()
						continue
					}
					tr.status, tr.messageID, tr.detail = res[j].Status, res[j].MessageID, res[j].Error
				}
				mu.Unlock()
			}
		})
	}
	var stopProducersOnce sync.Once
	stopLoad := func() { stopProducersOnce.Do(func() { close(stopProducers); pwg.Wait() }) }
	defer stopLoad()

	// Consumers: pop, record, acknowledge. A failed pop (the outage) is
	// retried. A batch is acknowledged by its last message of each
	// partition, which commits everything before it: one item per
	// partition keeps the acknowledgement's cost independent of the batch
	// size (resolving each of 1,000 transactionIds can cost a scan of the
	// partition on a fresh schema), so what is measured is the outage
	// path. An acknowledgement without a verdict (the outage) is sent
	// again until it gets one: "already committed" then means the first
	// one was applied; a refusal means the lease expired meanwhile and the
	// messages come back.
	stopConsumers := make(chan struct{})
	var cwg sync.WaitGroup
	for range consumers {
		cwg.Go(func() {
			for {
				select {
				case <-stopConsumers:
					return
				case <-ctx.Done():
					return
				default:
				}
				p, err := c.pop(ctx, br.url, queuePath(queue)+fmt.Sprintf("?batch=%d&wait=true&timeout=500", popBatch))
				now := time.Now()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if p == nil {
					continue
				}
				mu.Lock()
				lastDelivery = now
				for _, m := range p.Messages {
					tr := msgs[m.TransactionID]
					if tr == nil {
						unknown = append(unknown, m.TransactionID)
						continue
					}
					if tr.deliveries == 0 {
						tr.delivered = now
						firsts++
						tr.deliveryRank = firsts
					} else if !tr.acked {
						redeliveredOK++
					}
					tr.deliveries++
					if tr.acked {
						tr.afterAck++
					}
					if tr.messageID != "" && m.ID != tr.messageID {
						tr.otherIDs = append(tr.otherIDs, m.ID)
					}
				}
				mu.Unlock()
				lastOf := map[string]int{} // partitionId → index in acks
				acks := &popResponse{}
				for i := len(p.Messages) - 1; i >= 0; i-- {
					if _, ok := lastOf[p.Messages[i].PartitionID]; !ok {
						lastOf[p.Messages[i].PartitionID] = len(acks.Messages)
						acks.Messages = append(acks.Messages, p.Messages[i])
					}
				}
				var verdicts []ackOutcome
				retried := false
				for {
					if verdicts, err = c.ackEach(ctx, br.url, acks); err == nil || ctx.Err() != nil {
						break
					}
					retried = true
					time.Sleep(100 * time.Millisecond)
				}
				if err != nil {
					return // the test's deadline passed
				}
				mu.Lock()
				if retried {
					ackRetried += len(p.Messages)
				}
				for _, m := range p.Messages {
					tr := msgs[m.TransactionID]
					if tr == nil {
						continue
					}
					ack := acks.Messages[lastOf[m.PartitionID]]
					tr.partitionID = m.PartitionID
					switch v := verdicts[lastOf[m.PartitionID]]; {
					case v.success || v.err == "already committed":
						tr.acked = true
					case retried && v.err == "invalid or expired lease":
						tr.ambiguous = true
						tr.ackedBy = ack.TransactionID
						ackAmbiguous++
					default:
						ackRefused++
					}
				}
				mu.Unlock()
			}
		})
	}
	var stopConsumersOnce sync.Once
	stopConsume := func() { stopConsumersOnce.Do(func() { close(stopConsumers); cwg.Wait() }) }
	defer stopConsume()

	// The spool's size, sampled.
	type sample struct {
		at       time.Time
		buffered float64
	}
	var (
		smu     sync.Mutex
		samples []sample
	)
	stopMonitor := make(chan struct{})
	var mwg sync.WaitGroup
	mwg.Go(func() {
		for {
			var m map[string]any
			if status, _, err := c.getJSON(ctx, br.url+"/api/v1/system/maintenance", &m); err == nil && status == http.StatusOK {
				if n, ok := m["bufferedMessages"].(float64); ok {
					smu.Lock()
					samples = append(samples, sample{time.Now(), n})
					smu.Unlock()
				}
			}
			select {
			case <-stopMonitor:
				return
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	var stopMonitorOnce sync.Once
	stopMon := func() { stopMonitorOnce.Do(func() { close(stopMonitor); mwg.Wait() }) }
	defer stopMon()

	// The scenario: up, down, up, down, up.
	loadStart := time.Now()
	time.Sleep(warmUp)
	var cuts, restores []time.Time
	for i := range 2 {
		px.Cut()
		cuts = append(cuts, time.Now())
		time.Sleep(cutFor)
		px.Restore()
		restores = append(restores, time.Now())
		if i == 0 {
			time.Sleep(upBetween)
		}
	}
	time.Sleep(upAfter)
	stopLoad()
	loadEnd := time.Now()

	// Drain: every accepted message delivered and its acknowledgement
	// confirmed or ambiguous; then quiet for longer than a lease, so that a
	// message delivered again after its acknowledgement would be seen, and
	// an ambiguous one the first attempt had not committed would be
	// delivered again.
	accepted := func(tr *tracked) bool { return tr.status == "queued" || tr.status == "buffered" }
	quiet := time.Duration(leaseTime)*time.Second + 1500*time.Millisecond
	var pending []string
	drained := waitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		pending = pending[:0]
		for txn, tr := range msgs {
			if accepted(tr) && !tr.acked && !tr.ambiguous {
				pending = append(pending, fmt.Sprintf("%s (%s, delivered %d×)", txn, tr.status, tr.deliveries))
			}
		}
		return len(pending) == 0
	})
	drainedAt := time.Now()
	if drained {
		waitUntil(quiet+5*time.Second, 100*time.Millisecond, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return time.Since(lastDelivery) > quiet
		})
	}
	stopConsume()
	stopMon()

	mu.Lock()
	defer mu.Unlock()

	// Ambiguous acknowledgements never followed by a redelivery must have
	// committed: acknowledged again without the lease (no lease check),
	// the acknowledged message answers "already committed", or success
	// with noop when it is the cursor itself; plain success would mean its
	// batch sat uncommitted and undelivered, lost to its consumers.
	var stuck []string
	ambiguousCommitted := 0
	probed := map[string]bool{} // by the acknowledged transactionId: committed?
	for _, tr := range msgs {
		if !tr.ambiguous || tr.acked {
			continue
		}
		committed, ok := probed[tr.ackedBy]
		if !ok {
			probe := &popResponse{Messages: []message{{TransactionID: tr.ackedBy, PartitionID: tr.partitionID}}}
			v, err := c.ackEach(ctx, br.url, probe)
			switch {
			case err != nil:
				t.Errorf("acknowledging %s again without its lease: %v", tr.ackedBy, err)
			case v[0].err == "already committed" || (v[0].success && v[0].noop):
				committed = true
			default:
				stuck = append(stuck, fmt.Sprintf("batch up to %s (answered %+v)", tr.ackedBy, v[0]))
			}
			probed[tr.ackedBy] = committed
		}
		if committed {
			ambiguousCommitted++
		}
	}
	smu.Lock()
	defer smu.Unlock()

	// Phases by the time the push was sent.
	type phase struct {
		name        string
		from, to    time.Time
		afterReturn bool
	}
	phases := []phase{
		{"before the outages", loadStart, cuts[0], false},
		{"during outage 1", cuts[0], restores[0], false},
		{"after return 1", restores[0], cuts[1], true},
		{"during outage 2", cuts[1], restores[1], false},
		{"after return 2", restores[1], loadEnd, true},
	}
	latencies := make([][]time.Duration, len(phases))
	pushTimes := make([][]time.Duration, len(phases))
	var afterReturn, afterReturnPush []time.Duration
	byStatus := map[string]int{}
	var lost, storedTwice, afterAck, notAccepted []string
	type orderKey struct {
		partition string
		producer  int
	}
	type firstDelivery struct{ rank, seq int }
	order := map[orderKey][]firstDelivery{}
	for txn, tr := range msgs {
		byStatus[tr.status]++
		if !accepted(tr) {
			if tr.status != "" { // "": still in flight when the producers stopped
				notAccepted = append(notAccepted, fmt.Sprintf("%s: %s %s", txn, tr.status, tr.detail))
			}
			continue
		}
		if tr.deliveries == 0 {
			lost = append(lost, fmt.Sprintf("%s (%s %s)", txn, tr.status, tr.messageID))
			continue
		}
		if len(tr.otherIDs) > 0 {
			storedTwice = append(storedTwice, fmt.Sprintf("%s: answered %s, delivered as %v", txn, tr.messageID, tr.otherIDs))
		}
		if tr.afterAck > 0 {
			afterAck = append(afterAck, fmt.Sprintf("%s ×%d", txn, tr.afterAck))
		}
		k := orderKey{tr.partition, tr.producer}
		order[k] = append(order[k], firstDelivery{tr.deliveryRank, tr.seq})
		lat, push := tr.delivered.Sub(tr.pushStart), tr.pushEnd.Sub(tr.pushStart)
		for i, ph := range phases {
			if !tr.pushStart.Before(ph.from) && tr.pushStart.Before(ph.to) {
				latencies[i] = append(latencies[i], lat)
				pushTimes[i] = append(pushTimes[i], push)
				if ph.afterReturn {
					afterReturn = append(afterReturn, lat)
					afterReturnPush = append(afterReturnPush, push)
				}
			}
		}
	}

	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("load: %v at %d msg/s nominal (%d producers × batch %d over %d partitions; %d consumers, pops of up to %d; race detector %v)",
		ms(loadEnd.Sub(loadStart)), rate, producers, batch, partitions, consumers, popBatch, raceEnabled)
	t.Logf("pushed %d messages (%.0f msg/s): queued %d, buffered %d, other %d; drained %v after the load",
		len(msgs), float64(len(msgs))/loadEnd.Sub(loadStart).Seconds(), byStatus["queued"], byStatus["buffered"],
		len(notAccepted), ms(drainedAt.Sub(loadEnd)))
	t.Logf("acknowledgements: %d sent again after an outage error, %d refused (lease expired), %d ambiguous (%d of them had committed), %d redeliveries after a refused or ambiguous one",
		ackRetried, ackRefused, ackAmbiguous, ambiguousCommitted, redeliveredOK)
	// The spool after each restore, until the next cut (or the end of the
	// load): when it was first seen empty, when last seen holding
	// anything, and how many pushes made once it had drained were still
	// spooled (answered buffered, though the database was up). A margin
	// before the next cut leaves out what the cut itself spooled.
	var spoolErrors []string
	for i, r := range restores {
		until := loadEnd
		if i+1 < len(cuts) {
			until = cuts[i+1].Add(-100 * time.Millisecond)
		}
		var firstEmpty, lastFull time.Time
		held, n := 0, 0
		for _, s := range samples {
			if s.at.Before(r) || !s.at.Before(until) {
				continue
			}
			n++
			switch {
			case s.buffered > 0:
				held++
				lastFull = s.at
			case firstEmpty.IsZero():
				firstEmpty = s.at
			}
		}
		if firstEmpty.IsZero() {
			t.Logf("after restore %d: the spool held pushes in all %d samples of the %v until the %s", i+1, n,
				ms(until.Sub(r)), map[bool]string{true: "end of the load", false: "next cut"}[i+1 == len(restores)])
			spoolErrors = append(spoolErrors, fmt.Sprintf("restore %d: the spool never emptied in %v under load", i+1, ms(until.Sub(r))))
			continue
		}
		spooledAfter := 0
		for _, tr := range msgs {
			if tr.status == "buffered" && !tr.pushStart.Before(firstEmpty) && tr.pushEnd.Before(until) {
				spooledAfter++
			}
		}
		last := "never after"
		if !lastFull.IsZero() {
			last = fmt.Sprintf("%v after", ms(lastFull.Sub(r)))
		}
		t.Logf("after restore %d: the spool first empty %v after it, last seen holding pushes %s (in %d of %d samples over %v); %d messages pushed after it first emptied were spooled",
			i+1, ms(firstEmpty.Sub(r)), last, held, n, ms(until.Sub(r)), spooledAfter)
		if spooledAfter > 0 {
			spoolErrors = append(spoolErrors, fmt.Sprintf("restore %d: %d messages pushed after the spool had drained were spooled, with the database up", i+1, spooledAfter))
		}
	}
	for i, ph := range phases {
		t.Logf("pushed %-19s %6d msgs: push→delivery median %-8v p99 %-8v push call median %-6v p99 %v", ph.name+":", len(latencies[i]),
			ms(percentile(latencies[i], 50)), ms(percentile(latencies[i], 99)),
			ms(percentile(pushTimes[i], 50)), ms(percentile(pushTimes[i], 99)))
	}
	med, p99 := percentile(afterReturn, 50), percentile(afterReturn, 99)
	t.Logf("pushed after the database came back: %d msgs: push→delivery median %v p99 %v; push call median %v p99 %v",
		len(afterReturn), ms(med), ms(p99), ms(percentile(afterReturnPush, 50)), ms(percentile(afterReturnPush, 99)))

	report := func(what string, list []string) {
		t.Helper()
		if len(list) != 0 {
			t.Errorf("%d messages %s, e.g. %v", len(list), what, list[:min(10, len(list))])
		}
	}
	if !drained {
		t.Errorf("30s after the load stopped, %d accepted messages still not delivered and acknowledged, e.g. %v",
			len(pending), pending[:min(10, len(pending))])
	}
	report("accepted but never delivered", lost)
	report("stored twice (delivered under another id than the one answered)", storedTwice)
	report("delivered again after a confirmed acknowledgement", afterAck)
	if len(stuck) != 0 {
		t.Errorf("%d batches neither committed nor delivered again after an ambiguous acknowledgement, e.g. %v", len(stuck), stuck[:min(10, len(stuck))])
	}
	report("answered neither queued nor buffered", notAccepted)
	report("delivered but never pushed by this test", unknown)
	var orderErrors []string
	for k, ds := range order {
		// A producer's seqs rise in push order; in the order of their
		// first deliveries they must rise too.
		slices.SortFunc(ds, func(a, b firstDelivery) int { return a.rank - b.rank })
		for i := 1; i < len(ds); i++ {
			if ds[i].seq < ds[i-1].seq {
				orderErrors = append(orderErrors, fmt.Sprintf("%s producer %d: seq %d delivered after %d", k.partition, k.producer, ds[i].seq, ds[i-1].seq))
			}
		}
	}
	report("delivered out of their partition's order", orderErrors)
	for _, e := range spoolErrors {
		t.Error(e)
	}
	if byStatus["buffered"] == 0 {
		t.Errorf("no push was answered buffered: the outages did not happen under load")
	}
	if len(afterReturn) == 0 {
		t.Fatalf("no message pushed after the database came back was delivered")
	}
	if med > medianBound {
		t.Errorf("pushed after the database came back: median push→delivery %v, want under %v", ms(med), medianBound)
	}
}
