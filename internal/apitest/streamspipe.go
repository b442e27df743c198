package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Window pipelines driven the way Queen's stream SDKs drive the stream
// routes, with their two loops running at once:
//
//   - the main loop pops a batch for the query's group, reads the
//     partition's state, folds the batch into its windows, closes the
//     windows its clock has passed and commits the new state, the closed
//     windows' emissions and the batch's ack in one cycle;
//   - the idle flush, beside it, reads the windows that are ripe by the
//     clock the main loop advanced (the SDKs' watermark) and commits their
//     deletion and emission in a cycle without an ack.
//
// Both read before they write, so each commits what it decided from what
// it read: a window closed by one loop and emitted again by the other, or
// grown by the main loop after the flush read it, counts events twice or
// loses them. The broker lets a cycle without an ack give way while the
// partition's lane is leased and fails it when a window it deletes is
// already gone; the SDKs' flush tries again at its next tick. The sums
// of the sink must then equal the events' exactly, run after run.
//
// Event time is the payload's "ts", so the outcome depends on no clock;
// what changes from run to run is only how the two loops interleave.

const (
	pipeSep      = "\u001f"
	pipeWindow   = 10 // event-time units of a tumbling window
	pipeGap      = 5  // a session closes after this much silence
	pipeRuns     = 20 // runs per pipeline and engine
	pipeDeadline = 60 * time.Second
	flushTick    = time.Millisecond // the SDKs' idleFlushMs, shrunk to race the main loop often
)

// pipeKind is a pipeline's windowing.
type pipeKind int

const (
	pipeTumbling pipeKind = iota
	pipeSession
)

// pipeSpec is one pipeline's shape.
type pipeSpec struct {
	kind       pipeKind
	partitions int
	events     int // per partition
	batch      int
}

// pipeEvent is a source message's payload.
type pipeEvent struct {
	TS int `json:"ts"`
	V  int `json:"v"`
}

// pipeWin is a window's state: its accumulator and its bounds.
type pipeWin struct {
	Count int `json:"count"`
	Sum   int `json:"sum"`
	Start int `json:"windowStart"`
	End   int `json:"windowEnd"` // tumbling: start+size; session: last event + gap
	Last  int `json:"last"`      // session: its last event
}

// pipeEmit is a sink message's payload: a closed window.
type pipeEmit struct {
	P     string `json:"p"`
	Count int    `json:"count"`
	Sum   int    `json:"sum"`
	Start int    `json:"start"`
}

// pipeline runs one pipeline against the server of c.
type pipeline struct {
	c       *client
	spec    pipeSpec
	queryID string
	src     string
	sink    string
	group   string
	tag     string

	mu     sync.Mutex
	clock  map[string]int    // per partition id: the highest event time seen
	names  map[string]string // partition id → name
	final  bool              // every event is acked: the flush closes all
	errs   []string
	gaveUp int // cycles that did not commit (the flush's, refused)
}

func newPipeline(t *testing.T, c *client, spec pipeSpec) *pipeline {
	p := &pipeline{c: c, spec: spec, src: uniq("pipe.src"), sink: uniq("pipe.sink"), clock: map[string]int{},
		names: map[string]string{}}
	name := uniq("pipe.q")
	p.group = "streams." + name
	p.tag = "tumb:10"
	if spec.kind == pipeSession {
		p.tag = "sess:5"
	}
	p.queryID = c.register(t, name, p.src, p.sink, "h", true).QueryID
	return p
}

// events pushes every partition's events, interleaved across partitions.
// Partition i's values are 1000*i + 1…, its event times spaced so that
// tumbling windows hold 1 to 4 events and sessions 3.
func (p *pipeline) push(t *testing.T) (count, sum map[string]int) {
	count, sum = map[string]int{}, map[string]int{}
	var items []map[string]any
	for e := 0; e < p.spec.events; e++ {
		for i := 0; i < p.spec.partitions; i++ {
			part := fmt.Sprintf("p%d", i)
			ts := e * 3
			if p.spec.kind == pipeSession {
				ts = e/3*20 + e%3 // three events a unit apart, then silence
			}
			v := 1000*i + e + 1
			items = append(items, item(p.src, pipeEvent{TS: ts, V: v}, "partition", part))
			count[part]++
			sum[part] += v
		}
	}
	p.c.push(t, items...)
	return count, sum
}

