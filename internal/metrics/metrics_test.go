package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/queen-go/queen/internal/store"
)

// drain returns what DrainQueues reports, by queue.
func drain(m *Metrics) map[QueueKey]store.QueueOps {
	out := map[QueueKey]store.QueueOps{}
	m.DrainQueues(func(k QueueKey, ops store.QueueOps, parked int64) { out[k] = ops })
	return out
}

func TestQueueCounters(t *testing.T) {
	m := New(prometheus.NewRegistry())
	tally := m.Tally("t")
	for i := range 6 { // more queues than the tally holds without allocating
		tally.Add(fmt.Sprintf("q%d", i%5), 2)
	}
	tally.Pushed()
	now := time.Now()
	m.Popped("t", []store.Message{{Queue: "q0", CreatedAt: now.Add(-3 * time.Second)},
		{Queue: "q0", CreatedAt: now.Add(-time.Second)}, {Queue: "q1", CreatedAt: now}}, now)
	m.PopEmpty("t", "q2")
	m.PopEmpty("t", "")
	m.Acked("t", []store.AckResult{{Queue: "q0", Success: true}, {Queue: "q0", Success: true, DLQ: true},
		{Queue: "q0"}, {Error: "unresolvable"}})
	tx := m.Tally("t")
	tx.Add("q3", 1)
	tx.Committed()

	got := drain(m)
	q0 := QueueKey{"t", "q0"}
	want := store.QueueOps{PushRequests: 1, PushMessages: 4, PopRequests: 1, PopMessages: 2, LagCount: 2,
		LagSumMs: 4000, LagMaxMs: 3000, AckRequests: 1, AckSuccess: 2, AckFailed: 1, DLQ: 1}
	if got[q0] != want {
		t.Errorf("q0: %+v, want %+v", got[q0], want)
	}
	if o := got[QueueKey{"t", "q2"}]; o.PopRequests != 1 || o.PopEmpty != 1 || o.PushMessages != 2 {
		t.Errorf("q2: %+v", o)
	}
	if o := got[QueueKey{"t", "q3"}]; o.Transactions != 1 || o.PushMessages != 3 || o.PushRequests != 2 {
		t.Errorf("q3: %+v", o)
	}
	if o := got[unattributed]; o.PopEmpty != 1 || o.AckFailed != 1 || o.AckRequests != 1 {
		t.Errorf("unattributed: %+v", o)
	}
	if req, msgs := m.Totals(); req != 0 || msgs != 13 {
		t.Errorf("totals: %d requests, %d messages, want 0 and 13", req, msgs)
	}
	if again := drain(m); len(again) != 0 {
		t.Errorf("a second drain found %v", again)
	}
	// Parked long polls are a gauge: reported while they last.
	m.Parked("t", "q4", 1)
	m.Parked("t", "q4", 1)
	var parked int64
	m.DrainQueues(func(k QueueKey, ops store.QueueOps, p int64) {
		if k.Queue == "q4" {
			parked = p
		}
	})
	if parked != 2 || m.ParkedTotal() != 2 || m.ParkedNow()[QueueKey{"t", "q4"}] != 2 {
		t.Errorf("parked %d, total %d", parked, m.ParkedTotal())
	}
	m.Parked("t", "q4", -2)
	if m.ParkedTotal() != 0 || len(m.ParkedNow()) != 0 {
		t.Errorf("after the polls ended: %d, %v", m.ParkedTotal(), m.ParkedNow())
	}
}

// Counting from many goroutines loses nothing (run with -race).
func TestQueueCountersConcurrent(t *testing.T) {
	m := New(prometheus.NewRegistry())
	var wg sync.WaitGroup
	var drained store.QueueOps
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a drainer racing the counters
		defer close(done)
		for {
			m.DrainQueues(func(k QueueKey, ops store.QueueOps, _ int64) { drained.Add(ops) })
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tally := m.Tally("t")
				tally.Add(fmt.Sprintf("q%d", (g+i)%3), 1)
				tally.Pushed()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	m.DrainQueues(func(k QueueKey, ops store.QueueOps, _ int64) { drained.Add(ops) })
	if drained.PushRequests != 8000 || drained.PushMessages != 8000 {
		t.Errorf("drained %+v, want 8000 requests and messages", drained)
	}
}

func TestReadProcess(t *testing.T) {
	busy := time.Now()
	for time.Since(busy) < 20*time.Millisecond {
	}
	st := ReadProcess()
	if st.RSS == 0 || st.CPUUser+st.CPUSystem == 0 {
		t.Errorf("process: %+v", st)
	}
	if runtime.GOOS == "linux" && st.Virtual < st.RSS {
		t.Errorf("virtual %d below resident %d", st.Virtual, st.RSS)
	}
	var l SchedLatency
	l.Sample()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(time.Millisecond) }()
	}
	wg.Wait()
	if avg, most := l.Sample(); avg < 0 || most < avg {
		t.Errorf("scheduling delay avg %v max %v", avg, most)
	}
}

// parse reads a Prometheus text exposition with the official parser.
func parse(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	out, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, buf.String())
	}
	return out
}

// value returns the value of the series of family with the given labels.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, family string, labels ...string) (float64, bool) {
	t.Helper()
	mf := mfs[family]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		}
	}
	return 0, false
}

