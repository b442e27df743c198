package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// Queues and partitions as the control plane sees them (see inspect.go).
const (
	// A page of queues ($2 tenant, $3 namespace, $4 task, $5 limit, $6
	// offset), newest first, each with its partitions' figures summed.
	sqlQueueList = `WITH qs AS MATERIALIZED (
			SELECT id, uuid, name, namespace, task, created_at FROM queues
			WHERE tenant = $2 AND ($3 = '' OR namespace = $3) AND ($4 = '' OR task = $4)
			ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6)
		SELECT qs.uuid, qs.name, qs.namespace, qs.task, qs.created_at, count(pf.total),
			COALESCE(sum(pf.total), 0), COALESCE(sum(pf.pending), 0), COALESCE(sum(pf.processing), 0),
			COALESCE(sum(pf.completed), 0), COALESCE(sum(pf.dead), 0), ` + sqlQueueOldestUnread + `
		FROM qs LEFT JOIN LATERAL (
			SELECT ` + sqlPartitionColumnsAs + `, ` + sqlDeadLetterCount + ` AS dead
			FROM partitions p ` + sqlPartitionFigures + `
			WHERE p.queue_id = qs.id) pf ON true
		GROUP BY qs.id, qs.uuid, qs.name, qs.namespace, qs.task, qs.created_at
		ORDER BY qs.created_at DESC, qs.id DESC`
	// The createdAt of the oldest message some lane of queue qs has still
	// to read (one lookup per lane behind), or, while no group reads the
	// queue, of its oldest message (one per partition): the rule of the
	// queue gauges (stats_queues.go).
	sqlQueueOldestUnread = `CASE WHEN EXISTS (SELECT 1 FROM consumer_groups cg WHERE cg.queue_id = qs.id)
		THEN (SELECT min(` + sqlOldestUnread + `) FROM partitions p JOIN lanes l ON l.partition_id = p.id
			WHERE p.queue_id = qs.id AND p.last_offset > greatest(l.cursor, p.cleared_offset))
		ELSE (SELECT min((SELECT m.created_at FROM messages m
				WHERE m.partition_id = p.id AND m.seq > p.cleared_offset ORDER BY m.seq LIMIT 1))
			FROM partitions p WHERE p.queue_id = qs.id AND p.last_offset > p.cleared_offset) END`
	sqlQueueCount = `SELECT count(*) FROM queues
		WHERE tenant = $1 AND ($2 = '' OR namespace = $2) AND ($3 = '' OR task = $3)`

	// One queue ($2 tenant, $3 name) with its figures over all partitions.
	sqlQueueGet = `SELECT q.id, q.uuid, q.name, q.namespace, q.task, q.created_at, count(pf.total),
			COALESCE(sum(pf.total), 0), COALESCE(sum(pf.pending), 0), COALESCE(sum(pf.processing), 0),
			COALESCE(sum(pf.completed), 0), COALESCE(sum(pf.dead), 0), q.options
		FROM queues q LEFT JOIN LATERAL (
			SELECT ` + sqlPartitionColumnsAs + `, ` + sqlDeadLetterCount + ` AS dead
			FROM partitions p ` + sqlPartitionFigures + `
			WHERE p.queue_id = q.id) pf ON true
		WHERE q.tenant = $2 AND q.name = $3
		GROUP BY q.id`

	// A page of partitions (chosen by the CTE ps, which the caller
	// supplies) with their figures, oldest message and queue name.
	sqlPartitionPage = `SELECT q.name, p.uuid, p.name, p.created_at, p.last_message_at,
			CASE WHEN ` + sqlPartitionTotal + ` > 0 THEN p.last_message_at ELSE 0 END,
			` + sqlPartitionColumns + `, ` + sqlDeadLetterCount + `, COALESCE(f.claimed, 0),
			CASE WHEN ` + sqlPartitionTotal + ` > 0 THEN (SELECT m.created_at FROM messages m
				WHERE m.partition_id = p.id AND m.seq > p.cleared_offset ORDER BY m.seq LIMIT 1) END
		FROM ps JOIN partitions p ON p.id = ps.id JOIN queues q ON q.id = p.queue_id
		` + sqlPartitionFigures + `
		ORDER BY ps.ord`
	// ps: a page of one queue's partitions by name ($2 queue id, $3
	// limit, $4 offset).
	sqlPartitionsOfQueue = `WITH ps AS MATERIALIZED (
			SELECT id, row_number() OVER (ORDER BY name) AS ord FROM partitions
			WHERE queue_id = $2 ORDER BY name LIMIT $3 OFFSET $4) ` + sqlPartitionPage
	// ps: a page of all a tenant's partitions by queue then partition name
	// ($2 tenant, $3 limit, $4 offset).
	sqlPartitionsOfTenant = `WITH ps AS MATERIALIZED (
			SELECT p.id, row_number() OVER (ORDER BY q.name, p.name) AS ord
			FROM queues q JOIN partitions p ON p.queue_id = q.id
			WHERE q.tenant = $2 ORDER BY q.name, p.name LIMIT $3 OFFSET $4) ` + sqlPartitionPage
	sqlPartitionCountOfQueue  = `SELECT count(*) FROM partitions WHERE queue_id = $1`
	sqlPartitionCountOfTenant = `SELECT count(*) FROM queues q JOIN partitions p ON p.queue_id = q.id
		WHERE q.tenant = $1`
	sqlQueueIDByName = `SELECT id FROM queues WHERE tenant = $1 AND name = $2`

	// A page of namespaces (KEY is replaced by the column) and their
	// queues' figures ($2 tenant, $3 limit, $4 offset).
	sqlRollupTemplate = `WITH ks AS MATERIALIZED (
			SELECT DISTINCT KEY AS k FROM queues WHERE tenant = $2 AND KEY <> '' ORDER BY 1 LIMIT $3 OFFSET $4)
		SELECT ks.k, count(DISTINCT q.id), count(pf.total),
			COALESCE(sum(pf.total), 0), COALESCE(sum(pf.pending), 0), COALESCE(sum(pf.processing), 0),
			COALESCE(sum(pf.completed), 0)
		FROM ks JOIN queues q ON q.tenant = $2 AND q.KEY = ks.k
		LEFT JOIN LATERAL (
			SELECT ` + sqlPartitionColumnsAs + ` FROM partitions p ` + sqlPartitionFigures + `
			WHERE p.queue_id = q.id) pf ON true
		GROUP BY ks.k ORDER BY ks.k`
	sqlRollupCountTemplate = `SELECT count(DISTINCT KEY) FROM queues WHERE tenant = $1 AND KEY <> ''`

	// A tenant's totals ($1 tenant).
	sqlOverviewQueues = `SELECT count(*), count(DISTINCT NULLIF(namespace, '')), count(DISTINCT NULLIF(task, ''))
		FROM queues WHERE tenant = $1`
	// ($2 tenant)
	sqlOverviewMessages = `SELECT count(*), COALESCE(sum(pf.total), 0), COALESCE(sum(pf.pending), 0),
			COALESCE(sum(pf.processing), 0), COALESCE(sum(pf.completed), 0), COALESCE(sum(pf.dead), 0)
		FROM queues q JOIN LATERAL (
			SELECT ` + sqlPartitionColumnsAs + `, ` + sqlDeadLetterCount + ` AS dead
			FROM partitions p ` + sqlPartitionFigures + `
			WHERE p.queue_id = q.id) pf ON true
		WHERE q.tenant = $2`
	// Every lane of the tenant ($2) with unread messages: how many, and
	// since when.
	sqlOverviewLags = `SELECT x.lag, ` + sqlOldestUnread + `
		FROM queues q JOIN partitions p ON p.queue_id = q.id JOIN lanes l ON l.partition_id = p.id
		` + sqlLaneFigures + `
		WHERE q.tenant = $2 AND p.last_offset > greatest(l.cursor, p.cleared_offset) AND x.lag > 0`
)

