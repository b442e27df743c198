package postgres

import (
	"context"
	"hash/fnv"

	"github.com/queen-go/queen/internal/store"
)

// JobLockTry takes a session-level advisory lock named after the job and the
// schema on a connection of its own, without waiting. The lock lives as long
// as that connection: release unlocks it and returns the connection, and a
// broker that dies drops it with its connection, so another broker takes
// over the job.
func (s *Store) JobLockTry(ctx context.Context, name string) (func(), bool, error) {
	if s.closed() {
		return nil, false, store.ErrClosed
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, wrapErr("postgres: job lock "+name, err)
	}
	key := jobLockKey(s.schema, name)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, wrapErr("postgres: job lock "+name, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	release := func() {
		if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key); err != nil {
			// A connection that cannot unlock is broken; closing it drops
			// the lock.
			_ = conn.Conn().Close(context.Background())
		}
		conn.Release()
	}
	return release, true, nil
}

// jobLockKey derives the advisory lock key of a job on a schema.
func jobLockKey(schema, job string) int64 {
	h := fnv.New64a()
	h.Write([]byte("queen-go/job/" + schema + "/" + job))
	return int64(h.Sum64())
}
