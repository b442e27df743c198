package store

import (
	"context"
	"time"
)

// StatsStore serves the status, analytics and metrics surfaces: live
// per-queue gauges across tenants, the per-minute series the metrics
// sampler records (and sweeps), the retention history, and the engine's own
// figures. (The status view's newest messages are a MessageList judged by
// queue mode's lane.)
//
// Time series are written once a minute per broker by the sampler
// (StatsRecord) and read back in buckets; nothing here scans the messages
// table. The live figures (StatsQueueGauges) come from the same counters and
// cursors as QueueList, with one index lookup per lane behind.
type StatsStore interface {
	// StatsEngine reports the engine's own figures: sizes, cache use,
	// settings and activity (PostgreSQL's statistics views; SQLite's
	// pragmas).
	StatsEngine(ctx context.Context, p *StatsEngineParams) (*EngineStats, error)
	// StatsLeases counts a tenant's live leases and the lanes they hold
	// (of one queue when p.Queue is set), along the index of leased lanes.
	StatsLeases(ctx context.Context, p *StatsLeasesParams) (*LeaseSummary, error)
	// StatsPool reports the use of the engine's connections right now. It
	// reads counters in memory and never blocks.
	StatsPool() PoolUsage
	// StatsQueueGauges reports the live figures of the deepest queues of
	// every tenant (most pending first, at most p.Limit of them) and the
	// totals of all queues.
	StatsQueueGauges(ctx context.Context, p *StatsQueueGaugesParams) (*QueueGauges, error)
	// StatsQueueSeries sums the per-queue counters recorded between From
	// and To into buckets, grouped as p.Group says, oldest bucket first.
	// Buckets of whole RollupSlots are read from the slots StatsRollup
	// keeps (see SeriesFromSlots).
	StatsQueueSeries(ctx context.Context, p *StatsSeriesParams) ([]QueueBucket, error)
	// StatsQueueStateSeries returns the per-queue figures recorded between
	// From and To, the last of each bucket, oldest bucket first.
	StatsQueueStateSeries(ctx context.Context, p *StatsSeriesParams) ([]QueueState, error)
	// StatsRecord writes one broker's figures of one or more minutes,
	// replacing rows already written for the same minute, broker and queue
	// (so that a broker may record a minute several times as it goes, and
	// retry a failed write).
	StatsRecord(ctx context.Context, p *StatsRecordParams) error
	// StatsRollup sums the per-queue rows of every broker recorded in
	// [From, To), widened to whole RollupSlots, into those slots, replacing
	// what they held. The broker holding the metrics job's lock runs it
	// after each write, over the last hour and a quarter (a broker may write
	// a minute up to an hour late).
	StatsRollup(ctx context.Context, p *StatsRollupParams) error
	// StatsRetentionSeries sums what retention and eviction removed between
	// From and To into buckets, per kind, oldest bucket first. It returns
	// nothing (and no error) when the engine keeps no retention history.
	StatsRetentionSeries(ctx context.Context, p *StatsSeriesParams) ([]RetentionBucket, error)
	// StatsSweep deletes up to p.Limit rows of every series older than
	// p.Before and reports whether more remain.
	StatsSweep(ctx context.Context, p *StatsSweepParams) (*StatsSweepResult, error)
	// StatsWorkerSeries returns the per-broker rows recorded between From
	// and To (of one broker when Hostname or WorkerID is set), by broker
	// then minute.
	StatsWorkerSeries(ctx context.Context, p *StatsSeriesParams) ([]WorkerMinute, error)
}

// PoolUsage describes the engine's connections right now.
type PoolUsage struct {
	Active  int // connections running a statement
	Idle    int // connections open and unused
	Open    int // connections open
	Size    int // the most connections the pool opens
	Waiting int // operations waiting for a connection (or for the embedded engine's writer)
}

// StatsLeasesParams select a tenant's (or one queue's) live leases.
type StatsLeasesParams struct {
	Now    time.Time
	Queue  string // "" every queue of the tenant
	Tenant string
}

// LeaseSummary counts live leases.
type LeaseSummary struct {
	Lanes  int // lanes under a live lease
	Leases int // distinct live leases (a pop of several partitions holds one lease on each)
}

// StatsQueueGaugesParams bound StatsQueueGauges.
type StatsQueueGaugesParams struct {
	Limit int // queues described at most; <= 0 means DefaultPageLimit
	Now   time.Time
}

// QueueGauges are the live figures of the deepest queues of every tenant,
// and totals over all queues.
type QueueGauges struct {
	DeadLetter int64        // dead letters of every queue
	Pending    int64        // pending messages of every queue
	Queues     []QueueGauge // the deepest queues, most pending first
	Total      int          // queues in all (Total - len(Queues) were left out)
}

