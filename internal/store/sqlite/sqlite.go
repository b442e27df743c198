// Package sqlite is the embedded storage engine: a single SQLite file in WAL
// mode with synchronous=FULL, so a committed push survives a crash or power
// loss. It is pure Go (modernc.org/sqlite), so it needs no cgo.
//
// SQLite has one writer at a time. Instead of letting requests fight over the
// write lock, every operation is a job handed to one writer goroutine, which
// runs all jobs waiting at that moment in one transaction (each under its own
// savepoint) and commits once: group commit, so one fsync serves many
// requests. The writer goroutine also owns the caches of queue and partition
// rows, which therefore need no locks.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/queen-go/queen/internal/store"
)

//go:embed migrations/*.up.sql
var migrations embed.FS

// maxJobsPerCommit bounds how many jobs share one transaction, which bounds
// the latency a job can add to the others in its commit.
const maxJobsPerCommit = 256

// maxLinger is the longest the writer waits for more jobs before a commit.
const maxLinger = 500 * time.Microsecond

// Config configures the embedded engine.
type Config struct {
	// Dir is the folder holding queen.db; it is created if missing.
	Dir string
	// Logger receives start-up and error logs; nil discards them.
	Logger *slog.Logger
	// NameCacheSize is how many entries each name → id cache (queues,
	// partitions, consumer groups) holds (QUEEN_NAME_CACHE_SIZE); 0 means
	// DefaultNameCacheSize.
	NameCacheSize int
}

// Store is the embedded engine. Create it with Open.
type Store struct {
	db     *sql.DB  // the single writer connection
	reader *sql.DB  // read-only connections for health checks
	lock   *os.File // the data folder's lock file, held while open
	log    *slog.Logger
	jobs   chan *job
	done   chan struct{}

	closeOnce sync.Once
	closing   chan struct{}
	closeErr  error

	// Owned by the writer goroutine.
	stmts *statements
	cache *cache
	sync  durability // the connection's current synchronous setting
	// advances are the plain pushes' partition writes, done once per
	// commit (advance.go).
	advances *advances
}

var _ store.Store = (*Store)(nil)

// job is one operation run by the writer inside the shared transaction.
type job struct {
	ctx     context.Context
	fn      func(tx *sql.Tx) error
	done    chan error
	durable durability
}

// durability says whether a job's commit must reach the disk before the
// job's caller is answered.
type durability bool

const (
	// durable: the commit fsyncs (synchronous=FULL). Pushes, transactions
	// and queue changes: a 201 means the data survives power loss.
	durable durability = true
	// relaxed: the commit is in the WAL but not yet fsynced
	// (synchronous=NORMAL); it survives a crash of the process, and the next
	// durable commit fsyncs it too, in order. Pops, acks and lease extends:
	// losing one to power loss only redelivers messages, which at-least-once
	// delivery allows, and it spares a pop the fsync between a push and the
	// waiting consumer.
	relaxed durability = false
)

// Open opens (creating if needed) the database in cfg.Dir, applies pending
// migrations and starts the writer.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir %q: %w", cfg.Dir, err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	opened := false
	defer func() {
		if !opened && lock != nil {
			lock.Close()
		}
	}()
	path := filepath.Join(cfg.Dir, "queen.db")
	// journal_size_limit: the write-ahead log never shrinks on its own, so
	// every checkpoint that a reader held back from resetting it leaves its
	// high-water mark on disk for good (a 4 MB log grew to 10 MB over
	// 200,000 messages of steady pops). With the limit, each reset truncates
	// it back to about one checkpoint's worth (wal_autocheckpoint is 1,000
	// pages of 4 KiB), which costs one ftruncate per 4 MB written.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=busy_timeout(10000)&_pragma=foreign_keys(0)&_pragma=temp_store(MEMORY)" +
		"&_pragma=journal_size_limit(4194304)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := migrate(ctx, db, 0, log.With("component", "sqlite")); err != nil {
		db.Close()
		return nil, err
	}
	reader, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	reader.SetMaxOpenConns(2)
	stmts, err := prepare(ctx, db)
	if err != nil {
		db.Close()
		reader.Close()
		return nil, err
	}
	s := &Store{
		db:      db,
		reader:  reader,
		log:     log.With("component", "sqlite"),
		jobs:    make(chan *job, maxJobsPerCommit),
		done:    make(chan struct{}),
		closing: make(chan struct{}),
		stmts:   stmts,
		cache:   newCache(cfg.NameCacheSize),
		sync:    durable, // the DSN opens with synchronous=FULL

		advances: newAdvances(),
	}
	s.lock = lock
	// Offsets continue after the highest one ever handed out (seq.go).
	if s.cache.lastSeq, err = highestSeq(ctx, db); err != nil {
		stmts.close()
		db.Close()
		reader.Close()
		return nil, err
	}
	opened = true
	go s.writer()
	s.log.Info("embedded store open", "path", path)
	return s, nil
}

// Engine reports "sqlite".
func (s *Store) Engine() string { return "sqlite" }

// Ping checks that the database file can be read.
func (s *Store) Ping(ctx context.Context) error {
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
	}
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// Close stops the writer after the jobs already queued and closes the file.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.done
		s.stmts.close()
		s.closeErr = errors.Join(s.db.Close(), s.reader.Close())
		if s.lock != nil {
			s.closeErr = errors.Join(s.closeErr, s.lock.Close()) // releases the folder
		}
	})
	return s.closeErr
}

