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
)

// The metrics series (migration 009). Every broker sharing the database
// writes its own rows (its hostname and worker id are in every key), once
// a minute, so brokers never contend for them; the queue figures
// (metrics_queue_state) are written by the holder of the metrics job's
// lock only.

// Columns of a QueueOps, in order, in metrics_queue and metrics_worker.
var opsColumns = []string{"push_requests", "push_messages", "pop_requests", "pop_messages", "pop_empty",
	"ack_requests", "ack_success", "ack_failed", "dlq", "transactions", "lag_count", "lag_sum_ms", "lag_max_ms"}

// opsValues returns o's fields in the order of opsColumns.
func opsValues(o *store.QueueOps) []any {
	return []any{o.PushRequests, o.PushMessages, o.PopRequests, o.PopMessages, o.PopEmpty, o.AckRequests,
		o.AckSuccess, o.AckFailed, o.DLQ, o.Transactions, o.LagCount, o.LagSumMs, o.LagMaxMs}
}

// opsTargets returns pointers to o's fields in the order of opsColumns.
func opsTargets(o *store.QueueOps) []any {
	return []any{&o.PushRequests, &o.PushMessages, &o.PopRequests, &o.PopMessages, &o.PopEmpty, &o.AckRequests,
		&o.AckSuccess, &o.AckFailed, &o.DLQ, &o.Transactions, &o.LagCount, &o.LagSumMs, &o.LagMaxMs}
}

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

// placeholders returns n comma-separated ?.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// upsert returns an INSERT of cols into table that replaces the row with
// the same key.
func upsert(table string, key, cols []string) string {
	all := append(append([]string{}, key...), cols...)
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = c + " = excluded." + c
	}
	return rebind("INSERT INTO " + table + " (" + strings.Join(all, ", ") + ") VALUES (" + placeholders(len(all)) +
		") ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + strings.Join(set, ", "))
}

var (
	sqlStatsQueueUpsert = upsert("metrics_queue", []string{"tenant", "queue", "minute", "hostname", "worker_id"},
		append(append([]string{}, opsColumns...), "parked"))
	sqlStatsStateUpsert = upsert("metrics_queue_state", []string{"tenant", "minute", "queue"},
		[]string{"pending", "processing", "dead_letter", "group_lag", "partitions"})
	sqlStatsWorkerUpsert = upsert("metrics_worker", []string{"hostname", "worker_id", "minute"},
		append(append([]string{"pid", "port"}, opsColumns...), "db_errors", "gauges"))
)

// StatsRecord writes a broker's figures in one transaction, one round trip.
func (s *Store) StatsRecord(ctx context.Context, p *store.StatsRecordParams) error {
	if len(p.Queues)+len(p.States)+len(p.Workers) == 0 {
		return nil
	}
	var b pgx.Batch
	for i := range p.Queues {
		q := &p.Queues[i]
		args := append([]any{store.TenantOrDefault(q.Tenant), q.Queue, q.Minute.UnixMilli(), q.Hostname,
			q.WorkerID}, opsValues(&q.Ops)...)
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
		args := append([]any{w.Hostname, w.WorkerID, w.Minute.UnixMilli(), w.PID, w.Port}, opsValues(&w.Ops)...)
		b.Queue(sqlStatsWorkerUpsert, append(args, w.DBErrors, string(gauges))...)
	}
	return s.inTx(ctx, "record metrics", func(t *txn) error { return t.execBatch(&b) })
}

// rollupQuery sums the minute rows of [?, ?) over brokers into 15-minute
// slots (parked: the largest minute of the slot, brokers summed), replacing
// the slots' rows.
func rollupQuery(cast string) string {
	slot := fmt.Sprintf("(minute / %d) * %d", store.RollupSlot.Milliseconds(), store.RollupSlot.Milliseconds())
	inner := make([]string, 0, len(opsColumns)+1)
	outer := make([]string, 0, len(opsColumns)+1)
	set := make([]string, 0, len(opsColumns)+1)
	for _, c := range append(append([]string{}, opsColumns...), "parked") {
		agg, outerAgg := "sum", "sum"
		switch c {
		case "lag_max_ms":
			agg, outerAgg = "max", "max"
		case "parked":
			outerAgg = "max"
		}
		inner = append(inner, agg+"("+c+") AS "+c)
		outer = append(outer, outerAgg+"("+c+")"+cast)
		set = append(set, c+" = excluded."+c)
	}
	return "INSERT INTO metrics_queue_15m (tenant, minute, queue, " + strings.Join(opsColumns, ", ") + ", parked) " +
		"SELECT tenant, " + slot + ", queue, " + strings.Join(outer, ", ") +
		" FROM (SELECT tenant, minute, queue, " + strings.Join(inner, ", ") +
		" FROM metrics_queue WHERE minute >= ? AND minute < ? GROUP BY tenant, minute, queue) x" +
		" WHERE true GROUP BY tenant, " + slot + ", queue" +
		" ON CONFLICT (tenant, minute, queue) DO UPDATE SET " + strings.Join(set, ", ")
}

