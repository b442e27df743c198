package postgres

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// jobLocks holds the cluster-wide locks of background jobs (session-level
// advisory locks) on one connection of their own, outside the pool. A job
// holds its lock while it runs and runs transactions from the pool
// meanwhile: with the lock on a pooled connection, a few jobs running at
// once (purge, clear, retention, eviction) could take every connection of
// a small pool (DB_POOL_SIZE may be 2) and wait for one more forever,
// while every push waited behind them. One connection holds any number of
// advisory locks. A broker that dies drops its connection and so its locks,
// and another broker takes over the jobs.
type jobLocks struct {
	mu   sync.Mutex
	conn *pgx.Conn       // nil until first used, and after it failed
	held map[int64]bool  // the locks this broker holds, so that it never takes one twice
	cfg  *pgx.ConnConfig // the store's connection settings
}

// unlockTimeout bounds an unlock; a connection that cannot answer by then is
// closed, which unlocks too.
const unlockTimeout = 5 * time.Second

func newJobLocks(cfg *pgx.ConnConfig) *jobLocks {
	return &jobLocks{cfg: cfg, held: make(map[int64]bool)}
}

// JobLockTry takes the lock named after the job and the schema without
// waiting. release unlocks it.
func (s *Store) JobLockTry(ctx context.Context, name string) (func(), bool, error) {
	if s.closed() {
		return nil, false, store.ErrClosed
	}
	key := jobLockKey(s.schema, name)
	ok, err := s.locks.try(ctx, key)
	if err != nil {
		return nil, false, wrapErr("postgres: job lock "+name, err)
	}
	if !ok {
		return nil, false, nil
	}
	return func() { s.locks.release(key) }, true, nil
}

func (l *jobLocks) try(ctx context.Context, key int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] {
		return false, nil // advisory locks nest within a session: refuse here
	}
	if l.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, l.cfg.Copy())
		if err != nil {
			return false, err
		}
		l.conn = conn
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		l.dropLocked()
		return false, err
	}
	if ok {
		l.held[key] = true
	}
	return ok, nil
}

func (l *jobLocks) release(key int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[key] {
		return
	}
	delete(l.held, key)
	if l.conn == nil {
		return // the connection failed: the server dropped the lock with it
	}
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	if _, err := l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
		// A connection that cannot unlock is broken; closing it drops
		// every lock it held (their jobs learn nothing: they were running
		// alone, and the next run takes the lock again).
		l.dropLocked()
	}
}

// dropLocked closes the connection, which releases every lock it held.
// l.mu must be held.
func (l *jobLocks) dropLocked() {
	if l.conn != nil {
		_ = l.conn.Close(context.Background())
		l.conn = nil
	}
	clear(l.held)
}

// close releases every lock and the connection.
func (l *jobLocks) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropLocked()
}

// jobLockKey derives the advisory lock key of a job on a schema.
func jobLockKey(schema, job string) int64 {
	h := fnv.New64a()
	h.Write([]byte("queen-go/job/" + schema + "/" + job))
	return int64(h.Sum64())
}
