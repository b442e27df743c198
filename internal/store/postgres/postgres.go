// Package postgres is the storage engine for brokers that share one
// PostgreSQL database. All correctness lives in the database: offsets,
// leases, cursors and dedup are decided inside transactions, so any number of
// brokers can serve the same queues.
//
// Design in short (see migrations/001_init.up.sql for the tables):
//
//   - Offsets come from a counter in the partitions row, bumped under its row
//     lock, so they grow in commit order within a partition and have no gaps
//     (until the control plane deletes a single message).
//   - A lane (partition × consumer group) is one row holding cursor, lease and
//     retry counter (lane.State). Rows exist for every (partition, joined
//     group), and a partial index over lanes that may have unread messages
//     lets a pop find candidates without scanning partitions or messages.
//   - Every operation is a handful of round trips, whatever its size: a push
//     of any number of messages, an ack batch, a pop of many lanes. Concurrent
//     PushMany calls are merged into shared transactions (batcher.go).
//   - Lanes are claimed with FOR UPDATE SKIP LOCKED, so two brokers never
//     lease the same lane and a pop never waits for another pop. Every lock
//     that can be waited for is taken in a fixed order (partitions by id, then
//     lanes by (partition, group)); a transaction that still deadlocks is
//     retried whole.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/store"
)

//go:embed migrations/*.up.sql
var migrations embed.FS

// Defaults for Config fields left zero.
const (
	DefaultSchema           = "queen"
	DefaultPoolSize         = 20
	DefaultStatementTimeout = 30 * time.Second
)

// flushesInFlight is how many merged push transactions run at once. Pushes
// to the same partitions serialise on the partition rows anyway, so more
// flushes in flight mostly make each one smaller; two let one flush gather
// and lock while the other commits. Measured: 1–2 beat 3–5 on 8×100 and
// 64×1 producers over 16 partitions.
const flushesInFlight = 2

// maxAttempts bounds how often a transaction is retried after a deadlock, a
// serialization failure or a stale cache entry.
const maxAttempts = 4

// Config configures the PostgreSQL engine.
type Config struct {
	// URL is a libpq-style connection URL or DSN.
	URL string
	// Schema holds the broker's tables; it is created if missing.
	Schema string
	// PoolSize is the maximum number of pooled connections (DB_POOL_SIZE).
	PoolSize int
	// StatementTimeout bounds every statement (DB_STATEMENT_TIMEOUT).
	StatementTimeout time.Duration
	// Logger receives start-up and error logs; nil discards them.
	Logger *slog.Logger
	// NameCacheSize is how many entries each name → id cache (queues,
	// partitions) holds (QUEEN_NAME_CACHE_SIZE); 0 means
	// DefaultNameCacheSize.
	NameCacheSize int
}

// Store is the PostgreSQL engine. Create it with Open.
type Store struct {
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig // for the dedicated LISTEN connection
	schema  string
	log     *slog.Logger
	cache   *cache
	pushes  *batcher
	// lastClaim is the last claim order handed out by nextClaim.
	lastClaim atomic.Int64
	wakes     *notifier
	// instance tells this store's wake-up notifications from other
	// brokers' (notify.go).
	instance  string
	transport transportCounters // what the wake-ups did (notify.go)
	locks     *jobLocks         // background jobs' locks, on a connection of their own (joblock.go)

	// migrated is set once the schema is known to be migrated; a store
	// opened during an outage migrates when the database answers (ready).
	migrated     atomic.Bool
	migrateMu    sync.Mutex
	migrateTried time.Time // guarded by migrateMu

	closeOnce sync.Once
	closing   chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open connects, applies pending migrations and starts the push batcher.
//
// A database that cannot be reached is not an error: the store opens
// anyway, every operation fails with store.ErrUnavailable (so the broker
// spools pushes and answers pops 503), and the migrations run as soon as the
// database answers. Only what waiting cannot fix stops Open: a bad URL,
// refused credentials, a schema that belongs to another application.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = withDefaults(cfg)
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	pcfg.MaxConns = int32(cfg.PoolSize)
	setRuntimeParams(pcfg.ConnConfig, cfg)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, wrapErr("postgres: connect", err)
	}
	log := cfg.Logger.With("component", "postgres", "schema", cfg.Schema)
	migrateErr := migrate(ctx, pool, cfg.Schema, log)
	if migrateErr != nil && (!errors.Is(migrateErr, store.ErrUnavailable) || refusedAtStart(migrateErr)) {
		pool.Close()
		return nil, migrateErr
	}
	s := &Store{
		pool:     pool,
		connCfg:  pcfg.ConnConfig.Copy(),
		schema:   cfg.Schema,
		log:      log,
		cache:    newCache(cfg.NameCacheSize),
		closing:  make(chan struct{}),
		instance: uuid.NewString(),
	}
	s.pushes = newBatcher(s, flushesInFlight)
	s.wakes = newNotifier(s)
	s.locks = newJobLocks(s.connCfg)
	if migrateErr != nil {
		s.migrateTried = time.Now()
		s.log.Error("PostgreSQL unreachable at start-up; serving anyway: pushes are spooled, pops answer 503, "+
			"and the schema is migrated once the database answers", "host", pcfg.ConnConfig.Host,
			"database", pcfg.ConnConfig.Database, "err", migrateErr)
		return s, nil
	}
	s.migrated.Store(true)
	s.log.Info("postgres store open", "host", pcfg.ConnConfig.Host, "database", pcfg.ConnConfig.Database,
		"pool", cfg.PoolSize)
	return s, nil
}

