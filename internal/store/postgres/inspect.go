package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// The control plane's reads: figures of partitions and lanes from the
// partitions' offsets and the lanes' cursors, plus at most one index lookup
// per partition or lane (its oldest message, its oldest unread message).
// Nothing here reads messages in bulk.
//
// Offsets have no gaps above a partition's cleared offset but those of the
// messages deleted on their own, which message_gaps lists (partitions.gaps
// counts them; migration 011): a difference of offsets less the gaps
// between them is a number of messages. A partition without gaps (nearly
// every one) skips the look-up.
//
// Every statement takes now (Unix ms) as $1: a lease counts as live when it
// expires after it.

// sqlLaneFigures are one lane's figures: x.lag (unread), x.consumed
// (committed and still held) and x.proc (under its live lease), for l a
// lanes row and p its partition; xg counts the gaps after its cursor, and
// those within its leased batch.
const sqlLaneFigures = `CROSS JOIN LATERAL (SELECT count(*) AS above, count(*) FILTER (WHERE mg.seq <= l.batch_end) AS leased
			FROM message_gaps mg WHERE p.gaps > 0 AND mg.partition_id = p.id
			  AND mg.seq > greatest(l.cursor, p.cleared_offset)) xg
		CROSS JOIN LATERAL (SELECT
			p.last_offset - greatest(l.cursor, p.cleared_offset) - xg.above AS lag,
			greatest(l.cursor, p.cleared_offset) - p.cleared_offset - (p.gaps - xg.above) AS consumed,
			CASE WHEN l.lease_id IS NOT NULL AND l.lease_expires_at > $1
				THEN greatest(0, least(l.batch_end, p.last_offset) - greatest(l.cursor, p.cleared_offset) - xg.leased)
				ELSE 0 END AS proc) x`

// sqlOldestUnread is the createdAt of the first message after l's cursor.
const sqlOldestUnread = `(SELECT m.created_at FROM messages m
			WHERE m.partition_id = p.id AND m.seq > greatest(l.cursor, p.cleared_offset) ORDER BY m.seq LIMIT 1)`

// sqlPartitionFigures joins f, the figures of partition p over its lanes
// (Queen's rule: the largest among groups): f.pending, f.processing,
// f.completed (NULL when no group reads it) and f.claimed (its last claim).
const sqlPartitionFigures = `LEFT JOIN LATERAL (
		SELECT max(x.lag - x.proc) AS pending, max(x.proc) AS processing, max(x.consumed) AS completed,
			max(l.last_claimed_at) AS claimed
		FROM lanes l ` + sqlLaneFigures + `
		WHERE l.partition_id = p.id) f ON true`

// sqlPartitionColumns are a partition's figures as columns, after
// sqlPartitionFigures: total, pending, processing, completed.
const sqlPartitionColumns = sqlPartitionTotal + `,
		COALESCE(f.pending, ` + sqlPartitionTotal + `), COALESCE(f.processing, 0), COALESCE(f.completed, 0)`

// sqlPartitionTotal is how many messages partition p holds.
const sqlPartitionTotal = `(p.last_offset - p.cleared_offset - p.gaps)`

// sqlDeadLetterCount counts the dead letters of partition p's messages.
const sqlDeadLetterCount = `(SELECT count(*) FROM dead_letters d
		WHERE d.partition_id = p.id AND d.message_seq > p.cleared_offset)`

// inReadTx runs fn in a read-only REPEATABLE READ transaction, so that the
// statements of one answer (a page and its total) see one snapshot.
func (s *Store) inReadTx(ctx context.Context, op string, fn func(t *txn) error) error {
	if s.closed() {
		return store.ErrClosed
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return wrapErr("postgres: "+op, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(&txn{ctx: ctx, tx: tx, s: s}); err != nil {
		var nf *store.NotFoundError
		if errors.As(err, &nf) {
			return err
		}
		if s.closed() {
			return store.ErrClosed
		}
		return wrapErr("postgres: "+op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return wrapErr("postgres: "+op, err)
	}
	return nil
}

// fromMs converts Unix ms to a time; 0 (never) is the zero time.
func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// fromMsPtr is fromMs of a nullable column.
func fromMsPtr(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return fromMs(*ms)
}

// fromClaim converts a lane's last_claimed_at (a claim order in Unix
// microseconds, see nextClaim) to a time; 0 (never) is the zero time.
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