// QueueGauge is one queue's live figures.
type QueueGauge struct {
	DeadLetter int64 // dead-letter rows of its messages
	GroupLag   int64 // unread messages of the group furthest behind (0 when no group reads it)
	// OldestUnread is the createdAt of the oldest message some group has
	// still to read (the oldest message when no group reads the queue);
	// zero when there is none.
	OldestUnread time.Time
	Partitions   int
	Pending      int64 // as MessageCounts.Pending, over its partitions
	Processing   int64 // under live leases
	Queue        string
	Tenant       string
}

// QueueOps are the counters the broker keeps per queue (and sums per
// broker): requests and messages of each operation, and the time messages
// waited between their push and their pop.
type QueueOps struct {
	AckFailed    int64 // acks that did not commit (a failed status, an invalid lease, unresolvable)
	AckRequests  int64
	AckSuccess   int64
	DLQ          int64 // messages dead-lettered by an ack
	LagCount     int64 // messages popped whose wait is in LagSumMs
	LagMaxMs     int64
	LagSumMs     int64
	PopEmpty     int64 // pops that returned nothing
	PopMessages  int64
	PopRequests  int64
	PushMessages int64
	PushRequests int64
	Transactions int64
}

// Add adds o to q (LagMaxMs takes the larger).
func (q *QueueOps) Add(o QueueOps) {
	q.AckFailed += o.AckFailed
	q.AckRequests += o.AckRequests
	q.AckSuccess += o.AckSuccess
	q.DLQ += o.DLQ
	q.LagCount += o.LagCount
	q.LagMaxMs = max(q.LagMaxMs, o.LagMaxMs)
	q.LagSumMs += o.LagSumMs
	q.PopEmpty += o.PopEmpty
	q.PopMessages += o.PopMessages
	q.PopRequests += o.PopRequests
	q.PushMessages += o.PushMessages
	q.PushRequests += o.PushRequests
	q.Transactions += o.Transactions
}

// AvgLagMs is the mean wait, in milliseconds, of the messages popped; 0
// when none was.
func (q QueueOps) AvgLagMs() float64 {
	if q.LagCount == 0 {
		return 0
	}
	return float64(q.LagSumMs) / float64(q.LagCount)
}

// IsZero reports whether every counter is 0.
func (q QueueOps) IsZero() bool { return q == QueueOps{} }

// QueueMinute is what one broker did for one queue in one minute.
type QueueMinute struct {
	Hostname string
	Minute   time.Time // the minute's start
	Ops      QueueOps
	Parked   int64 // long polls parked on the queue at this broker: the most seen in the minute
	Queue    string
	Tenant   string
	WorkerID string
}

// QueueState is a queue's live figures at one minute (recorded by one
// broker of the cluster).
type QueueState struct {
	DeadLetter int64
	GroupLag   int64
	Minute     time.Time // the minute's start (the bucket's, when read back)
	Partitions int
	Pending    int64
	Processing int64
	Queue      string
	Tenant     string
}

// GaugeStat summarises the samples of one gauge.
type GaugeStat struct {
	Avg  float64 `json:"avg"`
	Last float64 `json:"last"`
	Max  float64 `json:"max"`
	Min  float64 `json:"min"`
	N    int64   `json:"n"` // samples
}

// Merge adds the samples o summarises to g, o being the later.
func (g *GaugeStat) Merge(o GaugeStat) {
	if o.N == 0 {
		return
	}
	if g.N == 0 {
		*g = o
		return
	}
	n := g.N + o.N
	g.Avg = (g.Avg*float64(g.N) + o.Avg*float64(o.N)) / float64(n)
	g.Max = max(g.Max, o.Max)
	g.Min = min(g.Min, o.Min)
	g.Last = o.Last
	g.N = n
}

// Observe adds one sample.
func (g *GaugeStat) Observe(v float64) { g.Merge(GaugeStat{Avg: v, Last: v, Max: v, Min: v, N: 1}) }

// WorkerMinute is what one broker did, and how its process fared, in one
// minute.
type WorkerMinute struct {
	DBErrors int64                // requests answered 500 or 503
	Gauges   map[string]GaugeStat // process gauges over the minute's samples, by name
	Hostname string
	Minute   time.Time
	Ops      QueueOps // over every queue
	PID      int
	Port     int
	WorkerID string
}

// StatsRecordParams are one broker's figures to write.
type StatsRecordParams struct {
	Queues  []QueueMinute
	States  []QueueState
	Workers []WorkerMinute
}

// SeriesGroup says how StatsQueueSeries groups the rows of a bucket.
type SeriesGroup int

// Series groupings.
const (
	// SeriesByBucket sums every queue and broker of the bucket.
	SeriesByBucket SeriesGroup = iota
	// SeriesByQueue sums every broker per queue.
	SeriesByQueue
	// SeriesByReplica keeps queues and brokers apart.
	SeriesByReplica
)