// migrateRetry bounds how often a store opened during an outage tries its
// migrations again.
const migrateRetry = time.Second

// ready returns nil once the schema is migrated. A store opened while the
// database was unreachable migrates on the first call after it answers
// (at most one attempt per migrateRetry, one at a time); until then it
// reports store.ErrUnavailable.
func (s *Store) ready(ctx context.Context) error {
	if s.migrated.Load() {
		return nil
	}
	if !s.migrateMu.TryLock() {
		return fmt.Errorf("postgres: %w: migrating the schema", store.ErrUnavailable)
	}
	defer s.migrateMu.Unlock()
	if s.migrated.Load() {
		return nil
	}
	if time.Since(s.migrateTried) < migrateRetry {
		return fmt.Errorf("postgres: %w: not reached since start-up", store.ErrUnavailable)
	}
	s.migrateTried = time.Now()
	if err := migrate(ctx, s.pool, s.schema, s.log); err != nil {
		if !errors.Is(err, store.ErrUnavailable) {
			s.log.Error("PostgreSQL answers, but its schema cannot be migrated", "err", err)
		}
		return err
	}
	s.migrated.Store(true)
	s.log.Info("PostgreSQL reachable; schema migrated")
	return nil
}

func withDefaults(cfg Config) Config {
	if cfg.Schema == "" {
		cfg.Schema = DefaultSchema
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.StatementTimeout <= 0 {
		cfg.StatementTimeout = DefaultStatementTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// setRuntimeParams makes every connection resolve unqualified names in the
// broker's schema, bound its statements, work in UTC, and plan for short
// statements. They are startup parameters, so they cost no round trip.
func setRuntimeParams(cc *pgx.ConnConfig, cfg Config) {
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	cc.RuntimeParams["TimeZone"] = "UTC"
	// Plan every execution with the table sizes of the moment. Queue tables
	// swing from empty to millions of rows between two ANALYZEs; a cached
	// generic plan made while a table was empty scans it whole per row ever
	// after (seen: ack resolution joining messages without its index).
	cc.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	// No JIT compilation. The broker's statements are short index probes,
	// but the planner's estimates for some of them run into the millions
	// on big queues (the push insert costs its maxSize check, a subplan per
	// partition of each queue, whether or not any queue has a cap): past
	// jit_above_cost the server compiled the statement for every execution,
	// about 140 ms, and past jit_optimize_above_cost with LLVM optimization,
	// seconds (seen: requeueing 10 dead letters of a queue of 10,000
	// partitions took 5 s, of which 6 ms was execution).
	cc.RuntimeParams["jit"] = "off"
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "queen-go"
	}
}

// Engine reports "postgres".
func (s *Store) Engine() string { return "postgres" }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed() {
		return store.ErrClosed
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// Close flushes pushes already accepted, then closes the pool. It is safe to
// call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.pushes.stop()
		s.wakes.stop()
		s.locks.close()
		s.pool.Close()
	})
	return nil
}

func (s *Store) closed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// errStale reports that a cached queue or partition row no longer exists
// (another broker deleted the queue); the transaction is retried with an
// empty cache.
var errStale = errors.New("stale cache entry")

// txn is one database transaction plus what it learned for the cache, which
// is published only once the transaction has committed.
type txn struct {
	ctx     context.Context
	tx      pgx.Tx
	s       *Store
	learned []func(*cache)
	wake    []store.Wake // wake-ups to announce to other brokers after commit
	// deferWrites sends the writes of writeLanes with COMMIT (in final)
	// rather than at once; set on lazyTx transactions, whose lane writes are
	// their last statements.
	deferWrites bool
	final       pgx.Batch
}

// inTx runs fn in a READ COMMITTED transaction and commits it. Deadlocks,
// serialization failures and stale cache entries roll back and retry the
// whole transaction; fn must therefore be safe to run again.
func (s *Store) inTx(ctx context.Context, op string, fn func(t *txn) error) error {
	if s.closed() {
		return store.ErrClosed
	}
	return s.runTx(ctx, op, durable, fn)
}

