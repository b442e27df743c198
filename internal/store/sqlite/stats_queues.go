package sqlite

import (
	"context"
	"database/sql"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/statsql"
)

// Live per-queue figures for the status routes and the Prometheus
// collector, from the same counters as the control plane (see inspect.go).
const (
	// Every queue of every tenant (?1 now) with its pending, processing and
	// dead-letter figures over its partitions.
	sqlStatsQueueFigures = `SELECT q.id, q.tenant, q.name, count(p.id),
			COALESCE(sum(` + sqlPartPending + `), 0), COALESCE(sum(` + sqlPartProc + `), 0),
			COALESCE(sum(` + sqlPartDead + `), 0)
		FROM queues q LEFT JOIN partitions p ON p.queue_id = q.id GROUP BY q.id`
	// The unread messages of the group furthest behind on queue ?2.
	sqlStatsGroupLag = `SELECT COALESCE(max(lag), 0) FROM (SELECT sum(` + sqlLag + `) AS lag
		FROM partitions p JOIN lanes l ON l.partition_id = p.id WHERE p.queue_id = ?2 GROUP BY l.consumer_group)`
	// The oldest message some lane of queue ?2 has still to read: one
	// lookup per lane behind.
	sqlStatsOldestUnread = `SELECT min(` + sqlOldestUnread + `)
		FROM partitions p JOIN lanes l ON l.partition_id = p.id
		WHERE p.queue_id = ?2 AND l.cursor < p.last_offset`
	// Some group has joined the queue (and so has a lane on every
	// partition).
	sqlStatsHasLanes = `SELECT EXISTS (SELECT 1 FROM consumer_groups WHERE queue_id = ?)`
	// The oldest message of queue ?1 (when no group reads it): one lookup
	// per partition.
	sqlStatsOldestMessage = `SELECT min(` + sqlPartOldest + `) FROM partitions p WHERE p.queue_id = ?1`

	// Live leases of a tenant (?2), or of one queue (?3), along lanes_lease.
	sqlStatsLeases = `SELECT count(DISTINCT l.lease_id), count(*)
		FROM lanes l JOIN partitions p ON p.id = l.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE l.lease_id IS NOT NULL AND l.lease_expires_at > ?1 AND q.tenant = ?2 AND (?3 = '' OR q.name = ?3)`
)

// StatsLeases counts live leases.
func (s *Store) StatsLeases(ctx context.Context, p *store.StatsLeasesParams) (*store.LeaseSummary, error) {
	out := &store.LeaseSummary{}
	err := s.read(ctx, "count leases", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, sqlStatsLeases, p.Now.UnixMilli(), store.TenantOrDefault(p.Tenant),
			p.Queue).Scan(&out.Leases, &out.Lanes)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsQueueGauges reports the deepest queues of every tenant: every
// queue's counters are summed (as QueueList does), then the lags and the
// oldest unread message are looked up for the deepest p.Limit only.
func (s *Store) StatsQueueGauges(ctx context.Context, p *store.StatsQueueGaugesParams) (*store.QueueGauges, error) {
	limit := store.PageLimit(p.Limit)
	now := p.Now.UnixMilli()
	out := &store.QueueGauges{}
	err := s.read(ctx, "queue gauges", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, sqlStatsQueueFigures, now)
		if err != nil {
			return err
		}
		var all []statsql.GaugeRow
		for rows.Next() {
			var g statsql.GaugeRow
			if err := rows.Scan(&g.ID, &g.Tenant, &g.Queue, &g.Partitions, &g.Pending, &g.Processing,
				&g.DeadLetter); err != nil {
				rows.Close()
				return err
			}
			all = append(all, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, g := range statsql.RankGauges(out, all, limit) {
			if err := tx.QueryRowContext(ctx, sqlStatsGroupLag, now, g.ID).Scan(&g.GroupLag); err != nil {
				return err
			}
			var lanes bool
			if err := tx.QueryRowContext(ctx, sqlStatsHasLanes, g.ID).Scan(&lanes); err != nil {
				return err
			}
			var oldest sql.NullInt64
			if lanes {
				err = tx.QueryRowContext(ctx, sqlStatsOldestUnread, now, g.ID).Scan(&oldest)
			} else {
				err = tx.QueryRowContext(ctx, sqlStatsOldestMessage, g.ID).Scan(&oldest)
			}
			if err != nil {
				return err
			}
			g.OldestUnread = fromNullMs(oldest)
			out.Queues = append(out.Queues, g.QueueGauge)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
