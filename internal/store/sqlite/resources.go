package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/queen-go/queen/internal/store"
)

// Queues and partitions as the control plane sees them (see inspect.go).
const (
	// A page of queues (?2 tenant, ?3 namespace, ?4 task, ?5 limit, ?6
	// offset), newest first, each with its partitions' figures summed.
	sqlInspectQueueList = `WITH qs AS MATERIALIZED (
			SELECT id, uuid, name, namespace, task, created_at FROM queues
			WHERE tenant = ?2 AND (?3 = '' OR namespace = ?3) AND (?4 = '' OR task = ?4)
			ORDER BY created_at DESC, id DESC LIMIT ?5 OFFSET ?6)
		SELECT qs.uuid, qs.name, qs.namespace, qs.task, qs.created_at, ` + sqlPartSums + `,
			COALESCE(sum(` + sqlPartDead + `), 0), ` + sqlQueueOldestUnread + `
		FROM qs LEFT JOIN partitions p ON p.queue_id = qs.id
		GROUP BY qs.id ORDER BY qs.created_at DESC, qs.id DESC`
	// The createdAt of the oldest message some lane of queue qs has still
	// to read (one lookup per lane behind), or, while no group reads the
	// queue, of its oldest message (one per partition): the rule of the
	// queue gauges (stats_queues.go).
	sqlQueueOldestUnread = `CASE WHEN EXISTS (SELECT 1 FROM consumer_groups cg WHERE cg.queue_id = qs.id)
		THEN (SELECT min(` + sqlOldestUnread + `) FROM partitions p JOIN lanes l ON l.partition_id = p.id
			WHERE p.queue_id = qs.id AND l.cursor < p.last_offset)
		ELSE (SELECT min(` + sqlPartOldest + `) FROM partitions p WHERE p.queue_id = qs.id) END`
	sqlInspectQueueCount = `SELECT count(*) FROM queues
		WHERE tenant = ?1 AND (?2 = '' OR namespace = ?2) AND (?3 = '' OR task = ?3)`
	// One queue (?2 tenant, ?3 name) with its figures over all partitions.
	sqlInspectQueueGet = `SELECT q.id, q.uuid, q.name, q.namespace, q.task, q.created_at, ` + sqlPartSums + `,
			COALESCE(sum(` + sqlPartDead + `), 0), q.options
		FROM queues q LEFT JOIN partitions p ON p.queue_id = q.id
		WHERE q.tenant = ?2 AND q.name = ?3 GROUP BY q.id`
	sqlInspectQueueID = `SELECT id FROM queues WHERE tenant = ?1 AND name = ?2`

	// A page of partitions (the CTE ps, supplied by the caller, lists
	// their ids in order) with their figures.
	sqlInspectPartitionPage = `SELECT q.name, p.uuid, p.name, p.created_at, p.last_message_at,
			CASE WHEN p.last_offset > p.cleared_offset AND p.message_count > 0 THEN p.last_message_at ELSE 0 END,
			` + sqlPartTotal + `, ` + sqlPartPending + `, ` + sqlPartProc + `, ` + sqlPartCompleted + `,
			` + sqlPartDead + `, ` + sqlPartClaimed + `, ` + sqlPartOldest + `
		FROM ps JOIN partitions p ON p.id = ps.id JOIN queues q ON q.id = p.queue_id
		ORDER BY ps.ord`
	// ps: a page of one queue's partitions by name (?2 queue id, ?3
	// limit, ?4 offset), along the index on (queue_id, name).
	sqlInspectPartitionsOfQueue = `WITH ps AS MATERIALIZED (
			SELECT id, row_number() OVER (ORDER BY name) AS ord FROM partitions
			WHERE queue_id = ?2 ORDER BY name LIMIT ?3 OFFSET ?4) ` + sqlInspectPartitionPage
	// ps: a page of a tenant's partitions by queue then partition name (?2
	// tenant, ?3 limit, ?4 offset).
	sqlInspectPartitionsOfTenant = `WITH ps AS MATERIALIZED (
			SELECT p.id, row_number() OVER (ORDER BY q.name, p.name) AS ord
			FROM queues q JOIN partitions p ON p.queue_id = q.id
			WHERE q.tenant = ?2 ORDER BY q.name, p.name LIMIT ?3 OFFSET ?4) ` + sqlInspectPartitionPage
	sqlInspectPartitionCountOfQueue  = `SELECT count(*) FROM partitions WHERE queue_id = ?1`
	sqlInspectPartitionCountOfTenant = `SELECT count(*) FROM queues q JOIN partitions p ON p.queue_id = q.id
		WHERE q.tenant = ?1`

	// A page of namespaces (KEY is replaced by the column) and their
	// queues' figures (?2 tenant, ?3 limit, ?4 offset).
	sqlInspectRollup = `WITH ks AS MATERIALIZED (
			SELECT DISTINCT KEY AS k FROM queues WHERE tenant = ?2 AND KEY <> '' ORDER BY 1 LIMIT ?3 OFFSET ?4)
		SELECT ks.k, count(DISTINCT q.id), ` + sqlPartSums + `
		FROM ks JOIN queues q ON q.tenant = ?2 AND q.KEY = ks.k
		LEFT JOIN partitions p ON p.queue_id = q.id
		GROUP BY ks.k ORDER BY ks.k`
	sqlInspectRollupCount = `SELECT count(DISTINCT KEY) FROM queues WHERE tenant = ?1 AND KEY <> ''`

	// A tenant's totals.
	sqlInspectOverviewQueues = `SELECT count(*), count(DISTINCT NULLIF(namespace, '')), count(DISTINCT NULLIF(task, ''))
		FROM queues WHERE tenant = ?1`
	sqlInspectOverviewMessages = `SELECT ` + sqlPartSums + `, COALESCE(sum(` + sqlPartDead + `), 0)
		FROM queues q JOIN partitions p ON p.queue_id = q.id WHERE q.tenant = ?2`
	// Every lane of the tenant (?2) with unread messages.
	sqlInspectOverviewLags = `SELECT ` + sqlLag + `, ` + sqlOldestUnread + `
		FROM queues q JOIN partitions p ON p.queue_id = q.id JOIN lanes l ON l.partition_id = p.id
		WHERE q.tenant = ?2 AND l.cursor < p.last_offset AND ` + sqlLag + ` > 0`
)

