package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/statsql"
)

// The metrics series (migration 009). Every broker sharing the database
// writes its own rows (its hostname and worker id are in every key), once
// a minute, so brokers never contend for them; the queue figures
// (metrics_queue_state) are written by the holder of the metrics job's
// lock only.

// rebind numbers the ? placeholders of a statement built for both engines.
func rebind(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	sqlStatsQueueUpsert = rebind(statsql.Upsert("metrics_queue", []string{"tenant", "queue", "minute", "hostname", "worker_id"},
		append(append([]string{}, statsql.OpsColumns...), "parked")))
	sqlStatsStateUpsert = rebind(statsql.Upsert("metrics_queue_state", []string{"tenant", "minute", "queue"},
		[]string{"pending", "processing", "dead_letter", "group_lag", "partitions"}))
	sqlStatsWorkerUpsert = rebind(statsql.Upsert("metrics_worker", []string{"hostname", "worker_id", "minute"},
		append(append([]string{"pid", "port"}, statsql.OpsColumns...), "db_errors", "gauges")))
)

// pgStats is PostgreSQL's dialect of the metrics statements.
var pgStats = statsql.Dialect{Cast: "::bigint", ArrayParams: true}

// StatsRecord writes a broker's figures in one transaction, one round trip.
func (s *Store) StatsRecord(ctx context.Context, p *store.StatsRecordParams) error {
	if len(p.Queues)+len(p.States)+len(p.Workers) == 0 {
		return nil
	}
	var b pgx.Batch
	for i := range p.Queues {
		q := &p.Queues[i]
		args := append([]any{store.TenantOrDefault(q.Tenant), q.Queue, q.Minute.UnixMilli(), q.Hostname,
			q.WorkerID}, statsql.OpsValues(&q.Ops)...)
		b.Queue(sqlStatsQueueUpsert, append(args, q.Parked)...)
	}
	for _, st := range p.States {
		b.Queue(sqlStatsStateUpsert, store.TenantOrDefault(st.Tenant), st.Minute.UnixMilli(), st.Queue, st.Pending,
			st.Processing, st.DeadLetter, st.GroupLag, st.Partitions)
	}
	for i := range p.Workers {
		w := &p.Workers[i]
		gauges, err := json.Marshal(w.Gauges)
		if err != nil {
			return fmt.Errorf("postgres: record metrics: %w", err)
		}
		args := append([]any{w.Hostname, w.WorkerID, w.Minute.UnixMilli(), w.PID, w.Port}, statsql.OpsValues(&w.Ops)...)
		b.Queue(sqlStatsWorkerUpsert, append(args, w.DBErrors, string(gauges))...)
	}
	return s.inTx(ctx, "record metrics", func(t *txn) error { return t.execBatch(&b) })
}

var sqlStatsRollup = rebind(statsql.Rollup(pgStats))

// StatsRollup sums the minute rows of the window into 15-minute slots.
func (s *Store) StatsRollup(ctx context.Context, p *store.StatsRollupParams) error {
	from, to := statsql.RollupWindow(p)
	return s.inTx(ctx, "roll metrics up", func(t *txn) error {
		_, err := t.tx.Exec(t.ctx, sqlStatsRollup, from, to)
		return err
	})
}