// sqlPartitionColumnsAs are sqlPartitionColumns with the names the sums use.
const sqlPartitionColumnsAs = sqlPartitionTotal + ` AS total,
		COALESCE(f.pending, ` + sqlPartitionTotal + `) AS pending, COALESCE(f.processing, 0) AS processing,
		COALESCE(f.completed, 0) AS completed`

// rollupColumn is the queues column each rollup groups by.
var rollupColumn = map[store.RollupKey]string{store.RollupNamespace: "namespace", store.RollupTask: "task"}

// QueueList lists a page of a tenant's queues, newest first.
func (s *Store) QueueList(ctx context.Context, p *store.QueueListParams) (*store.QueueListResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueListResult{}
	err := s.inReadTx(ctx, "list queues", func(t *txn) error {
		out.Queues = out.Queues[:0]
		rows, _ := t.tx.Query(t.ctx, sqlQueueList, p.Now.UnixMilli(), tenant, p.Namespace, p.Task,
			store.PageLimit(p.Limit), max(p.Offset, 0))
		var q store.QueueInfo
		var created int64
		var oldest *int64
		m := &q.Messages
		if _, err := pgx.ForEachRow(rows, []any{&q.ID, &q.Name, &q.Namespace, &q.Task, &created, &q.Partitions,
			&m.Total, &m.Pending, &m.Processing, &m.Completed, &m.DeadLetter, &oldest}, func() error {
			q.CreatedAt, q.OldestUnread = fromMs(created), fromMsPtr(oldest)
			out.Queues = append(out.Queues, q)
			return nil
		}); err != nil {
			return err
		}
		return t.tx.QueryRow(t.ctx, sqlQueueCount, tenant, p.Namespace, p.Task).Scan(&out.Total)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueGet describes one queue and a page of its partitions.
func (s *Store) QueueGet(ctx context.Context, p *store.QueueGetParams) (*store.QueueDetail, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueDetail{}
	err := s.inReadTx(ctx, "describe queue", func(t *txn) error {
		var id, created int64
		var opts []byte
		q := &out.Queue
		m := &q.Messages
		err := t.tx.QueryRow(t.ctx, sqlQueueGet, p.Now.UnixMilli(), tenant, p.Name).Scan(&id, &q.ID, &q.Name,
			&q.Namespace, &q.Task, &created, &q.Partitions, &m.Total, &m.Pending, &m.Processing, &m.Completed,
			&m.DeadLetter, &opts)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		q.CreatedAt = fromMs(created)
		if out.Options, err = store.DecodeQueueOptions(opts); err != nil {
			return err
		}
		out.Partitions, err = t.partitionPage(sqlPartitionsOfQueue, p.Now.UnixMilli(), id, store.PageLimit(p.Limit),
			max(p.Offset, 0))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PartitionList lists a page of partitions of one queue or of all.
func (s *Store) PartitionList(ctx context.Context, p *store.PartitionListParams) (*store.PartitionListResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.PartitionListResult{}
	err := s.inReadTx(ctx, "list partitions", func(t *txn) error {
		limit, offset := store.PageLimit(p.Limit), max(p.Offset, 0)
		if p.Queue == "" {
			var err error
			if out.Partitions, err = t.partitionPage(sqlPartitionsOfTenant, p.Now.UnixMilli(), tenant, limit,
				offset); err != nil {
				return err
			}
			return t.tx.QueryRow(t.ctx, sqlPartitionCountOfTenant, tenant).Scan(&out.Total)
		}
		var id int64
		err := t.tx.QueryRow(t.ctx, sqlQueueIDByName, tenant, p.Queue).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		if out.Partitions, err = t.partitionPage(sqlPartitionsOfQueue, p.Now.UnixMilli(), id, limit, offset); err != nil {
			return err
		}
		return t.tx.QueryRow(t.ctx, sqlPartitionCountOfQueue, id).Scan(&out.Total)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// partitionPage runs one of the partition page statements.
func (t *txn) partitionPage(sql string, args ...any) ([]store.PartitionInfo, error) {
	rows, _ := t.tx.Query(t.ctx, sql, args...)
	var out []store.PartitionInfo
	var pi store.PartitionInfo
	var created, lastMessage, newest, claimed int64
	var oldest *int64
	m := &pi.Messages
	_, err := pgx.ForEachRow(rows, []any{&pi.Queue, &pi.ID, &pi.Name, &created, &lastMessage, &newest,
		&m.Total, &m.Pending, &m.Processing, &m.Completed, &m.DeadLetter, &claimed, &oldest}, func() error {
		pi.CreatedAt, pi.NewestMessage, pi.OldestMessage = fromMs(created), fromMs(newest), fromMsPtr(oldest)
		pi.LastActivity = later(fromMs(lastMessage), fromClaim(claimed))
		out = append(out, pi)
		return nil
	})
	return out, err
}

// QueueRollup sums up a page of namespaces or tasks.
func (s *Store) QueueRollup(ctx context.Context, p *store.QueueRollupParams) (*store.QueueRollupResult, error) {
	col, ok := rollupColumn[p.By]
	if !ok {
		return nil, fmt.Errorf("postgres: rollup by %d: no such key", p.By)
	}
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueRollupResult{}
	err := s.inReadTx(ctx, "sum up queues", func(t *txn) error {
		out.Rollups = out.Rollups[:0]
		rows, _ := t.tx.Query(t.ctx, strings.ReplaceAll(sqlRollupTemplate, "KEY", col), p.Now.UnixMilli(), tenant,
			store.PageLimit(p.Limit), max(p.Offset, 0))
		var r store.QueueRollup
		m := &r.Messages
		if _, err := pgx.ForEachRow(rows, []any{&r.Key, &r.Queues, &r.Partitions, &m.Total, &m.Pending,
			&m.Processing, &m.Completed}, func() error {
			out.Rollups = append(out.Rollups, r)
			return nil
		}); err != nil {
			return err
		}
		return t.tx.QueryRow(t.ctx, strings.ReplaceAll(sqlRollupCountTemplate, "KEY", col), tenant).Scan(&out.Total)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueOverview sums up a tenant's queues.
func (s *Store) QueueOverview(ctx context.Context, p *store.QueueOverviewParams) (*store.QueueOverview, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueOverview{}
	err := s.inReadTx(ctx, "overview", func(t *txn) error {
		now := p.Now.UnixMilli()
		if err := t.tx.QueryRow(t.ctx, sqlOverviewQueues, tenant).Scan(&out.Queues, &out.Namespaces,
			&out.Tasks); err != nil {
			return err
		}
		m := &out.Messages
		if err := t.tx.QueryRow(t.ctx, sqlOverviewMessages, now, tenant).Scan(&out.Partitions, &m.Total,
			&m.Pending, &m.Processing, &m.Completed, &m.DeadLetter); err != nil {
			return err
		}
		out.Lags = out.Lags[:0]
		rows, _ := t.tx.Query(t.ctx, sqlOverviewLags, now, tenant)
		var lag store.LaneLag
		var oldest *int64
		_, err := pgx.ForEachRow(rows, []any{&lag.Messages, &oldest}, func() error {
			lag.OldestUnread = fromMsPtr(oldest)
			out.Lags = append(out.Lags, lag)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