// StatsSeriesParams select rows recorded in [From, To).
type StatsSeriesParams struct {
	AllTenants bool          // every tenant's queues (Tenant is then ignored)
	Bucket     time.Duration // bucket width, a whole number of minutes (<= a minute means a minute)
	From       time.Time
	Group      SeriesGroup
	Hostname   string   // only this broker's rows; "" any
	Namespace  string   // only queues of this namespace; "" any
	Queues     []string // only these queues; empty any
	Task       string   // only queues of this task; "" any
	Tenant     string
	To         time.Time
	WorkerID   string // only this broker's rows; "" any
}

// RollupSlot is the width of the slots StatsRollup keeps.
const RollupSlot = 15 * time.Minute

// StatsRollupParams select the slots to sum again.
type StatsRollupParams struct {
	From, To time.Time
}

// SeriesFromSlots reports whether a series can be read from the rollup
// slots: a window starting on a slot, buckets of whole slots, every broker
// together (no broker filter, not SeriesByReplica). Windows beyond 6 hours
// qualify (Queen's buckets of 15, 60 and 360 minutes, aligned on them);
// their parked polls are then each queue's most in a minute, summed over
// queues.
func SeriesFromSlots(p *StatsSeriesParams) bool {
	return p.Bucket >= RollupSlot && p.Bucket%RollupSlot == 0 && p.From.Equal(BucketOf(p.From, RollupSlot)) &&
		p.Group != SeriesByReplica && p.Hostname == "" && p.WorkerID == ""
}

// BucketOf returns the start of t's bucket of width d (at least a minute),
// buckets being aligned on the Unix epoch.
func BucketOf(t time.Time, d time.Duration) time.Time {
	d = max(d.Truncate(time.Minute), time.Minute)
	ms := t.UnixMilli()
	w := d.Milliseconds()
	b := ms - ms%w
	if ms < 0 && ms%w != 0 {
		b -= w
	}
	return time.UnixMilli(b).UTC()
}

// QueueBucket sums the counters of a bucket. Parked is summed over brokers
// per minute and the bucket's largest minute kept.
type QueueBucket struct {
	Bucket   time.Time
	Hostname string // with SeriesByReplica
	Ops      QueueOps
	Parked   int64
	Queue    string // with SeriesByQueue or SeriesByReplica
	Tenant   string // with SeriesByQueue or SeriesByReplica
	WorkerID string // with SeriesByReplica
}

// RetentionBucket sums what one kind of sweep removed in a bucket.
type RetentionBucket struct {
	Bucket   time.Time
	Events   int64 // rows of the history summed (one per queue, kind and minute)
	Kind     string
	Messages int64
}

// StatsSweepParams bound one sweep of old series rows.
type StatsSweepParams struct {
	Before time.Time
	Limit  int // rows per table at most; <= 0 means 1000
}

// StatsSweepResult says what a sweep deleted and whether more remains.
type StatsSweepResult struct {
	Deleted int
	More    bool
}

// StatsEngineParams ask for the engine's figures.
type StatsEngineParams struct {
	Now time.Time
}

// EngineStats are the engine's own figures. Fields an engine does not
// have are zero (and lists empty).
type EngineStats struct {
	Activity []EngineActivity // statements running now (PostgreSQL)
	Database EngineDatabase
	Indexes  []EngineIndex
	Settings []EngineSetting // the settings that size its caches and journal
	Tables   []EngineTable
}

// EngineDatabase describes the database as a whole.
type EngineDatabase struct {
	BlocksHit     int64 // cache hits (PostgreSQL)
	BlocksRead    int64 // reads that missed the cache (PostgreSQL)
	CachePages    int64 // pages the cache holds at most (SQLite's cache_size, as pages)
	Commits       int64
	Connections   int // backends connected to this database (PostgreSQL)
	Deadlocks     int64
	FreelistPages int64 // unused pages kept in the file (SQLite)
	Name          string
	PageCount     int64 // pages in the file (SQLite)
	PageSize      int64
	Rollbacks     int64
	SizeBytes     int64
	TempBytes     int64
	WALBytes      int64 // size of the write-ahead log file (SQLite)
}

// EngineTable describes one of the broker's tables.
type EngineTable struct {
	AutovacuumCount int64
	BlocksHit       int64
	BlocksRead      int64
	DeadRows        int64
	HotUpdates      int64
	IndexBlocksHit  int64
	IndexBlocksRead int64
	IndexBytes      int64
	LastAutovacuum  time.Time
	LastVacuum      time.Time
	Name            string
	Rows            int64 // live rows (an estimate on PostgreSQL)
	TableBytes      int64
	TotalBytes      int64
	Updates         int64
	VacuumCount     int64
}

// EngineIndex describes one of the broker's indexes.
type EngineIndex struct {
	BlocksHit  int64
	BlocksRead int64
	Name       string
	Scans      int64
	SizeBytes  int64
	Table      string
}

// EngineSetting is one engine setting.
type EngineSetting struct {
	Name  string
	Unit  string
	Value string
}

// EngineActivity is one statement running now.
type EngineActivity struct {
	Duration  time.Duration
	PID       int
	Query     string // at most 200 bytes, its literals replaced by "?" (no session's values leave the broker)
	State     string
	WaitEvent string
}