// rollupWindow widens [From, To) to whole slots.
func rollupWindow(p *store.StatsRollupParams) (from, to int64) {
	from = store.BucketOf(p.From, store.RollupSlot).UnixMilli()
	to = store.BucketOf(p.To, store.RollupSlot).Add(store.RollupSlot).UnixMilli()
	return from, to
}

var sqlStatsRollup = rebind(rollupQuery("::bigint"))

// StatsRollup sums the minute rows of the window into 15-minute slots.
func (s *Store) StatsRollup(ctx context.Context, p *store.StatsRollupParams) error {
	from, to := rollupWindow(p)
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

// seriesQuery builds the statement of StatsQueueSeries: per minute the rows
// of a group are summed (brokers, and queues for SeriesByBucket), then the
// minutes of a bucket (parked keeps its largest minute).
func seriesQuery(p *store.StatsSeriesParams) (string, []any) {
	var keys []string
	switch p.Group {
	case store.SeriesByQueue:
		keys = []string{"m.tenant", "m.queue"}
	case store.SeriesByReplica:
		keys = []string{"m.tenant", "m.queue", "m.hostname", "m.worker_id"}
	}
	join, args := "", []any{}
	if p.Namespace != "" || p.Task != "" {
		join = " JOIN queues q ON q.tenant = m.tenant AND q.name = m.queue"
		if p.Namespace != "" {
			join += " AND q.namespace = ?"
			args = append(args, p.Namespace)
		}
		if p.Task != "" {
			join += " AND q.task = ?"
			args = append(args, p.Task)
		}
	}
	var where []string
	if !p.AllTenants {
		where = append(where, "m.tenant = ?")
		args = append(args, store.TenantOrDefault(p.Tenant))
	}
	where = append(where, "m.minute >= ?", "m.minute < ?")
	args = append(args, p.From.UnixMilli(), p.To.UnixMilli())
	if len(p.Queues) > 0 {
		where = append(where, "m.queue = ANY (?)")
		args = append(args, p.Queues)
	}
	if p.Hostname != "" {
		where = append(where, "m.hostname = ?")
		args = append(args, p.Hostname)
	}
	if p.WorkerID != "" {
		where = append(where, "m.worker_id = ?")
		args = append(args, p.WorkerID)
	}
	table := "metrics_queue"
	if store.SeriesFromSlots(p) {
		table = "metrics_queue_15m"
	}
	// Parked is summed over brokers (and queues) per minute, then the
	// bucket keeps its largest minute: two levels, unless every row is
	// already one group of a minute (a broker's row, a slot's queue).
	oneLevel := p.Group == store.SeriesByReplica || (table != "metrics_queue" && p.Group == store.SeriesByQueue)
	inner := make([]string, 0, len(opsColumns)+1)
	outer := make([]string, 0, len(opsColumns)+1)
	for _, c := range opsColumns {
		agg := "sum"
		if c == "lag_max_ms" {
			agg = "max"
		}
		inner = append(inner, agg+"(m."+c+") AS "+c)
		if oneLevel {
			outer = append(outer, agg+"(m."+c+")::bigint")
		} else {
			outer = append(outer, agg+"("+c+")::bigint")
		}
	}
	inner = append(inner, "sum(m.parked) AS parked")
	innerKeys := strings.Join(append([]string{"m.minute"}, keys...), ", ")
	from := "(SELECT " + innerKeys + ", " + strings.Join(inner, ", ") + " FROM " + table + " m" + join +
		" WHERE " + strings.Join(where, " AND ") + " GROUP BY " + innerKeys + ") m"
	if oneLevel {
		from = table + " m" + join + " WHERE " + strings.Join(where, " AND ")
	}
	outer = append(outer, "max(m.parked)::bigint")
	b := max(p.Bucket.Truncate(time.Minute), time.Minute).Milliseconds()
	outerKeys := append([]string{fmt.Sprintf("(m.minute / %d) * %d", b, b)}, keys...)
	query := "SELECT " + strings.Join(outerKeys, ", ") + ", " + strings.Join(outer, ", ") + " FROM " + from +
		" GROUP BY " + strings.Join(outerKeys, ", ") + " ORDER BY " + strings.Join(outerKeys, ", ")
	return rebind(query), args
}

// StatsQueueSeries sums the per-queue counters into buckets.
func (s *Store) StatsQueueSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueBucket, error) {
	query, args := seriesQuery(p)
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
		targets = append(append(targets, opsTargets(&b.Ops)...), &b.Parked)
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
	query := `SELECT hostname, worker_id, minute, pid, port, ` + strings.Join(opsColumns, ", ") + `, db_errors, gauges
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
		targets := append([]any{&w.Hostname, &w.WorkerID, &minute, &pid, &port}, opsTargets(&w.Ops)...)
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
		rows, _ = t.tx.Query(t.ctx, `SELECT pid, COALESCE(state, ''), left(query, 200), COALESCE(wait_event, ''),
				COALESCE(extract(epoch FROM now() - query_start) * 1000, 0)::bigint
			FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'
			ORDER BY query_start NULLS LAST LIMIT 100`)
		var a store.EngineActivity
		var ms int64
		_, err := pgx.ForEachRow(rows, []any{&a.PID, &a.State, &a.Query, &a.WaitEvent, &ms}, func() error {
			a.Duration = time.Duration(ms) * time.Millisecond
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
