package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/statsql"
)

// Live per-queue figures for the status routes and the Prometheus
// collector, from the same offsets and cursors as the control plane (see
// inspect.go).
const (
	// Every queue of every tenant ($1 now) with its pending, processing
	// and dead-letter figures over its partitions.
	sqlStatsQueueFigures = `SELECT q.id, q.tenant, q.name, count(pf.total), COALESCE(sum(pf.pending), 0)::bigint,
			COALESCE(sum(pf.processing), 0)::bigint, COALESCE(sum(pf.dead), 0)::bigint
		FROM queues q LEFT JOIN LATERAL (
			SELECT ` + sqlPartitionColumnsAs + `, ` + sqlDeadLetterCount + ` AS dead
			FROM partitions p ` + sqlPartitionFigures + `
			WHERE p.queue_id = q.id) pf ON true
		GROUP BY q.id`
	// The unread messages of the group furthest behind on queue $2.
	sqlStatsGroupLag = `SELECT COALESCE(max(lag), 0)::bigint FROM (SELECT sum(x.lag) AS lag
		FROM partitions p JOIN lanes l ON l.partition_id = p.id ` + sqlLaneFigures + `
		WHERE p.queue_id = $2 GROUP BY l.consumer_group) g`
	// The oldest message some lane of queue $1 has still to read: one
	// lookup per lane behind.
	sqlStatsOldestUnread = `SELECT min(` + sqlOldestUnread + `)
		FROM partitions p JOIN lanes l ON l.partition_id = p.id
		WHERE p.queue_id = $1 AND p.last_offset > greatest(l.cursor, p.cleared_offset)`
	// Some group has joined the queue (and so has a lane on every
	// partition).
	sqlStatsHasLanes = `SELECT EXISTS (SELECT 1 FROM consumer_groups WHERE queue_id = $1)`
	// The oldest message of queue $1 (when no group reads it): one lookup
	// per partition.
	sqlStatsOldestMessage = `SELECT min((SELECT m.created_at FROM messages m
			WHERE m.partition_id = p.id AND m.seq > p.cleared_offset ORDER BY m.seq LIMIT 1))
		FROM partitions p WHERE p.queue_id = $1 AND p.last_offset > p.cleared_offset`

	// Live leases of a tenant ($2), or of one queue ($3), along lanes_lease.
	sqlStatsLeases = `SELECT count(DISTINCT l.lease_id), count(*)
		FROM lanes l JOIN partitions p ON p.id = l.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE l.lease_id IS NOT NULL AND l.lease_expires_at > $1 AND q.tenant = $2 AND ($3 = '' OR q.name = $3)`
)

// StatsLeases counts live leases.
func (s *Store) StatsLeases(ctx context.Context, p *store.StatsLeasesParams) (*store.LeaseSummary, error) {
	out := &store.LeaseSummary{}
	err := s.inReadTx(ctx, "count leases", func(t *txn) error {
		return t.tx.QueryRow(t.ctx, sqlStatsLeases, p.Now.UnixMilli(), store.TenantOrDefault(p.Tenant),
			p.Queue).Scan(&out.Leases, &out.Lanes)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsQueueGauges reports the deepest queues of every tenant: every
// queue's figures are summed (as QueueList does), then the lags and the
// oldest unread message are looked up for the deepest p.Limit only.
func (s *Store) StatsQueueGauges(ctx context.Context, p *store.StatsQueueGaugesParams) (*store.QueueGauges, error) {
	limit := store.PageLimit(p.Limit)
	now := p.Now.UnixMilli()
	out := &store.QueueGauges{}
	err := s.inReadTx(ctx, "queue gauges", func(t *txn) error {
		*out = store.QueueGauges{}
		rows, _ := t.tx.Query(t.ctx, sqlStatsQueueFigures, now)
		var all []statsql.GaugeRow
		var g statsql.GaugeRow
		if _, err := pgx.ForEachRow(rows, []any{&g.ID, &g.Tenant, &g.Queue, &g.Partitions, &g.Pending,
			&g.Processing, &g.DeadLetter}, func() error {
			all = append(all, g)
			return nil
		}); err != nil {
			return err
		}
		top := statsql.RankGauges(out, all, limit)
		// Three lookups per queue, sent together.
		var b pgx.Batch
		for _, g := range top {
			b.Queue(sqlStatsGroupLag, now, g.ID)
			b.Queue(sqlStatsHasLanes, g.ID)
			b.Queue(sqlStatsOldestUnread, g.ID)
			b.Queue(sqlStatsOldestMessage, g.ID)
		}
		res := t.tx.SendBatch(t.ctx, &b)
		defer res.Close()
		for _, g := range top {
			var lanes bool
			var unread, oldest *int64
			if err := res.QueryRow().Scan(&g.GroupLag); err != nil {
				return err
			}
			if err := res.QueryRow().Scan(&lanes); err != nil {
				return err
			}
			if err := res.QueryRow().Scan(&unread); err != nil {
				return err
			}
			if err := res.QueryRow().Scan(&oldest); err != nil {
				return err
			}
			if lanes {
				g.OldestUnread = fromMsPtr(unread)
			} else {
				g.OldestUnread = fromMsPtr(oldest)
			}
			out.Queues = append(out.Queues, g.QueueGauge)
		}
		return res.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