func TestQueueCollector(t *testing.T) {
	reads := 0
	fail := false
	src := func(ctx context.Context) (*QueueSnapshot, error) {
		reads++
		if fail {
			return nil, errors.New("database down")
		}
		return &QueueSnapshot{
			Gauges: &store.QueueGauges{Total: 5, DeadLetter: 9, Queues: []store.QueueGauge{
				{Tenant: store.DefaultTenant, Queue: "deep", Pending: 7, Processing: 2, DeadLetter: 3, GroupLag: 8,
					Partitions: 4, OldestUnread: time.Now().Add(-time.Minute)},
				{Tenant: "other", Queue: "deep", Pending: 1},
			}},
			Minute: []store.QueueBucket{{Tenant: store.DefaultTenant, Queue: "deep",
				Ops: store.QueueOps{PushMessages: 60, AckSuccess: 5, LagCount: 2, LagSumMs: 30, LagMaxMs: 20}},
				{Tenant: store.DefaultTenant, Queue: "not-described", Ops: store.QueueOps{PushMessages: 1}}},
			Spool: map[QueueKey]int64{{store.DefaultTenant, "deep"}: 11},
		}, nil
	}
	m := New(prometheus.NewRegistry())
	m.WatchQueues(QueueWatch{Source: src, MaxQueues: 2, Tenancy: true, TTL: time.Hour})
	m.Parked(store.DefaultTenant, "deep", 1)
	mfs := parse(t, m.Gatherer())
	def := []string{"tenant", store.DefaultTenant, "queue", "deep"}
	for family, want := range map[string]float64{
		"queen_queue_depth": 7, "queen_queue_in_flight": 2, "queen_dlq_depth_by_queue": 3,
		"queen_queue_consumer_lag_messages": 8, "queen_queue_partitions": 4, "queen_queue_spool_pending": 11,
		"queen_queue_parked_consumers": 1, "queen_queue_push_messages_per_minute": 60,
	} {
		if v, ok := value(t, mfs, family, def...); !ok || v != want {
			t.Errorf("%s: %v (present %v), want %v", family, v, ok, want)
		}
	}
	if v, _ := value(t, mfs, "queen_queue_oldest_message_age_seconds", def...); v < 59 || v > 120 {
		t.Errorf("oldest age %v", v)
	}
	if v, _ := value(t, mfs, "queen_queue_pop_lag_milliseconds", append(def, "stat", "avg")...); v != 15 {
		t.Errorf("pop lag avg %v", v)
	}
	if v, _ := value(t, mfs, "queen_queue_ack_per_minute", append(def, "result", "success")...); v != 5 {
		t.Errorf("acks %v", v)
	}
	if v, ok := value(t, mfs, "queen_queue_depth", "tenant", "other", "queue", "deep"); !ok || v != 1 {
		t.Errorf("the other tenant's deep: %v %v", v, ok)
	}
	if _, ok := value(t, mfs, "queen_queue_push_messages_per_minute", "queue", "not-described"); ok {
		t.Error("a queue outside the cap has a series")
	}
	if v, _ := value(t, mfs, "queen_queue_metrics_omitted_queues"); v != 3 {
		t.Errorf("omitted %v, want 3", v)
	}
	if v, _ := value(t, mfs, "queen_dlq_depth", "scope", "cluster"); v != 9 {
		t.Errorf("cluster DLQ %v", v)
	}
	// Scrapes within the TTL share the snapshot.
	parse(t, m.Gatherer())
	if reads != 1 {
		t.Errorf("%d reads for two scrapes", reads)
	}
	// A failed read keeps the previous figures and counts the failure.
	m2 := New(prometheus.NewRegistry())
	m2.WatchQueues(QueueWatch{Source: src, MaxQueues: 2, TTL: time.Nanosecond})
	parse(t, m2.Gatherer())
	fail = true
	mfs = parse(t, m2.Gatherer())
	if v, ok := value(t, mfs, "queen_queue_depth", "queue", "deep"); !ok || v != 7 {
		t.Errorf("after a failed read: %v %v", v, ok)
	}
	if v, _ := value(t, mfs, "queen_queue_metrics_errors_total"); v != 1 {
		t.Errorf("errors %v", v)
	}
	if mf := mfs["queen_queue_depth"]; len(mf.Metric[0].Label) != 1 {
		t.Errorf("without tenancy the labels are %v", mf.Metric[0].Label)
	}
}

// BenchmarkCounting is what the broker adds to a request: a push of 100
// messages to one queue, a pop of 100, an ack batch of 100, every
// goroutine on the same queue (the contended case).
func BenchmarkCounting(b *testing.B) {
	m := New(prometheus.NewRegistry())
	msgs := make([]store.Message, 100)
	acks := make([]store.AckResult, 100)
	now := time.Now()
	for i := range msgs {
		msgs[i] = store.Message{Queue: "q", CreatedAt: now}
		acks[i] = store.AckResult{Queue: "q", Success: true}
	}
	b.Run("push", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tally := m.Tally("t")
				for range 100 {
					tally.Add("q", 1)
				}
				tally.Pushed()
			}
		})
	})
	b.Run("pop", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Popped("t", msgs, now)
			}
		})
	})
	b.Run("ack", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Acked("t", acks)
			}
		})
	})
}
