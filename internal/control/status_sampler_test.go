package control_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
)

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// queueRows reads the per-queue rows of [from, to), per minute and queue.
func queueRows(t *testing.T, st store.Store, from, to time.Time) []store.QueueBucket {
	t.Helper()
	rows, err := st.StatsQueueSeries(context.Background(), &store.StatsSeriesParams{From: from, To: to,
		Group: store.SeriesByReplica})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func workerRows(t *testing.T, st store.Store, from, to time.Time) []store.WorkerMinute {
	t.Helper()
	rows, err := st.StatsWorkerSeries(context.Background(), &store.StatsSeriesParams{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestSamplerWritesMinutes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	m := metrics.New(prometheus.NewRegistry())
	t0 := time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)
	clk := &clock{t: t0}
	s := control.NewSampler(st, m, control.SamplerConfig{Now: clk.now, Hostname: "h", WorkerID: "w1", PID: 7,
		Retention: 24 * time.Hour, Spool: func() int64 { return 3 }})
	s.SetPort(6632)

	push := func(queue string, n int) {
		tally := m.Tally(store.DefaultTenant)
		tally.Add(queue, n)
		tally.Pushed()
	}
	push("orders", 5)
	clk.set(t0.Add(time.Second))
	s.Sample()
	push("orders", 2)
	m.Popped(store.DefaultTenant, []store.Message{{Queue: "orders", CreatedAt: t0}}, t0.Add(4*time.Second))
	m.Parked(store.DefaultTenant, "orders", 1)
	m.Request("push", "503", time.Millisecond)
	clk.set(t0.Add(20 * time.Second))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	minute0 := t0.Truncate(time.Minute)
	rows := queueRows(t, st, minute0, minute0.Add(time.Hour))
	if len(rows) != 1 {
		t.Fatalf("rows after the first flush: %+v", rows)
	}
	r := rows[0]
	want := store.QueueOps{PushRequests: 2, PushMessages: 7, PopRequests: 1, PopMessages: 1, LagCount: 1,
		LagSumMs: 4000, LagMaxMs: 4000}
	if r.Queue != "orders" || r.Hostname != "h" || r.WorkerID != "w1" || r.Ops != want || r.Parked != 1 ||
		!r.Bucket.Equal(minute0) {
		t.Fatalf("orders at minute 0: %+v, want ops %+v parked 1", r, want)
	}
	ws := workerRows(t, st, minute0, minute0.Add(time.Hour))
	if len(ws) != 1 {
		t.Fatalf("broker rows: %+v", ws)
	}
	w := ws[0]
	if w.PID != 7 || w.Port != 6632 || w.Ops != want || w.DBErrors != 1 {
		t.Errorf("broker row: %+v", w)
	}
	for _, g := range []string{control.GaugeRSS, control.GaugeCPUUser, control.GaugeGoroutines, control.GaugePoolSize,
		control.GaugeParked, control.GaugeSpool, control.GaugeSchedAvg} {
		if w.Gauges[g].N != 2 {
			t.Errorf("gauge %s: %+v, want 2 samples", g, w.Gauges[g])
		}
	}
	if w.Gauges[control.GaugeRSS].Min <= 0 || w.Gauges[control.GaugeSpool].Last != 3 ||
		w.Gauges[control.GaugeParked].Max != 1 {
		t.Errorf("gauges: %+v", w.Gauges)
	}

	// More in the same minute: the minute's rows are written again, whole.
	push("orders", 1)
	clk.set(t0.Add(40 * time.Second))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows = queueRows(t, st, minute0, minute0.Add(time.Hour))
	if len(rows) != 1 || rows[0].Ops.PushMessages != 8 || rows[0].Ops.PushRequests != 3 {
		t.Fatalf("after a second flush of minute 0: %+v", rows)
	}
	if ws := workerRows(t, st, minute0, minute0.Add(time.Hour)); len(ws) != 1 || ws[0].Gauges[control.GaugeRSS].N != 3 {
		t.Fatalf("broker rows after a second flush: %+v", ws)
	}

	// The next minute gets its own rows; minute 0's stay as they were.
	clk.set(t0.Add(time.Minute))
	push("invoices", 4)
	m.Parked(store.DefaultTenant, "orders", -1)
	clk.set(t0.Add(70 * time.Second))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows = queueRows(t, st, minute0, minute0.Add(time.Hour))
	if len(rows) != 2 || rows[0].Queue != "orders" || rows[0].Ops.PushMessages != 8 || rows[1].Queue != "invoices" ||
		!rows[1].Bucket.Equal(minute0.Add(time.Minute)) || rows[1].Ops.PushMessages != 4 {
		t.Fatalf("two minutes: %+v", rows)
	}
}

func TestSamplerRecordsQueuesAndSweeps(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	m := metrics.New(prometheus.NewRegistry())
	clk := &clock{t: storetest.T0.Add(30 * time.Second)}
	storetest.PushAt(t, st, storetest.T0, "deep", "p", 3)
	storetest.PushAt(t, st, storetest.T0, "shallow", "p", 1)
	storetest.Configure(t, st, "empty", store.DefaultQueueOptions())
	// Rows of a minute past the retention, as a broker long gone left them.
	old := storetest.T0.Add(-48 * time.Hour).Truncate(time.Minute)
	if err := st.StatsRecord(ctx, &store.StatsRecordParams{
		Queues:  []store.QueueMinute{{Queue: "deep", Minute: old, Hostname: "gone", WorkerID: "w", Ops: store.QueueOps{PushRequests: 1}}},
		Workers: []store.WorkerMinute{{Hostname: "gone", WorkerID: "w", Minute: old}},
	}); err != nil {
		t.Fatal(err)
	}
	s := control.NewSampler(st, m, control.SamplerConfig{Now: clk.now, Hostname: "h", WorkerID: "w",
		Retention: 24 * time.Hour, MaxQueues: 1})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	minute := storetest.T0.Truncate(time.Minute)
	states, err := st.StatsQueueStateSeries(ctx, &store.StatsSeriesParams{From: minute, To: minute.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// MaxQueues 1: the deepest only.
	if len(states) != 1 || states[0].Queue != "deep" || states[0].Pending != 3 || states[0].Partitions != 1 {
		t.Errorf("queue figures: %+v", states)
	}
	if rows := queueRows(t, st, old, old.Add(time.Hour)); len(rows) != 0 {
		t.Errorf("rows past the retention: %+v", rows)
	}
	if ws := workerRows(t, st, old, old.Add(time.Hour)); len(ws) != 0 {
		t.Errorf("broker rows past the retention: %+v", ws)
	}
}

// As a service with short intervals, the sampler writes on its own and
// writes what it holds when it stops.
func TestSamplerService(t *testing.T) {
	st := openStore(t)
	m := metrics.New(prometheus.NewRegistry())
	s := control.NewSampler(st, m, control.SamplerConfig{Hostname: "h", WorkerID: "w",
		SampleEvery: 5 * time.Millisecond, AggregateEvery: 20 * time.Millisecond})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tally := m.Tally(store.DefaultTenant)
	tally.Add("q", 1)
	tally.Pushed()
	from := time.Now().Add(-time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for len(queueRows(t, st, from, time.Now().Add(time.Hour))) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sampler wrote no row within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tally = m.Tally(store.DefaultTenant)
	tally.Add("last", 1)
	tally.Pushed()
	s.Stop()
	s.Stop() // idempotent
	var found bool
	for _, r := range queueRows(t, st, from, time.Now().Add(time.Hour)) {
		found = found || r.Queue == "last"
	}
	if !found {
		t.Error("what was counted before Stop was not written")
	}
}

// The per-queue Prometheus snapshot holds the cluster's counters of the
// last complete minute, and the spool's pushes per queue.
func TestQueueMetricsReadsTheLastCompleteMinute(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	storetest.PushAt(t, st, storetest.T0, "q", "p", 2)
	minute := storetest.T0.Truncate(time.Minute)
	if err := st.StatsRecord(ctx, &store.StatsRecordParams{Queues: []store.QueueMinute{
		{Queue: "q", Minute: minute, Hostname: "a", WorkerID: "1", Ops: store.QueueOps{PushMessages: 3}},
		{Queue: "q", Minute: minute, Hostname: "b", WorkerID: "1", Ops: store.QueueOps{PushMessages: 4}},
		{Queue: "q", Minute: minute.Add(time.Minute), Hostname: "a", WorkerID: "1", Ops: store.QueueOps{PushMessages: 50}},
	}}); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: minute.Add(time.Minute + 10*time.Second)}
	ctl := control.New(st, control.Config{Now: clk.now})
	spool := func() map[metrics.QueueKey]int64 { return map[metrics.QueueKey]int64{{Queue: "q"}: 1} }
	snap, err := ctl.QueueMetrics(ctx, 10, spool)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Minute) != 1 || snap.Minute[0].Ops.PushMessages != 7 || !snap.MinuteAt.Equal(minute) {
		t.Errorf("last complete minute: %+v at %v", snap.Minute, snap.MinuteAt)
	}
	if len(snap.Gauges.Queues) != 1 || snap.Gauges.Queues[0].Pending != 2 || snap.Spool[metrics.QueueKey{Queue: "q"}] != 1 {
		t.Errorf("snapshot %+v", snap)
	}
}

// TestWholeWindowReadsFreshMinutes: the per-queue totals of worker-metrics
// and of the queue-ops series read the minutes just written, also when the
// window begins on a quarter hour (where a bucket of whole rollup slots
// used to read the slots, which lag until the next rollup: the totals then
// showed no queue for the last minutes' work).
func TestWholeWindowReadsFreshMinutes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	minute := time.Date(2026, 7, 30, 9, 10, 0, 0, time.UTC)
	ops := store.QueueOps{PushRequests: 1, PushMessages: 7, PopRequests: 1, PopMessages: 7}
	if err := st.StatsRecord(ctx, &store.StatsRecordParams{
		Queues: []store.QueueMinute{{Tenant: store.DefaultTenant, Queue: "orders", Minute: minute, Hostname: "h",
			WorkerID: "w1", Ops: ops}},
		Workers: []store.WorkerMinute{{Hostname: "h", WorkerID: "w1", Minute: minute, Ops: ops}},
	}); err != nil {
		t.Fatal(err)
	}
	c := control.New(st, control.Config{Now: func() time.Time { return minute.Add(30 * time.Second) }})
	for _, from := range []time.Time{minute.Add(-10 * time.Minute), minute.Add(-5 * time.Minute)} {
		r := control.TimeRange{From: from, To: from.Add(time.Hour)}
		wm, err := c.WorkerMetrics(ctx, control.BrokerParams{Range: r})
		if err != nil {
			t.Fatal(err)
		}
		if len(wm.Queues) != 1 || wm.Queues[0].Queue != "orders" || wm.Queues[0].PopCount != 7 {
			t.Errorf("worker-metrics from %s: queues %+v, want orders with 7 pops", from.Format("15:04"), wm.Queues)
		}
		qo, err := c.QueueOps(ctx, store.DefaultTenant, control.SeriesParams{Range: r})
		if err != nil {
			t.Fatal(err)
		}
		if len(qo.Queues) != 1 || qo.Queues[0] != "orders" {
			t.Errorf("queue ops from %s: queues %v, want orders", from.Format("15:04"), qo.Queues)
		}
	}
}