func (p *pipeline) fail(format string, args ...any) {
	p.mu.Lock()
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// post posts body to path and decodes a 200 into out.
func (p *pipeline) post(ctx context.Context, path string, body, out any) error {
	r, err := p.c.send(ctx, "POST", path, body)
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return fmt.Errorf("%s", r)
	}
	return json.Unmarshal(r.Body, out)
}

// state reads the partition's windows; ripe ≥ 0 reads only those ripe by it.
func (p *pipeline) state(ctx context.Context, pid string, ripe int) (map[string]pipeWin, error) {
	body := map[string]any{"query_id": p.queryID, "partition_id": pid, "key_prefix": p.tag + pipeSep}
	if ripe >= 0 {
		body["ripe_at_or_before"] = ripe
	}
	var out struct {
		Rows []stateRow `json:"rows"`
	}
	if err := p.post(ctx, "/streams/v1/state/get", body, &out); err != nil {
		return nil, err
	}
	wins := make(map[string]pipeWin, len(out.Rows))
	for _, r := range out.Rows {
		var w pipeWin
		if err := json.Unmarshal(r.Value, &w); err != nil {
			return nil, fmt.Errorf("state %s: %w", r.Value, err)
		}
		wins[r.Key] = w
	}
	return wins, nil
}

// commit posts a cycle and reports whether it committed.
func (p *pipeline) commit(ctx context.Context, pid string, ops []map[string]any, emits []pipeEmit,
	ack map[string]any) (bool, error) {
	pushes := make([]map[string]any, len(emits))
	for i, e := range emits {
		pushes[i] = map[string]any{"queue": p.sink, "partition": e.P, "payload": e}
	}
	if ops == nil {
		ops = []map[string]any{}
	}
	var out cycleAnswer
	err := p.post(ctx, "/streams/v1/cycle", map[string]any{"query_id": p.queryID, "partition_id": pid,
		"consumer_group": p.group, "state_ops": ops, "push_items": pushes, "ack": ack, "release_lease": true}, &out)
	if err != nil {
		return false, err
	}
	if !out.Success {
		p.mu.Lock()
		p.gaveUp++
		p.mu.Unlock()
		return false, nil
	}
	return true, nil
}

func upsert(key string, w pipeWin) map[string]any {
	return map[string]any{"type": "upsert", "key": key, "value": w}
}

func del(key string) map[string]any { return map[string]any{"type": "delete", "key": key} }

// fold adds a batch to the loaded windows and closes those its clock has
// passed, as the SDKs' reducers do.
func (p *pipeline) fold(name string, wins map[string]pipeWin, evs []pipeEvent, clock int) ([]map[string]any, []pipeEmit) {
	seeded := make(map[string]bool, len(wins))
	for k := range wins {
		seeded[k] = true
	}
	touched := map[string]bool{}
	var emits []pipeEmit
	var ops []map[string]any
	for _, ev := range evs {
		switch p.spec.kind {
		case pipeTumbling:
			start := ev.TS / pipeWindow * pipeWindow
			k := fmt.Sprintf("%s%s%08d", p.tag, pipeSep, start)
			w, ok := wins[k]
			if !ok {
				w = pipeWin{Start: start, End: start + pipeWindow}
			}
			w.Count++
			w.Sum += ev.V
			wins[k], touched[k] = w, true
		case pipeSession:
			k := p.tag + pipeSep + "open" + pipeSep + name
			w, ok := wins[k]
			if ok && ev.TS > w.Last+pipeGap {
				emits = append(emits, pipeEmit{P: name, Count: w.Count, Sum: w.Sum, Start: w.Start})
				ok = false
			}
			if !ok {
				w = pipeWin{Start: ev.TS}
			}
			w.Count++
			w.Sum += ev.V
			w.Last = max(w.Last, ev.TS)
			w.End = w.Last + pipeGap
			wins[k], touched[k] = w, true
		}
	}
	keys := make([]string, 0, len(wins))
	for k := range wins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w := wins[k]
		switch {
		case w.End <= clock:
			emits = append(emits, pipeEmit{P: name, Count: w.Count, Sum: w.Sum, Start: w.Start})
			if seeded[k] {
				ops = append(ops, del(k))
			}
		case touched[k]:
			ops = append(ops, upsert(k, w))
		}
	}
	return ops, emits
}

