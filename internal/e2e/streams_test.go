package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/testlog"
)

// A tumbling-window pipeline written against Queen's stream routes, as its
// SDKs run one: count events per key per second over 100,000 events, with
// the broker killed (kill -9) in the middle and restarted on the same data.
// Each cycle reads the partition's open windows, adds its batch, emits the
// windows its batch closed to a sink queue (random transactionIds, so a
// double emission would show) and acks the batch, in one /streams/v1/cycle.
// A cycle whose answer the crash swallowed is sent again as it was: it
// commits if the first did not, or is a replay that writes nothing. The
// counts in the sink must equal the counts of the events exactly.
//
// The embedded engine always runs; PostgreSQL when QUEEN_TEST_DATABASE_URL
// is set (as the other tests of this package).

const (
	pipeEvents     = 100_000
	pipeKeys       = 50
	pipePartitions = 4
	pipeSpanMs     = 20_000 // event time covered: 20 one-second windows
	pipeBatch      = 1000   // events per pop, so per cycle
	pushBatch      = 5000
	pipeWorkers    = 4
	pipeGroup      = "streams.counts"
	pipeEpochMs    = 1_780_000_000_000
	wmKey          = "__wm__"
)

// The broker process of these tests is built without the race detector,
// whatever the tests run with: they check what survives a crash, not data
// races (the Streams topic of package apitest runs the same code in process
// under -race), and the race detector slows the embedded engine's pure-Go
// SQLite about 15 times, which would make 100,000 pushes alone take most of
// a minute. The two engines' runs do not run in parallel: each keeps the
// two cores of a CI machine busy.

func TestStreamsPipelineSurvivesKill9Embedded(t *testing.T) {
	dir := t.TempDir()
	runPipeline(t, func() *process {
		return startPlainProcess(t, "QUEEN_DATA_DIR="+dir, "QUEEN_DATABASE_URL=", "PG_HOST=")
	})
}

func TestStreamsPipelineSurvivesKill9Postgres(t *testing.T) {
	u := testURL(t)
	schema := newSchema(t)
	runPipeline(t, func() *process {
		return startPlainProcess(t, "QUEEN_DATABASE_URL="+u, "QUEEN_PG_SCHEMA="+schema, "DB_POOL_SIZE=8")
	})
}

var (
	plainOnce sync.Once
	plainPath string
	plainErr  error
)

// startPlainProcess is startProcess with the broker built without the race
// detector (once per run).
func startPlainProcess(t *testing.T, env ...string) *process {
	t.Helper()
	plainOnce.Do(func() {
		plainPath = filepath.Join(binDir, "queen-plain")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", plainPath, "github.com/queen-go/queen/cmd/queen").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("go build cmd/queen: %w\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	port := freePort(t)
	cmd := exec.Command(plainPath)
	cmd.Env = append(os.Environ(), append([]string{
		"QUEEN_BIND_ADDR=127.0.0.1", fmt.Sprintf("PORT=%d", port), "QUEEN_DATA_DIR=" + t.TempDir(),
	}, env...)...)
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), logs: logs, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("logs of the broker process:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-p.exited:
			t.Fatalf("broker process exited at start-up: %v", p.err)
		default:
		}
		resp, err := http.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker process does not answer on %s after 30s: %v", p.url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pipeline is the client side: a base URL that changes when the broker
// restarts, and an HTTP client.
type pipeline struct {
	base    atomic.Pointer[string]
	hc      *http.Client
	query   string
	src     string
	sink    string
	crashes atomic.Int64 // requests that failed in transport (the crash window)
}

func (pl *pipeline) url(path string) string { return *pl.base.Load() + path }

// call sends one request and decodes a 2xx answer into out; it returns the
// status, or an error for a transport failure.
func (pl *pipeline) call(ctx context.Context, method, path string, body, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, pl.url(path), rd)
	if err != nil {
		return 0, nil, err
	}
	resp, err := pl.hc.Do(req)
	if err != nil {
		pl.crashes.Add(1)
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		pl.crashes.Add(1)
		return 0, nil, err
	}
	if out != nil && resp.StatusCode/100 == 2 && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, data, fmt.Errorf("%s %s: %w; body %s", method, path, err, data)
		}
	}
	return resp.StatusCode, data, nil
}