// inRelaxedTx is inTx for transactions whose commit need not wait for its
// WAL flush (see relaxed).
func (s *Store) inRelaxedTx(ctx context.Context, op string, fn func(t *txn) error) error {
	if s.closed() {
		return store.ErrClosed
	}
	return s.runTx(ctx, op, relaxed, fn)
}

// durability selects how a transaction commits.
type durability bool

const (
	// durable commits wait for the WAL flush (synchronous_commit as the
	// server has it): pushes, transactions, queue changes.
	durable durability = true
	// relaxed commits do not wait for the WAL flush (synchronous_commit off
	// for the transaction): pops, acks and lease extends. A database crash
	// can lose the last fraction of a second of them, which only redelivers
	// messages, as at-least-once delivery allows; in exchange consumers do
	// not queue behind the fsyncs of pushes.
	relaxed durability = false
)

// runTx is inTx without the closed check, for the batcher's final flushes.
func (s *Store) runTx(ctx context.Context, op string, d durability, fn func(t *txn) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := s.tryTx(ctx, d, fn)
		if err == nil {
			return nil
		}
		if attempt < maxAttempts && retryable(err) && ctx.Err() == nil {
			if errors.Is(err, errStale) || isCode(err, codeForeignKey) {
				s.cache.reset()
			}
			s.log.Debug("retrying transaction", "op", op, "attempt", attempt, "err", err)
			continue
		}
		var abort *store.TxAbortError
		if errors.As(err, &abort) {
			return abort
		}
		if s.closed() {
			return store.ErrClosed
		}
		return wrapErr("postgres: "+op, err)
	}
}

// tryTx runs fn in one transaction. Relaxed transactions (pops, acks, lease
// extends) run on a lazyTx: BEGIN travels with their first statement, and
// their final lane writes (deferred by writeLanes) with COMMIT.
func (s *Store) tryTx(ctx context.Context, d durability, fn func(t *txn) error) error {
	var tx pgx.Tx
	var lazy *lazyTx
	if d == relaxed {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		lazy = newLazyTx(conn, beginRelaxedStmts)
		tx = lazy
	} else {
		var err error
		if tx, err = s.pool.BeginTx(ctx, pgx.TxOptions{}); err != nil {
			return err
		}
	}
	t := &txn{ctx: ctx, tx: tx, s: s, deferWrites: lazy != nil}
	defer func() {
		// A panic in fn goes on up (to the handler's or the batcher's
		// recovery), but not with the connection checked out in an open
		// transaction holding its locks.
		if v := recover(); v != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(v)
		}
	}()
	if err := fn(t); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	var err error
	if lazy != nil {
		err = lazy.commitWith(ctx, &t.final)
	} else {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return err
	}
	for _, f := range t.learned {
		f(s.cache)
	}
	if len(t.wake) > 0 {
		s.wakes.send(t.wake)
	}
	return nil
}

// wakeAfterCommit records wake-ups to announce to other brokers once this
// transaction has committed; wake-ups of one queue add up.
func (t *txn) wakeAfterCommit(ws ...store.Wake) {
	t.wake = mergeWakes(t.wake, ws...)
}

// mergeWakes adds ws to into, one entry per queue: counts add up, and an
// unknown count (0) stays unknown.
func mergeWakes(into []store.Wake, ws ...store.Wake) []store.Wake {
next:
	for _, w := range ws {
		for i := range into {
			if into[i].Key == w.Key {
				if into[i].Count == 0 || w.Count == 0 {
					into[i].Count = 0
				} else {
					into[i].Count += w.Count
				}
				continue next
			}
		}
		into = append(into, w)
	}
	return into
}

// learn records a cache update to publish after commit.
func (t *txn) learn(f func(*cache)) { t.learned = append(t.learned, f) }

// exec runs the statements queued in b in one round trip and checks each.
func (t *txn) execBatch(b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return t.tx.SendBatch(t.ctx, b).Close()
}

// nextClaim returns the order to record in lanes.last_claimed_at for a claim
// at nowMs: microseconds, bumped past this broker's previous claim when two
// fall in the same microsecond, so that "least recently claimed first" has
// no ties (with millisecond stamps, a pop could pick again the lane it had
// just served). Across brokers, clocks order the claims.
func (s *Store) nextClaim(nowMs int64) int64 {
	for {
		last := s.lastClaim.Load()
		next := max(nowMs*1000, last+1)
		if s.lastClaim.CompareAndSwap(last, next) {
			return next
		}
	}
}

// PoolStats reports the pgx pool for /metrics.
func (s *Store) PoolStats() store.PoolStats {
	st := s.pool.Stat()
	return store.PoolStats{Size: int(st.MaxConns()), Idle: int(st.IdleConns())}
}
