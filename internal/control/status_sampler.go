package control

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// The metrics sampler turns the broker's in-memory counters and its
// process's readings into the per-minute rows behind /api/v1/status and
// /api/v1/analytics/*. Every SampleEvery it drains the per-queue counters
// into the current minute and samples the process (CPU, memory, pool,
// parked long polls, scheduling delay); every AggregateEvery it writes the
// minutes it holds (replacing what it wrote of the current one before) and,
// as the one broker of the cluster holding the metrics job's lock, records
// the deepest queues' figures and sweeps rows older than Retention. Nothing
// on the request path waits for it.

// Defaults of SamplerConfig, Queen's.
const (
	DefaultSampleEvery    = time.Second         // METRICS_SAMPLE_INTERVAL_MS
	DefaultAggregateEvery = time.Minute         // METRICS_AGGREGATE_INTERVAL_S
	DefaultRetention      = 90 * 24 * time.Hour // METRICS_RETENTION_DAYS
	DefaultMaxQueues      = 500                 // QUEEN_METRICS_MAX_QUEUES
)

// Bounds of the sampler's work.
const (
	// maxHeldMinutes bounds the minutes kept in memory while the store
	// cannot take them; older ones are dropped (and logged).
	maxHeldMinutes = 60
	// sweepBatch and sweepSteps bound one sweep: at most this many rows per
	// table per step, this many steps per flush.
	sweepBatch = 1000
	sweepSteps = 20
	// rollupBack is how far back each flush sums the minute rows into
	// slots again: the minutes a broker may hold, and a slot.
	rollupBack = maxHeldMinutes*time.Minute + store.RollupSlot
)

// SamplerConfig configures a Sampler. Zero values take the defaults.
type SamplerConfig struct {
	// AggregateEvery is how often the sampler writes its rows.
	AggregateEvery time.Duration
	// Hostname and WorkerID name this broker's rows (several brokers share
	// a PostgreSQL database); PID and Port are recorded beside them.
	Hostname string
	WorkerID string
	PID      int
	// Logger receives the sampler's logs; nil discards them.
	Logger *slog.Logger
	// MaxQueues bounds the queues whose figures are recorded each minute
	// (the deepest ones).
	MaxQueues int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Retention is how long rows are kept.
	Retention time.Duration
	// SampleEvery is how often counters are drained and the process
	// sampled.
	SampleEvery time.Duration
	// Spool returns the pushes waiting in the disk spool; nil means none.
	Spool func() int64
}

// Sampler is the metrics sampler, a service.Service.
type Sampler struct {
	cfg     SamplerConfig
	log     *slog.Logger
	metrics *metrics.Metrics
	store   SamplerStore
	port    atomic.Int64

	mu      sync.Mutex // guards minutes, prevCPU, prevAt; one Sample or Flush at a time
	minutes map[int64]*minuteAgg
	prevCPU metrics.ProcessStats
	prevAt  time.Time
	sched   metrics.SchedLatency

	sample, flush *service.Loop
	exclusive     func(ctx context.Context)
	stopOnce      sync.Once
}

// minuteAgg is what the sampler holds of one minute.
type minuteAgg struct {
	queues map[metrics.QueueKey]*store.QueueMinute
	worker store.WorkerMinute
}

