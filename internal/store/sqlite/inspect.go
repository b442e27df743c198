package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// The control plane's reads run on the read-only pool (s.reader), never as
// writer jobs, so that listing and describing never delay a push or a pop.
//
// Figures come from counters, not from reading messages: offsets here are
// rowids shared by every partition, so two offsets do not tell how many
// messages lie between them, and migration 006 keeps
// partitions.message_count (messages since the last clear) and
// lanes.consumed (of those, how many the lane committed) up to date. Beyond
// them, a figure costs at most one index lookup per partition or lane (its
// oldest message, its oldest unread message), or, for a lane under a live
// lease, a count of its leased batch.
//
// Every statement takes now (Unix ms) as ?1: a lease counts as live when
// it expires after it.

// Expressions over l, a lanes row, and p, its partition.
const (
	// unread messages
	sqlLag = `(CASE WHEN l.cursor >= p.last_offset THEN 0 ELSE max(0, p.message_count - l.consumed) END)`
	// messages under the live lease
	sqlProc = `(CASE WHEN l.lease_id IS NOT NULL AND l.lease_expires_at > ?1 AND l.batch_end > l.cursor
		THEN (SELECT count(*) FROM messages m WHERE m.partition_id = l.partition_id
			AND m.seq > max(l.cursor, p.cleared_offset) AND m.seq <= l.batch_end)
		ELSE 0 END)`
	// the createdAt of the first unread message
	sqlOldestUnread = `(SELECT m.created_at FROM messages m
		WHERE m.partition_id = p.id AND m.seq > max(l.cursor, p.cleared_offset) ORDER BY m.seq LIMIT 1)`
	// the live lease and its deadline
	sqlLiveLease = `(CASE WHEN l.lease_id IS NOT NULL AND l.lease_expires_at > ?1 THEN l.lease_id ELSE '' END),
		(CASE WHEN l.lease_id IS NOT NULL AND l.lease_expires_at > ?1 THEN l.lease_expires_at ELSE 0 END)`
)

// Figures of partition p over its lanes (Queen's rule: the largest among
// groups; with no group, everything stored is pending).
const (
	sqlPartTotal     = `p.message_count`
	sqlPartPending   = `COALESCE((SELECT max(` + sqlLag + ` - ` + sqlProc + `) FROM lanes l WHERE l.partition_id = p.id), p.message_count)`
	sqlPartProc      = `COALESCE((SELECT max(` + sqlProc + `) FROM lanes l WHERE l.partition_id = p.id), 0)`
	sqlPartCompleted = `COALESCE((SELECT max(l.consumed) FROM lanes l WHERE l.partition_id = p.id), 0)`
	sqlPartClaimed   = `COALESCE((SELECT max(l.last_claimed_at) FROM lanes l WHERE l.partition_id = p.id), 0)`
	sqlPartDead      = `(SELECT count(*) FROM dead_letters d WHERE d.partition_id = p.id AND d.message_seq > p.cleared_offset)`
	sqlPartOldest    = `(SELECT m.created_at FROM messages m WHERE m.partition_id = p.id AND m.seq > p.cleared_offset
		ORDER BY m.seq LIMIT 1)`

	// sqlPartSums sum the figures of the partitions p of a group of rows.
	sqlPartSums = `count(p.id), COALESCE(sum(` + sqlPartTotal + `), 0), COALESCE(sum(` + sqlPartPending + `), 0),
		COALESCE(sum(` + sqlPartProc + `), 0), COALESCE(sum(` + sqlPartCompleted + `), 0)`
)

// read runs fn in one transaction of the read-only pool: its statements see
// one snapshot.
func (s *Store) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
	}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return s.readErr(op, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return s.readErr(op, err)
	}
	return nil
}

// readErr wraps the error of a read, which fails with ErrClosed once the
// store is closing.
func (s *Store) readErr(op string, err error) error {
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return err
	}
	select {
	case <-s.closing:
		return store.ErrClosed
	default:
	}
	return fmt.Errorf("%s: %w", op, err)
}

// fromMs converts Unix ms to a time; 0 (never) is the zero time.
func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// fromNullMs is fromMs of a nullable column.
func fromNullMs(ms sql.NullInt64) time.Time {
	return fromMs(ms.Int64)
}

// fromClaim converts a lane's last_claimed_at (a claim order in Unix
// microseconds, see cache.nextClaim) to a time; 0 is the zero time.
func fromClaim(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