// run hands fn to the writer and waits until its transaction has committed.
// fn must only touch the database through tx and must not block on anything
// else.
func (s *Store) run(ctx context.Context, d durability, fn func(tx *sql.Tx) error) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1), durable: d}
	select {
	case <-s.closing:
		return store.ErrClosed
	case s.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the job runs: wait for it even if ctx ends, so a caller
	// never reports failure for a write that then commits.
	select {
	case err := <-j.done:
		return err
	case <-s.done:
		// The writer has exited; a job queued after its last drain never runs.
		select {
		case err := <-j.done:
			return err
		default:
			return store.ErrClosed
		}
	}
}

// writer is the only goroutine that writes. It batches every job waiting at
// the time into one transaction.
//
// A commit costs an fsync (milliseconds on a shared disk), so the writer
// lingers briefly when fewer jobs are waiting than in its previous commit:
// the callers of that commit are likely about to send their next job, and
// one more job in this commit is much cheaper than a commit of its own.
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*job, 0, maxJobsPerCommit)
	linger := time.NewTimer(0)
	<-linger.C
	previous := 0
	for {
		select {
		case j := <-s.jobs:
			batch = append(batch[:0], j)
		case <-s.closing:
			// Finish what was queued before Close.
			for {
				select {
				case j := <-s.jobs:
					s.commit([]*job{j})
				default:
					return
				}
			}
		}
		waited := false
	fill:
		for len(batch) < maxJobsPerCommit {
			select {
			case j := <-s.jobs:
				batch = append(batch, j)
				continue
			default:
			}
			if waited || len(batch) >= previous {
				break
			}
			waited = true
			linger.Reset(maxLinger)
			select {
			case j := <-s.jobs:
				batch = append(batch, j)
				if !linger.Stop() {
					<-linger.C
				}
				waited = false // keep gathering while jobs keep coming
			case <-linger.C:
				break fill
			}
		}
		previous = len(batch)
		s.commit(batch)
	}
}

// commit runs a batch of jobs in one transaction. A job that fails is rolled
// back to its savepoint alone; if the commit itself fails, every job fails.
func (s *Store) commit(batch []*job) {
	live := batch[:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.done <- err // abandoned before it started: nothing written
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	want := relaxed
	for _, j := range live {
		if j.durable {
			want = durable
			break
		}
	}
	if want != s.sync {
		mode := "NORMAL"
		if want == durable {
			mode = "FULL"
		}
		if _, err := s.db.ExecContext(ctx, "PRAGMA synchronous = "+mode); err != nil {
			s.failAll(live, fmt.Errorf("%w: set synchronous: %w", store.ErrUnavailable, err))
			return
		}
		s.sync = want
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		s.failAll(live, fmt.Errorf("%w: begin: %w", store.ErrUnavailable, err))
		return
	}
	results := make([]error, len(live))
	single := len(live) == 1
	for i, j := range live {
		s.advances.startJob()
		if results[i] = s.runJob(ctx, tx, j, single); results[i] == nil {
			s.advances.jobDone()
		}
	}
	if single && results[0] != nil {
		_ = tx.Rollback()
		s.cache.reset()
		s.advances.reset()
		live[0].done <- results[0]
		return
	}
	// The plain pushes' partitions and lanes, once per commit. Failing
	// here fails the commit, like a failed COMMIT.
	if err := s.advances.flush(s.txn(tx)); err != nil {
		_ = tx.Rollback()
		s.cache.reset()
		s.log.Error("commit failed", "jobs", len(live), "err", err)
		s.failAll(live, fmt.Errorf("%w: commit: %w", store.ErrUnavailable, err))
		return
	}
	if err := tx.Commit(); err != nil {
		s.cache.reset()
		s.log.Error("commit failed", "jobs", len(live), "err", err)
		s.failAll(live, fmt.Errorf("%w: commit: %w", store.ErrUnavailable, err))
		return
	}
	for i, j := range live {
		j.done <- results[i]
	}
}

// runJob runs one job of a commit. Beside other jobs it runs inside a
// savepoint, so that its failure undoes its own writes and nobody else's.
func (s *Store) runJob(ctx context.Context, tx *sql.Tx, j *job, alone bool) error {
	if alone {
		return s.call(j, tx)
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT job"); err != nil {
		return err
	}
	err := s.call(j, tx)
	if err != nil {
		_, _ = tx.ExecContext(ctx, "ROLLBACK TO job")
		s.cache.reset() // the job may have cached rows that are now gone
	}
	if _, rerr := tx.ExecContext(ctx, "RELEASE job"); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// call runs a job's fn and turns its panic into the job's error. The writer
// goroutine makes every write of the broker: a job that panics must fail
// alone, its writes undone as for any error, and not stop the process.
func (s *Store) call(j *job, tx *sql.Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("panic recovered in a write", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("sqlite: a write panicked: %v", v)
		}
	}()
	return j.fn(tx)
}

func (s *Store) failAll(jobs []*job, err error) {
	for _, j := range jobs {
		j.done <- err
	}
}

// JobLockTry always grants the lock: an embedded store has one broker (the
// data folder's lock file keeps a second one out).
func (s *Store) JobLockTry(ctx context.Context, name string) (func(), bool, error) {
	return func() {}, true, nil
}

// Listen returns nil when ctx ends: no other broker shares an embedded
// store, and this broker wakes its own waiters.
func (s *Store) Listen(ctx context.Context, wake func(ws ...store.Wake)) error {
	select {
	case <-ctx.Done():
	case <-s.closing:
	}
	return nil
}

// PoolStats reports the single writer connection.
func (s *Store) PoolStats() store.PoolStats { return store.PoolStats{Size: 1} }

// TransportStats reports no transport: an embedded store has one broker.
func (s *Store) TransportStats() store.TransportStats { return store.TransportStats{} }