// rollupColumn is the queues column each rollup groups by.
var rollupColumn = map[store.RollupKey]string{store.RollupNamespace: "namespace", store.RollupTask: "task"}

// QueueList lists a page of a tenant's queues, newest first.
func (s *Store) QueueList(ctx context.Context, p *store.QueueListParams) (*store.QueueListResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueListResult{}
	err := s.read(ctx, "list queues", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, sqlInspectQueueList, p.Now.UnixMilli(), tenant, p.Namespace, p.Task,
			store.PageLimit(p.Limit), max(p.Offset, 0))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q store.QueueInfo
			var created int64
			var oldest sql.NullInt64
			m := &q.Messages
			if err := rows.Scan(&q.ID, &q.Name, &q.Namespace, &q.Task, &created, &q.Partitions, &m.Total,
				&m.Pending, &m.Processing, &m.Completed, &m.DeadLetter, &oldest); err != nil {
				return err
			}
			q.CreatedAt, q.OldestUnread = fromMs(created), fromNullMs(oldest)
			out.Queues = append(out.Queues, q)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, sqlInspectQueueCount, tenant, p.Namespace, p.Task).Scan(&out.Total)
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
	err := s.read(ctx, "describe queue", func(tx *sql.Tx) error {
		var id, created int64
		var opts string
		q := &out.Queue
		m := &q.Messages
		err := tx.QueryRowContext(ctx, sqlInspectQueueGet, p.Now.UnixMilli(), tenant, p.Name).Scan(&id, &q.ID,
			&q.Name, &q.Namespace, &q.Task, &created, &q.Partitions, &m.Total, &m.Pending, &m.Processing,
			&m.Completed, &m.DeadLetter, &opts)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		q.CreatedAt = fromMs(created)
		if out.Options, err = store.DecodeQueueOptions([]byte(opts)); err != nil {
			return err
		}
		out.Partitions, err = partitionPage(ctx, tx, sqlInspectPartitionsOfQueue, p.Now.UnixMilli(), id,
			store.PageLimit(p.Limit), max(p.Offset, 0))
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
	err := s.read(ctx, "list partitions", func(tx *sql.Tx) error {
		limit, offset := store.PageLimit(p.Limit), max(p.Offset, 0)
		var err error
		if p.Queue == "" {
			if out.Partitions, err = partitionPage(ctx, tx, sqlInspectPartitionsOfTenant, p.Now.UnixMilli(), tenant,
				limit, offset); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, sqlInspectPartitionCountOfTenant, tenant).Scan(&out.Total)
		}
		var id int64
		err = tx.QueryRowContext(ctx, sqlInspectQueueID, tenant, p.Queue).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		if out.Partitions, err = partitionPage(ctx, tx, sqlInspectPartitionsOfQueue, p.Now.UnixMilli(), id, limit,
			offset); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, sqlInspectPartitionCountOfQueue, id).Scan(&out.Total)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// partitionPage runs one of the partition page statements.
func partitionPage(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]store.PartitionInfo, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.PartitionInfo
	for rows.Next() {
		var pi store.PartitionInfo
		var created, lastMessage, newest, claimed int64
		var oldest sql.NullInt64
		m := &pi.Messages
		if err := rows.Scan(&pi.Queue, &pi.ID, &pi.Name, &created, &lastMessage, &newest, &m.Total, &m.Pending,
			&m.Processing, &m.Completed, &m.DeadLetter, &claimed, &oldest); err != nil {
			return nil, err
		}
		pi.CreatedAt, pi.NewestMessage, pi.OldestMessage = fromMs(created), fromMs(newest), fromNullMs(oldest)
		pi.LastActivity = later(fromMs(lastMessage), fromClaim(claimed))
		out = append(out, pi)
	}
	return out, rows.Err()
}

// QueueRollup sums up a page of namespaces or tasks.
func (s *Store) QueueRollup(ctx context.Context, p *store.QueueRollupParams) (*store.QueueRollupResult, error) {
	col, ok := rollupColumn[p.By]
	if !ok {
		return nil, fmt.Errorf("sqlite: rollup by %d: no such key", p.By)
	}
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.QueueRollupResult{}
	err := s.read(ctx, "sum up queues", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, strings.ReplaceAll(sqlInspectRollup, "KEY", col), p.Now.UnixMilli(),
			tenant, store.PageLimit(p.Limit), max(p.Offset, 0))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r store.QueueRollup
			m := &r.Messages
			if err := rows.Scan(&r.Key, &r.Queues, &r.Partitions, &m.Total, &m.Pending, &m.Processing,
				&m.Completed); err != nil {
				return err
			}
			out.Rollups = append(out.Rollups, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, strings.ReplaceAll(sqlInspectRollupCount, "KEY", col), tenant).Scan(&out.Total)
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
	err := s.read(ctx, "overview", func(tx *sql.Tx) error {
		now := p.Now.UnixMilli()
		if err := tx.QueryRowContext(ctx, sqlInspectOverviewQueues, tenant).Scan(&out.Queues, &out.Namespaces,
			&out.Tasks); err != nil {
			return err
		}
		m := &out.Messages
		if err := tx.QueryRowContext(ctx, sqlInspectOverviewMessages, now, tenant).Scan(&out.Partitions, &m.Total,
			&m.Pending, &m.Processing, &m.Completed, &m.DeadLetter); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, sqlInspectOverviewLags, now, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var lag store.LaneLag
			var oldest sql.NullInt64
			if err := rows.Scan(&lag.Messages, &oldest); err != nil {
				return err
			}
			lag.OldestUnread = fromNullMs(oldest)
			out.Lags = append(out.Lags, lag)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