// mainLoop pops and commits batches until every event is acked.
func (p *pipeline) mainLoop(ctx context.Context, total int) {
	path := queuePath(p.src) + fmt.Sprintf("?batch=%d&wait=true&timeout=200&consumerGroup=%s", p.spec.batch,
		url.QueryEscape(p.group))
	for acked := 0; acked < total; {
		if ctx.Err() != nil {
			p.fail("main loop: %d of %d events acked when the test ended", acked, total)
			return
		}
		r, err := p.c.send(ctx, "GET", path, nil)
		if err != nil || (r.Status != http.StatusOK && r.Status != http.StatusNoContent) {
			p.fail("pop: %v %v", err, r)
			return
		}
		if r.Status == http.StatusNoContent {
			continue
		}
		var pop popResp
		if err := json.Unmarshal(r.Body, &pop); err != nil || len(pop.Messages) == 0 {
			p.fail("pop: %v %s", err, r.Body)
			return
		}
		n, err := p.cycle(ctx, &pop)
		if err != nil {
			p.fail("cycle: %v", err)
			return
		}
		acked += n
	}
	p.mu.Lock()
	p.final = true
	p.mu.Unlock()
}

// cycle processes one popped batch (one partition) and commits it.
func (p *pipeline) cycle(ctx context.Context, pop *popResp) (int, error) {
	last := pop.Messages[len(pop.Messages)-1]
	pid := last.PartitionID
	evs := make([]pipeEvent, len(pop.Messages))
	clock := -1
	for i, m := range pop.Messages {
		if m.PartitionID != pid {
			return 0, fmt.Errorf("a batch of partitions %s and %s", pid, m.PartitionID)
		}
		if err := json.Unmarshal(m.Data, &evs[i]); err != nil {
			return 0, err
		}
		clock = max(clock, evs[i].TS)
	}
	wins, err := p.state(ctx, pid, -1)
	if err != nil {
		return 0, err
	}
	// A tumbling window's watermark moves once the state is read and before
	// the cycle commits, as in the SDKs, so the flush may close what this
	// cycle is about to close too. A session's moves once the cycle has
	// committed: a session's key is the same from one session to the next,
	// so a flush that read a session before the lease holder closed it and
	// opened the next would delete the next one, which no check of the
	// broker can tell from a quiet session (the SDKs' sessions flush by the
	// wall clock, well after their last event).
	p.mu.Lock()
	p.names[pid] = last.Partition
	clock = max(clock, p.clock[pid])
	if p.spec.kind == pipeTumbling {
		p.clock[pid] = clock
	}
	p.mu.Unlock()
	ops, emits := p.fold(last.Partition, wins, evs, clock)
	ack := map[string]any{"transactionId": last.TransactionID, "leaseId": pop.lease(), "status": "completed",
		"count": len(pop.Messages)}
	ok, err := p.commit(ctx, pid, ops, emits, ack)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("a batch's cycle did not commit")
	}
	p.mu.Lock()
	p.clock[pid] = max(clock, p.clock[pid])
	p.mu.Unlock()
	return len(pop.Messages), nil
}