// NewSampler returns a sampler of m over st. Nothing runs until Start.
func NewSampler(st SamplerStore, m *metrics.Metrics, cfg SamplerConfig) *Sampler {
	if cfg.AggregateEvery <= 0 {
		cfg.AggregateEvery = DefaultAggregateEvery
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = DefaultSampleEvery
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.MaxQueues <= 0 {
		cfg.MaxQueues = DefaultMaxQueues
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Spool == nil {
		cfg.Spool = func() int64 { return 0 }
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sampler{cfg: cfg, log: log.With("component", "metrics-sampler"), metrics: m, store: st,
		minutes: map[int64]*minuteAgg{}}
	s.exclusive = service.Exclusive(st, "metrics", s.log, s.clusterWork)
	s.sample = service.NewLoop("metrics-sample", cfg.SampleEvery, func(context.Context) { s.Sample() })
	s.flush = service.NewLoop("metrics-flush", cfg.AggregateEvery, func(ctx context.Context) {
		if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("metrics not written; kept for the next flush", "err", err)
		}
	})
	return s
}

// Name implements service.Service.
func (s *Sampler) Name() string { return "metrics-sampler" }

// Start implements service.Service.
func (s *Sampler) Start(ctx context.Context) error {
	s.mu.Lock()
	s.prevCPU, s.prevAt = metrics.ReadProcess(), s.cfg.Now()
	s.sched.Sample()
	s.mu.Unlock()
	if err := s.sample.Start(ctx); err != nil {
		return err
	}
	if err := s.flush.Start(ctx); err != nil {
		s.sample.Stop()
		return err
	}
	return nil
}

// Stop implements service.Service: the loops end, then what the sampler
// holds is written, within a few seconds.
func (s *Sampler) Stop() {
	s.stopOnce.Do(func() {
		s.flush.Stop()
		s.sample.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		s.Sample()
		if err := s.writeMinutes(ctx); err != nil && !errors.Is(err, store.ErrClosed) {
			s.log.Warn("last metrics not written", "err", err)
		}
	})
}

// SetPort records the port this broker serves on, for its rows.
func (s *Sampler) SetPort(port int) { s.port.Store(int64(port)) }

// Sample drains the per-queue counters into the current minute and samples
// the process. The sample loop calls it every SampleEvery; tests call it
// with their own clock.
func (s *Sampler) Sample() {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	agg := s.minute(now)
	w := &agg.worker
	s.metrics.DrainQueues(func(k metrics.QueueKey, ops store.QueueOps, parked int64) {
		w.Ops.Add(ops)
		if k.Queue == "" {
			return // counted in the broker's totals only
		}
		q, ok := agg.queues[k]
		if !ok {
			q = &store.QueueMinute{Tenant: k.Tenant, Queue: k.Queue, Minute: w.Minute, Hostname: w.Hostname,
				WorkerID: w.WorkerID}
			agg.queues[k] = q
		}
		q.Ops.Add(ops)
		q.Parked = max(q.Parked, parked)
	})
	w.DBErrors += s.metrics.DrainErrors()

	proc := metrics.ReadProcess()
	gauge := func(name string, v float64) {
		g := w.Gauges[name]
		g.Observe(v)
		w.Gauges[name] = g
	}
	if elapsed := now.Sub(s.prevAt); elapsed > 0 {
		// Percent of one CPU, times 100 (Queen's unit).
		gauge(GaugeCPUUser, float64(proc.CPUUser-s.prevCPU.CPUUser)/float64(elapsed)*100*100)
		gauge(GaugeCPUSystem, float64(proc.CPUSystem-s.prevCPU.CPUSystem)/float64(elapsed)*100*100)
	}
	s.prevCPU, s.prevAt = proc, now
	gauge(GaugeRSS, float64(proc.RSS))
	gauge(GaugeVirtual, float64(proc.Virtual))
	heap := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(heap)
	if heap[0].Value.Kind() == rtmetrics.KindUint64 {
		gauge(GaugeHeap, float64(heap[0].Value.Uint64()))
	}
	gauge(GaugeGoroutines, float64(runtime.NumGoroutine()))
	pool := s.store.StatsPool()
	gauge(GaugePoolSize, float64(pool.Size))
	gauge(GaugePoolOpen, float64(pool.Open))
	gauge(GaugePoolIdle, float64(pool.Idle))
	gauge(GaugePoolActive, float64(pool.Active))
	gauge(GaugePoolWaiting, float64(pool.Waiting))
	gauge(GaugeParked, float64(s.metrics.ParkedTotal()))
	gauge(GaugeSpool, float64(s.cfg.Spool()))
	avg, most := s.sched.Sample()
	gauge(GaugeSchedAvg, avg)
	gauge(GaugeSchedMax, most)
}

// Names of the process gauges in WorkerMinute.Gauges.
const (
	GaugeCPUSystem   = "cpu_system"   // percent of one CPU × 100, in the kernel
	GaugeCPUUser     = "cpu_user"     // percent of one CPU × 100, in user mode
	GaugeGoroutines  = "goroutines"   // goroutines alive
	GaugeHeap        = "heap_bytes"   // bytes of live and unswept heap objects
	GaugeParked      = "parked"       // long polls parked
	GaugePoolActive  = "pool_active"  // connections running a statement
	GaugePoolIdle    = "pool_idle"    // connections open and unused
	GaugePoolOpen    = "pool_open"    // connections open
	GaugePoolSize    = "pool_size"    // the most connections the pool opens
	GaugePoolWaiting = "pool_waiting" // operations waiting for a connection
	GaugeRSS         = "rss_bytes"    // resident memory
	GaugeSchedAvg    = "sched_lag_avg_ms"
	GaugeSchedMax    = "sched_lag_max_ms"
	GaugeSpool       = "spool_pending" // pushes waiting in the disk spool
	GaugeVirtual     = "virtual_bytes" // virtual memory (0 where unknown)
)

// minute returns the aggregate of now's minute, creating it. It expects
// s.mu held.
func (s *Sampler) minute(now time.Time) *minuteAgg {
	start := now.Truncate(time.Minute).UTC()
	if agg, ok := s.minutes[start.UnixMilli()]; ok {
		return agg
	}
	agg := &minuteAgg{queues: map[metrics.QueueKey]*store.QueueMinute{}, worker: store.WorkerMinute{
		Hostname: s.cfg.Hostname, WorkerID: s.cfg.WorkerID, PID: s.cfg.PID, Port: int(s.port.Load()),
		Minute: start, Gauges: map[string]store.GaugeStat{}}}
	s.minutes[start.UnixMilli()] = agg
	if len(s.minutes) > maxHeldMinutes {
		oldest := start.UnixMilli()
		for m := range s.minutes {
			oldest = min(oldest, m)
		}
		delete(s.minutes, oldest)
		s.log.Warn("metrics of a minute dropped: the store has not taken them for an hour",
			"minute", time.UnixMilli(oldest).UTC())
	}
	return agg
}

// Flush samples, writes the minutes the sampler holds, then (on the broker
// holding the metrics job's lock) records the deepest queues' figures and
// sweeps old rows. The flush loop calls it every AggregateEvery; tests
// call it with their own clock.
func (s *Sampler) Flush(ctx context.Context) error {
	s.Sample()
	err := s.writeMinutes(ctx)
	s.exclusive(ctx)
	return err
}

// writeMinutes writes every minute held, and forgets those before the
// current one once written (the current one is written again at the next
// flush, with what it gathered meanwhile).
func (s *Sampler) writeMinutes(ctx context.Context) error {
	s.mu.Lock()
	current := s.cfg.Now().Truncate(time.Minute).UnixMilli()
	p := &store.StatsRecordParams{}
	var written []int64
	for m, agg := range s.minutes {
		for _, q := range agg.queues {
			p.Queues = append(p.Queues, *q)
		}
		w := agg.worker
		w.Gauges = make(map[string]store.GaugeStat, len(agg.worker.Gauges))
		for k, v := range agg.worker.Gauges {
			w.Gauges[k] = v
		}
		p.Workers = append(p.Workers, w)
		if m < current {
			written = append(written, m)
		}
	}
	s.mu.Unlock()
	if err := s.store.StatsRecord(ctx, p); err != nil {
		return err
	}
	s.mu.Lock()
	for _, m := range written {
		delete(s.minutes, m)
	}
	s.mu.Unlock()
	return nil
}

// clusterWork runs under the metrics job's lock: one broker of the cluster
// records the queues' figures, rolls the last hour's rows up into slots and
// sweeps.
func (s *Sampler) clusterWork(ctx context.Context) {
	now := s.cfg.Now()
	g, err := s.store.StatsQueueGauges(ctx, &store.StatsQueueGaugesParams{Now: now, Limit: s.cfg.MaxQueues})
	if err == nil {
		minute := now.Truncate(time.Minute).UTC()
		p := &store.StatsRecordParams{}
		for _, q := range g.Queues {
			if q.Pending == 0 && q.Processing == 0 && q.DeadLetter == 0 {
				continue
			}
			p.States = append(p.States, store.QueueState{Tenant: q.Tenant, Queue: q.Queue, Minute: minute,
				Pending: q.Pending, Processing: q.Processing, DeadLetter: q.DeadLetter, GroupLag: q.GroupLag,
				Partitions: q.Partitions})
		}
		err = s.store.StatsRecord(ctx, p)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("queue figures not recorded", "err", err)
	}
	// The slots wide windows read; a broker may write a minute up to an
	// hour late (maxHeldMinutes).
	err = s.store.StatsRollup(ctx, &store.StatsRollupParams{From: now.Add(-rollupBack), To: now})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("metrics not rolled up", "err", err)
	}
	before := now.Add(-s.cfg.Retention)
	deleted := 0
	for range sweepSteps {
		res, err := s.store.StatsSweep(ctx, &store.StatsSweepParams{Before: before, Limit: sweepBatch})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("metrics sweep interrupted", "err", err)
			}
			break
		}
		deleted += res.Deleted
		if !res.More {
			break
		}
	}
	if deleted > 0 {
		s.log.Debug("old metrics swept", "rows", deleted, "before", before)
	}
}