// StatsSweep deletes old rows of every series, up to p.Limit per table.
func (s *Store) StatsSweep(ctx context.Context, p *store.StatsSweepParams) (*store.StatsSweepResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.StatsSweepResult{}
	err := s.inTx(ctx, "sweep metrics", func(t *txn) error {
		out.Deleted, out.More = 0, false
		for _, table := range []string{"metrics_queue", "metrics_queue_15m", "metrics_queue_state", "metrics_worker"} {
			tag, err := t.tx.Exec(t.ctx, "DELETE FROM "+table+" WHERE ctid IN (SELECT ctid FROM "+table+
				" WHERE minute < $1 LIMIT $2)", p.Before.UnixMilli(), limit)
			if err != nil {
				return fmt.Errorf("sweep %s: %w", table, err)
			}
			out.Deleted += int(tag.RowsAffected())
			out.More = out.More || int(tag.RowsAffected()) == limit
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bucketExpr is the bucket of a minute column, in ms.
func bucketExpr(d time.Duration) string {
	b := max(d.Truncate(time.Minute), time.Minute).Milliseconds()
	return fmt.Sprintf("(minute / %d) * %d", b, b)
}

// StatsQueueSeries sums the per-queue counters into buckets.
func (s *Store) StatsQueueSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueBucket, error) {
	query, args := statsql.Series(p, pgStats)
	query = rebind(query)
	var out []store.QueueBucket
	err := s.inReadTx(ctx, "read queue metrics", func(t *txn) error {
		out = out[:0]
		rows, _ := t.tx.Query(t.ctx, query, args...)
		var b store.QueueBucket
		var bucket int64
		targets := []any{&bucket}
		switch p.Group {
		case store.SeriesByQueue:
			targets = append(targets, &b.Tenant, &b.Queue)
		case store.SeriesByReplica:
			targets = append(targets, &b.Tenant, &b.Queue, &b.Hostname, &b.WorkerID)
		}
		targets = append(append(targets, statsql.OpsTargets(&b.Ops)...), &b.Parked)
		_, err := pgx.ForEachRow(rows, targets, func() error {
			b.Bucket = time.UnixMilli(bucket).UTC()
			out = append(out, b)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsQueueStateSeries returns the last figures of each queue in each
// bucket.
func (s *Store) StatsQueueStateSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueState, error) {
	b := bucketExpr(p.Bucket)
	where := "minute >= ? AND minute < ?"
	args := []any{p.From.UnixMilli(), p.To.UnixMilli()}
	if !p.AllTenants {
		where = "tenant = ? AND " + where
		args = append([]any{store.TenantOrDefault(p.Tenant)}, args...)
	}
	if len(p.Queues) > 0 {
		where += " AND queue = ANY (?)"
		args = append(args, p.Queues)
	}
	query := rebind("SELECT DISTINCT ON (" + b + ", tenant, queue) " + b + ", tenant, queue, pending, processing, " +
		"dead_letter, group_lag, partitions FROM metrics_queue_state WHERE " + where +
		" ORDER BY " + b + ", tenant, queue, minute DESC")
	var out []store.QueueState
	err := s.inReadTx(ctx, "read queue figures", func(t *txn) error {
		out = out[:0]
		rows, _ := t.tx.Query(t.ctx, query, args...)
		var st store.QueueState
		var bk int64
		_, err := pgx.ForEachRow(rows, []any{&bk, &st.Tenant, &st.Queue, &st.Pending, &st.Processing,
			&st.DeadLetter, &st.GroupLag, &st.Partitions}, func() error {
			st.Minute = time.UnixMilli(bk).UTC()
			out = append(out, st)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsWorkerSeries returns per-broker rows.
func (s *Store) StatsWorkerSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.WorkerMinute, error) {
	query := `SELECT hostname, worker_id, minute, pid, port, ` + strings.Join(statsql.OpsColumns, ", ") + `, db_errors, gauges
		FROM metrics_worker WHERE minute >= $1 AND minute < $2 AND ($3 = '' OR hostname = $3)
			AND ($4 = '' OR worker_id = $4)
		ORDER BY hostname, worker_id, minute`
	var out []store.WorkerMinute
	err := s.inReadTx(ctx, "read broker metrics", func(t *txn) error {
		out = out[:0]
		rows, _ := t.tx.Query(t.ctx, query, p.From.UnixMilli(), p.To.UnixMilli(), p.Hostname, p.WorkerID)
		var w store.WorkerMinute
		var minute int64
		var pid, port int64
		var gauges string
		targets := append([]any{&w.Hostname, &w.WorkerID, &minute, &pid, &port}, statsql.OpsTargets(&w.Ops)...)
		_, err := pgx.ForEachRow(rows, append(targets, &w.DBErrors, &gauges), func() error {
			w.Minute, w.PID, w.Port, w.Gauges = time.UnixMilli(minute).UTC(), int(pid), int(port), nil
			if err := json.Unmarshal([]byte(gauges), &w.Gauges); err != nil {
				return fmt.Errorf("gauges of %s/%s at %d: %w", w.Hostname, w.WorkerID, minute, err)
			}
			out = append(out, w)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsRetentionSeries reads the retention history (migration 008), if
// this schema has it.
func (s *Store) StatsRetentionSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.RetentionBucket, error) {
	b := bucketExpr(p.Bucket)
	where := "tenant = ? AND minute >= ? AND minute < ?"
	args := []any{store.TenantOrDefault(p.Tenant), p.From.UnixMilli(), p.To.UnixMilli()}
	if len(p.Queues) > 0 {
		where += " AND queue = ANY (?)"
		args = append(args, p.Queues)
	}
	query := rebind("SELECT " + b + ", kind, sum(count)::bigint, count(*) FROM retention_history WHERE " + where +
		" GROUP BY 1, 2 ORDER BY 1, 2")
	var out []store.RetentionBucket
	err := s.inReadTx(ctx, "read retention history", func(t *txn) error {
		out = out[:0]
		var exists bool
		if err := t.tx.QueryRow(t.ctx, `SELECT to_regclass('retention_history') IS NOT NULL`).Scan(&exists); err != nil ||
			!exists {
			return err
		}
		rows, _ := t.tx.Query(t.ctx, query, args...)
		var r store.RetentionBucket
		var bk int64
		_, err := pgx.ForEachRow(rows, []any{&bk, &r.Kind, &r.Messages, &r.Events}, func() error {
			r.Bucket = time.UnixMilli(bk).UTC()
			out = append(out, r)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsPool reports the pgx pool. Waiting is not a count pgx keeps: it is
// reported as the connections being opened while the pool is full of
// busy ones, which is when acquirers wait.
func (s *Store) StatsPool() store.PoolUsage {
	st := s.pool.Stat()
	u := store.PoolUsage{Size: int(st.MaxConns()), Open: int(st.TotalConns()), Idle: int(st.IdleConns()),
		Active: int(st.AcquiredConns())}
	if u.Active >= u.Size {
		u.Waiting = int(st.ConstructingConns())
	}
	return u
}

// Settings reported as the engine's own.
var engineSettings = []string{"shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem",
	"wal_buffers", "max_connections", "autovacuum", "synchronous_commit"}

// StatsEngine reports the database, the broker's tables and indexes (this
// schema only) and the statements running now, from PostgreSQL's
// statistics views.
func (s *Store) StatsEngine(ctx context.Context, p *store.StatsEngineParams) (*store.EngineStats, error) {
	out := &store.EngineStats{}
	err := s.inReadTx(ctx, "engine statistics", func(t *txn) error {
		*out = store.EngineStats{}
		d := &out.Database
		if err := t.tx.QueryRow(t.ctx, `SELECT datname, numbackends, xact_commit, xact_rollback, blks_hit, blks_read,
				deadlocks, temp_bytes, pg_database_size(datname), current_setting('block_size')::bigint
			FROM pg_stat_database WHERE datname = current_database()`).Scan(&d.Name, &d.Connections, &d.Commits,
			&d.Rollbacks, &d.BlocksHit, &d.BlocksRead, &d.Deadlocks, &d.TempBytes, &d.SizeBytes,
			&d.PageSize); err != nil {
			return err
		}
		rows, _ := t.tx.Query(t.ctx, `SELECT s.relname, s.n_live_tup, s.n_dead_tup, s.n_tup_upd, s.n_tup_hot_upd,
				COALESCE(extract(epoch FROM s.last_vacuum) * 1000, 0)::bigint,
				COALESCE(extract(epoch FROM s.last_autovacuum) * 1000, 0)::bigint,
				s.vacuum_count, s.autovacuum_count,
				pg_total_relation_size(s.relid), pg_relation_size(s.relid), pg_indexes_size(s.relid),
				COALESCE(io.heap_blks_hit, 0), COALESCE(io.heap_blks_read, 0),
				COALESCE(io.idx_blks_hit, 0), COALESCE(io.idx_blks_read, 0)
			FROM pg_stat_user_tables s JOIN pg_statio_user_tables io ON io.relid = s.relid
			WHERE s.schemaname = current_schema() ORDER BY pg_total_relation_size(s.relid) DESC, s.relname`)
		var tb store.EngineTable
		var vac, autovac int64
		if _, err := pgx.ForEachRow(rows, []any{&tb.Name, &tb.Rows, &tb.DeadRows, &tb.Updates, &tb.HotUpdates, &vac,
			&autovac, &tb.VacuumCount, &tb.AutovacuumCount, &tb.TotalBytes, &tb.TableBytes, &tb.IndexBytes,
			&tb.BlocksHit, &tb.BlocksRead, &tb.IndexBlocksHit, &tb.IndexBlocksRead}, func() error {
			tb.LastVacuum, tb.LastAutovacuum = fromMs(vac), fromMs(autovac)
			out.Tables = append(out.Tables, tb)
			return nil
		}); err != nil {
			return err
		}
		rows, _ = t.tx.Query(t.ctx, `SELECT s.indexrelname, s.relname, s.idx_scan, COALESCE(io.idx_blks_hit, 0),
				COALESCE(io.idx_blks_read, 0), pg_relation_size(s.indexrelid)
			FROM pg_stat_user_indexes s JOIN pg_statio_user_indexes io ON io.indexrelid = s.indexrelid
			WHERE s.schemaname = current_schema() ORDER BY s.relname, s.indexrelname`)
		var ix store.EngineIndex
		if _, err := pgx.ForEachRow(rows, []any{&ix.Name, &ix.Table, &ix.Scans, &ix.BlocksHit, &ix.BlocksRead,
			&ix.SizeBytes}, func() error {
			out.Indexes = append(out.Indexes, ix)
			return nil
		}); err != nil {
			return err
		}
		rows, _ = t.tx.Query(t.ctx, `SELECT name, setting, COALESCE(unit, '') FROM pg_settings
			WHERE name = ANY ($1) ORDER BY name`, engineSettings)
		var set store.EngineSetting
		if _, err := pgx.ForEachRow(rows, []any{&set.Name, &set.Value, &set.Unit}, func() error {
			out.Settings = append(out.Settings, set)
			return nil
		}); err != nil {
			return err
		}
		rows, _ = t.tx.Query(t.ctx, `SELECT pid, COALESCE(state, ''), COALESCE(query, ''), COALESCE(wait_event, ''),
				COALESCE(extract(epoch FROM now() - query_start) * 1000, 0)::bigint
			FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'
			ORDER BY query_start NULLS LAST LIMIT 100`)
		var a store.EngineActivity
		var ms int64
		_, err := pgx.ForEachRow(rows, []any{&a.PID, &a.State, &a.Query, &a.WaitEvent, &ms}, func() error {
			a.Duration = time.Duration(ms) * time.Millisecond
			a.Query = redactSQL(a.Query) // no session's literals leave the broker
			out.Activity = append(out.Activity, a)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