// flushLoop closes ripe windows until stop is closed and none are left.
func (p *pipeline) flushLoop(ctx context.Context, stop <-chan struct{}) {
	for {
		p.mu.Lock()
		final := p.final
		parts := make(map[string]string, len(p.names))
		clocks := make(map[string]int, len(p.clock))
		for pid, name := range p.names {
			parts[pid], clocks[pid] = name, p.clock[pid]
		}
		p.mu.Unlock()
		left := 0
		for pid, name := range parts {
			ripe := clocks[pid]
			if final {
				ripe = 1 << 30
			}
			wins, err := p.state(ctx, pid, ripe)
			if err != nil {
				p.fail("flush read: %v", err)
				return
			}
			if len(wins) == 0 {
				continue
			}
			left++
			var ops []map[string]any
			var emits []pipeEmit
			keys := make([]string, 0, len(wins))
			for k := range wins {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				w := wins[k]
				ops = append(ops, del(k))
				emits = append(emits, pipeEmit{P: name, Count: w.Count, Sum: w.Sum, Start: w.Start})
			}
			if _, err := p.commit(ctx, pid, ops, emits, nil); err != nil {
				p.fail("flush cycle: %v", err)
				return
			}
		}
		select {
		case <-stop:
			if final && left == 0 {
				return
			}
		case <-ctx.Done():
			p.fail("flush: windows left when the test ended")
			return
		case <-time.After(flushTick):
		}
		if final && left == 0 {
			// Nothing ripe is left; wait for the stop.
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}
}

// drain pops the whole sink and returns its emissions.
func (p *pipeline) drain(t *testing.T) []pipeEmit {
	var out []pipeEmit
	for {
		r := p.c.pop(t, queuePath(p.sink)+"?batch=1000&autoAck=true")
		if r == nil {
			return out
		}
		for _, m := range r.Messages {
			var e pipeEmit
			if err := json.Unmarshal(m.Data, &e); err != nil {
				t.Fatalf("sink message %s: %v", m.Data, err)
			}
			out = append(out, e)
		}
	}
}

// runPipeline runs spec once and requires the sink's exact sums.
func runPipeline(t *testing.T, c *client, spec pipeSpec) (gaveUp int) {
	t.Helper()
	p := newPipeline(t, c, spec)
	wantCount, wantSum := p.push(t)
	ctx, cancel := context.WithTimeout(context.Background(), pipeDeadline)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.flushLoop(ctx, stop) }()
	go func() {
		defer wg.Done()
		defer close(stop)
		p.mainLoop(ctx, spec.partitions*spec.events)
	}()
	wg.Wait()
	if len(p.errs) > 0 {
		t.Fatalf("pipeline: %s", strings.Join(p.errs, "; "))
	}
	gotCount, gotSum := map[string]int{}, map[string]int{}
	emits := p.drain(t)
	for _, e := range emits {
		gotCount[e.P] += e.Count
		gotSum[e.P] += e.Sum
		if spec.kind == pipeSession && e.Count != 3 {
			t.Errorf("a session of %d events (%+v), want 3", e.Count, e)
		}
	}
	if fmt.Sprint(gotCount) != fmt.Sprint(wantCount) || fmt.Sprint(gotSum) != fmt.Sprint(wantSum) {
		t.Fatalf("sink counts %v sums %v, want counts %v sums %v (%d emissions, %d cycles gave way)",
			gotCount, gotSum, wantCount, wantSum, len(emits), p.gaveUp)
	}
	if spec.kind == pipeSession {
		if want := spec.partitions * spec.events / 3; len(emits) != want {
			t.Fatalf("%d sessions emitted, want %d", len(emits), want)
		}
	}
	return p.gaveUp
}

// testStreamPipelines runs each pipeline pipeRuns times on one server.
func (s *suite) testStreamPipelines(t *testing.T) {
	specs := []struct {
		name string
		spec pipeSpec
	}{
		{"tumbling", pipeSpec{kind: pipeTumbling, partitions: 1, events: 18, batch: 3}},
		{"tumbling per partition", pipeSpec{kind: pipeTumbling, partitions: 3, events: 12, batch: 4}},
		{"session with idle flush", pipeSpec{kind: pipeSession, partitions: 2, events: 9, batch: 2}},
	}
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			t.Parallel()
			c := s.server(t)
			gaveUp := 0
			for range pipeRuns {
				gaveUp += runPipeline(t, c, sp.spec)
			}
			t.Logf("%d runs exact; %d cycles without an ack gave way", pipeRuns, gaveUp)
		})
	}
}