// retry calls until the broker answers with a status below 500 (an outage
// or a crash answers 5xx or nothing at all) or ctx ends.
func (pl *pipeline) retry(ctx context.Context, method, path string, body, out any) (int, []byte, error) {
	for {
		status, data, err := pl.call(ctx, method, path, body, out)
		if err == nil && status < 500 {
			return status, data, nil
		}
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// event is one source message's payload.
type event struct {
	K string `json:"k"`
	T int64  `json:"t"`
}

// windowCount is one open window in state, and one emitted window.
type windowCount struct {
	K           string `json:"k,omitempty"`
	Count       int    `json:"count"`
	WindowStart int64  `json:"windowStart"`
	WindowEnd   int64  `json:"windowEnd"`
}

func windowKey(k string, start int64) string {
	return "tumb:1000\u001f" + k + "\u001f" + strconv.FormatInt(start, 10)
}

func runPipeline(t *testing.T, start func() *process) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	p := start()
	pl := &pipeline{hc: &http.Client{Timeout: 30 * time.Second}, src: "pipe-events", sink: "pipe-counts"}
	t.Cleanup(pl.hc.CloseIdleConnections)
	pl.base.Store(&p.url)

	// Short leases, so that a batch whose pop answer the crash swallowed is
	// redelivered soon; many retries, so that no expiry dead-letters it.
	mustOK(t, pl, ctx, "POST", "/api/v1/configure", map[string]any{"queue": pl.src,
		"options": map[string]any{"leaseTime": 3, "retryLimit": 1000}}, nil)
	var reg struct {
		QueryID string `json:"query_id"`
	}
	mustOK(t, pl, ctx, "POST", "/streams/v1/queries", map[string]any{"name": "counts-per-second", "source_queue": pl.src,
		"sink_queue": pl.sink, "config_hash": "tumbling-1s-count"}, &reg)
	pl.query = reg.QueryID

	// The workers run until the whole source is consumed.
	work, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var cycles, replays atomic.Int64
	errs := make(chan error, pipeWorkers+1)
	for range pipeWorkers {
		wg.Go(func() {
			if err := pl.work(work, &cycles, &replays); err != nil && work.Err() == nil {
				errs <- err
				stop()
			}
		})
	}

	// The events, in event-time order, pushed while the workers consume
	// them; a key always lands in the same partition, so each key's windows
	// live in one partition's state. Each event has its transactionId, so
	// that a push sent again after the crash stores nothing twice.
	want := make(map[string]int)
	var batches [][]map[string]any
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pipeEvents {
		k := fmt.Sprintf("key-%02d", rng.IntN(pipeKeys))
		ts := int64(pipeEpochMs) + int64(i)*pipeSpanMs/pipeEvents
		want[windowKey(k, ts-ts%1000)]++
		if i%pushBatch == 0 {
			batches = append(batches, make([]map[string]any, 0, pushBatch))
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], map[string]any{"queue": pl.src,
			"partition": fmt.Sprintf("p%d", keyPartition(k)), "transactionId": fmt.Sprintf("ev-%d", i),
			"payload": event{K: k, T: ts}})
	}
	wg.Go(func() {
		for _, items := range batches {
			status, body, err := pl.retry(work, "POST", "/api/v1/push", map[string]any{"items": items}, nil)
			if err == nil && status != http.StatusCreated {
				err = fmt.Errorf("push: %d %s", status, body)
			}
			if err != nil {
				if work.Err() == nil {
					errs <- err
					stop()
				}
				return
			}
		}
		t.Logf("pushed %d events in %v", pipeEvents, time.Since(began).Round(time.Millisecond))
	})

	// Kill -9 once about half of the events are consumed, restart on the
	// same data, and wait until everything is consumed.
	killed := false
	for {
		done := pl.consumed(ctx)
		if !killed && done >= pipeEvents/2 {
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.exited
			t.Logf("kill -9 after %d events consumed, %d cycles", done, cycles.Load())
			p = start()
			pl.base.Store(&p.url)
			killed = true
		}
		if done == pipeEvents || work.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Flush the windows still open (the last second of each partition) with
	// a cycle that acks nothing, as the SDKs' idle flush does.
	for part := range pipePartitions {
		pl.flush(t, ctx, part)
	}

	got := make(map[string]int)
	emitted := 0
	for {
		var pop struct {
			Messages []struct {
				Data windowCount `json:"data"`
			} `json:"messages"`
		}
		status, body, err := pl.retry(ctx, "GET", "/api/v1/pop/queue/"+pl.sink+"?batch=10000&autoAck=true&consumerGroup=verify", nil, &pop)
		if err != nil || (status != 200 && status != 204) {
			t.Fatalf("pop of the sink: %d %s %v", status, body, err)
		}
		if status == 204 {
			break
		}
		for _, m := range pop.Messages {
			k := windowKey(m.Data.K, m.Data.WindowStart)
			if _, dup := got[k]; dup {
				t.Errorf("window %q emitted twice", k)
			}
			got[k] = m.Data.Count
			emitted++
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("window %q: counted %d, want %d", k, got[k], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d windows emitted, want %d", len(got), len(want))
	}
	t.Logf("%d windows, %d events counted exactly in %d cycles (%d replays, %d requests lost to the crash) in %v",
		emitted, pipeEvents, cycles.Load(), replays.Load(), pl.crashes.Load(), time.Since(began).Round(time.Millisecond))
	if !killed {
		t.Error("the broker was never killed")
	}
}

func keyPartition(k string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(k, "key-"))
	return n % pipePartitions
}

func mustOK(t *testing.T, pl *pipeline, ctx context.Context, method, path string, body, out any) {
	t.Helper()
	status, data, err := pl.retry(ctx, method, path, body, out)
	if err != nil || status/100 != 2 {
		t.Fatalf("%s %s: %d %s %v", method, path, status, data, err)
	}
}

// consumed reads how many source events the pipeline's group has
// committed.
func (pl *pipeline) consumed(ctx context.Context) int64 {
	var q struct {
		Totals struct {
			Completed int64 `json:"completed"`
		} `json:"totals"`
	}
	status, _, err := pl.call(ctx, "GET", "/api/v1/resources/queues/"+pl.src, nil, &q)
	if err != nil || status != 200 {
		return -1
	}
	return q.Totals.Completed
}

// cycleAnswer is what the pipeline reads of a cycle's answer.
type cycleAnswer struct {
	Success   bool    `json:"success"`
	Error     *string `json:"error"`
	AckResult *struct {
		Count int `json:"count"`
	} `json:"ack_result"`
	StateOpsApplied int `json:"state_ops_applied"`
}

// work pops a batch, reads the partition's state, and commits the cycle,
// until ctx ends.
func (pl *pipeline) work(ctx context.Context, cycles, replays *atomic.Int64) error {
	for ctx.Err() == nil {
		var pop struct {
			LeaseID  string `json:"leaseId"`
			Messages []struct {
				TransactionID string `json:"transactionId"`
				PartitionID   string `json:"partitionId"`
				Data          event  `json:"data"`
			} `json:"messages"`
		}
		status, body, err := pl.call(ctx, "GET", fmt.Sprintf("/api/v1/pop/queue/%s?consumerGroup=%s&batch=%d&wait=true&timeout=200",
			pl.src, pipeGroup, pipeBatch), nil, &pop)
		switch {
		case err != nil || status >= 500:
			time.Sleep(50 * time.Millisecond)
			continue
		case status == 204:
			continue
		case status != 200:
			return fmt.Errorf("pop: %d %s", status, body)
		}
		pid := pop.Messages[0].PartitionID
		var st struct {
			Rows []struct {
				Key   string          `json:"key"`
				Value json.RawMessage `json:"value"`
			} `json:"rows"`
		}
		status, body, err = pl.retry(ctx, "POST", "/streams/v1/state/get", map[string]any{"query_id": pl.query, "partition_id": pid}, &st)
		if err != nil {
			return nil
		}
		if status != 200 {
			return fmt.Errorf("state/get: %d %s", status, body)
		}
		open := make(map[string]*windowCount)
		var wm int64
		for _, r := range st.Rows {
			if r.Key == wmKey {
				var w struct {
					EventTimeMs int64 `json:"eventTimeMs"`
				}
				_ = json.Unmarshal(r.Value, &w)
				wm = w.EventTimeMs
				continue
			}
			var w windowCount
			if err := json.Unmarshal(r.Value, &w); err != nil {
				return fmt.Errorf("state row %s: %w", r.Key, err)
			}
			open[r.Key] = &w
		}
		touched := make(map[string]bool)
		for _, m := range pop.Messages {
			if m.PartitionID != pid {
				return fmt.Errorf("a one-partition pop delivered partitions %s and %s", pid, m.PartitionID)
			}
			startMs := m.Data.T - m.Data.T%1000
			k := windowKey(m.Data.K, startMs)
			w := open[k]
			if w == nil {
				w = &windowCount{K: m.Data.K, WindowStart: startMs, WindowEnd: startMs + 1000}
				open[k] = w
			}
			w.Count++
			touched[k] = true
			wm = max(wm, m.Data.T)
		}
		var ops, pushes []any
		for k, w := range open {
			switch {
			case w.WindowEnd <= wm: // closed by the watermark: emit it, forget it
				pushes = append(pushes, map[string]any{"queue": pl.sink, "partition": "out", "payload": w,
					"transactionId": uuid.NewString()})
				ops = append(ops, map[string]any{"type": "delete", "key": k})
			case touched[k]:
				ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": w})
			}
		}
		ops = append(ops, map[string]any{"type": "upsert", "key": wmKey, "value": map[string]any{"eventTimeMs": wm}})
		last := pop.Messages[len(pop.Messages)-1]
		cycle := map[string]any{"query_id": pl.query, "partition_id": pid, "consumer_group": pipeGroup,
			"state_ops": ops, "push_items": pushes,
			"ack": map[string]any{"transactionId": last.TransactionID, "leaseId": pop.LeaseID, "count": len(pop.Messages)}}
		var res cycleAnswer
		// Sent again as it is until the broker answers: the same
		// transactionIds, the same ack.
		status, body, err = pl.retry(ctx, "POST", "/streams/v1/cycle", cycle, &res)
		switch {
		case err != nil:
			return nil
		case status != 200:
			return fmt.Errorf("cycle: %d %s", status, body)
		case res.Success && res.AckResult != nil && res.AckResult.Count == 0:
			replays.Add(1)
		case res.Success:
			cycles.Add(1)
		case res.Error != nil && *res.Error == "Invalid or expired lease":
			// The lease ran out while the broker was down: nothing was
			// written, and the batch is redelivered.
		default:
			return errors.New("cycle failed: " + string(body))
		}
	}
	return nil
}

// flush emits and forgets every window left open in partition part, with
// a cycle that acks nothing; the windows are read with ripe_at_or_before.
func (pl *pipeline) flush(t *testing.T, ctx context.Context, part int) {
	var parts struct {
		Partitions []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"partitions"`
	}
	mustOK(t, pl, ctx, "GET", "/api/v1/resources/queues/"+pl.src, nil, &parts)
	var pid string
	for _, p := range parts.Partitions {
		if p.Name == fmt.Sprintf("p%d", part) {
			pid = p.ID
		}
	}
	var st struct {
		Rows []struct {
			Key   string      `json:"key"`
			Value windowCount `json:"value"`
		} `json:"rows"`
	}
	mustOK(t, pl, ctx, "POST", "/streams/v1/state/get", map[string]any{"query_id": pl.query, "partition_id": pid,
		"key_prefix": "tumb:1000\u001f", "ripe_at_or_before": pipeEpochMs + pipeSpanMs + 1000}, &st)
	var ops, pushes []any
	for _, r := range st.Rows {
		pushes = append(pushes, map[string]any{"queue": pl.sink, "partition": "out", "payload": r.Value,
			"transactionId": uuid.NewString()})
		ops = append(ops, map[string]any{"type": "delete", "key": r.Key})
	}
	var res cycleAnswer
	mustOK(t, pl, ctx, "POST", "/streams/v1/cycle", map[string]any{"query_id": pl.query, "partition_id": pid,
		"state_ops": ops, "push_items": pushes}, &res)
	if !res.Success || res.StateOpsApplied != len(ops) {
		t.Fatalf("flush of partition p%d: %+v", part, res)
	}
	var left struct {
		Rows []json.RawMessage `json:"rows"`
	}
	mustOK(t, pl, ctx, "POST", "/streams/v1/state/get", map[string]any{"query_id": pl.query, "partition_id": pid}, &left)
	if len(left.Rows) != 1 {
		t.Fatalf("partition p%d holds %d state rows after the flush, want the watermark alone", part, len(left.Rows))
	}
}
