package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/statsql"
)

// The metrics series (migration 009): written once a minute per broker by
// the metrics sampler as a relaxed writer job (losing the last minute of
// figures to a power cut is harmless), read through the read-only pool.

var (
	sqlStatsQueueUpsert = statsql.Upsert("metrics_queue", []string{"tenant", "queue", "minute", "hostname", "worker_id"},
		append(append([]string{}, statsql.OpsColumns...), "parked"))
	sqlStatsStateUpsert = statsql.Upsert("metrics_queue_state", []string{"tenant", "minute", "queue"},
		[]string{"pending", "processing", "dead_letter", "group_lag", "partitions"})
	sqlStatsWorkerUpsert = statsql.Upsert("metrics_worker", []string{"hostname", "worker_id", "minute"},
		append(append([]string{"pid", "port"}, statsql.OpsColumns...), "db_errors", "gauges"))
)

// StatsRecord writes a broker's figures in one relaxed writer job.
func (s *Store) StatsRecord(ctx context.Context, p *store.StatsRecordParams) error {
	if len(p.Queues)+len(p.States)+len(p.Workers) == 0 {
		return nil
	}
	workers := make([][]byte, len(p.Workers))
	for i, w := range p.Workers {
		b, err := json.Marshal(w.Gauges)
		if err != nil {
			return fmt.Errorf("record metrics: %w", err)
		}
		workers[i] = b
	}
	return s.run(ctx, relaxed, func(tx *sql.Tx) error {
		for i := range p.Queues {
			q := &p.Queues[i]
			args := append([]any{store.TenantOrDefault(q.Tenant), q.Queue, q.Minute.UnixMilli(), q.Hostname,
				q.WorkerID}, statsql.OpsValues(&q.Ops)...)
			if _, err := tx.ExecContext(ctx, sqlStatsQueueUpsert, append(args, q.Parked)...); err != nil {
				return fmt.Errorf("record queue metrics: %w", err)
			}
		}
		for _, st := range p.States {
			if _, err := tx.ExecContext(ctx, sqlStatsStateUpsert, store.TenantOrDefault(st.Tenant),
				st.Minute.UnixMilli(), st.Queue, st.Pending, st.Processing, st.DeadLetter, st.GroupLag,
				st.Partitions); err != nil {
				return fmt.Errorf("record queue figures: %w", err)
			}
		}
		for i := range p.Workers {
			w := &p.Workers[i]
			args := append([]any{w.Hostname, w.WorkerID, w.Minute.UnixMilli(), w.PID, w.Port}, statsql.OpsValues(&w.Ops)...)
			if _, err := tx.ExecContext(ctx, sqlStatsWorkerUpsert, append(args, w.DBErrors,
				string(workers[i]))...); err != nil {
				return fmt.Errorf("record broker metrics: %w", err)
			}
		}
		return nil
	})
}

var sqlStatsRollup = statsql.Rollup(statsql.Dialect{})

// StatsRollup sums the minute rows of the window into 15-minute slots, in
// one relaxed writer job.
func (s *Store) StatsRollup(ctx context.Context, p *store.StatsRollupParams) error {
	from, to := statsql.RollupWindow(p)
	return s.run(ctx, relaxed, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlStatsRollup, from, to); err != nil {
			return fmt.Errorf("roll metrics up: %w", err)
		}
		return nil
	})
}

// sweptTables are the series tables and their keys (WITHOUT ROWID tables:
// a range of a tenant's minutes is read along the table itself).
var sweptTables = []struct{ name, key string }{
	{"metrics_queue", "tenant, minute, queue, hostname, worker_id"},
	{"metrics_queue_15m", "tenant, minute, queue"},
	{"metrics_queue_state", "tenant, minute, queue"},
	{"metrics_worker", "hostname, worker_id, minute"},
}

// StatsSweep deletes old rows of every series, up to p.Limit per table.
func (s *Store) StatsSweep(ctx context.Context, p *store.StatsSweepParams) (*store.StatsSweepResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	out := &store.StatsSweepResult{}
	err := s.run(ctx, relaxed, func(tx *sql.Tx) error {
		for _, t := range sweptTables {
			res, err := tx.ExecContext(ctx, "DELETE FROM "+t.name+" WHERE ("+t.key+") IN (SELECT "+t.key+" FROM "+
				t.name+" WHERE minute < ? LIMIT ?)", p.Before.UnixMilli(), limit)
			if err != nil {
				return fmt.Errorf("sweep %s: %w", t.name, err)
			}
			n, _ := res.RowsAffected()
			out.Deleted += int(n)
			out.More = out.More || int(n) == limit
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsQueueSeries sums the per-queue counters into buckets.
func (s *Store) StatsQueueSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueBucket, error) {
	query, args := statsql.Series(p, statsql.Dialect{})
	var out []store.QueueBucket
	err := s.read(ctx, "read queue metrics", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
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
			if err := rows.Scan(targets...); err != nil {
				return err
			}
			b.Bucket = time.UnixMilli(bucket).UTC()
			out = append(out, b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsQueueStateSeries returns the last figures of each queue in each
// bucket. SQLite takes the bare columns of an aggregate query from the row
// holding the max().
func (s *Store) StatsQueueStateSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.QueueState, error) {
	bucket := max(p.Bucket.Truncate(time.Minute), time.Minute).Milliseconds()
	where := "minute >= ? AND minute < ?"
	args := []any{p.From.UnixMilli(), p.To.UnixMilli()}
	if !p.AllTenants {
		where = "tenant = ? AND " + where
		args = append([]any{store.TenantOrDefault(p.Tenant)}, args...)
	}
	if len(p.Queues) > 0 {
		where += " AND queue IN (" + statsql.Placeholders(len(p.Queues)) + ")"
		for _, q := range p.Queues {
			args = append(args, q)
		}
	}
	b := fmt.Sprintf("(minute / %d) * %d", bucket, bucket)
	query := "SELECT " + b + ", tenant, queue, max(minute), pending, processing, dead_letter, group_lag, partitions " +
		"FROM metrics_queue_state WHERE " + where + " GROUP BY " + b + ", tenant, queue ORDER BY 1, 2, 3"
	var out []store.QueueState
	err := s.read(ctx, "read queue figures", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st store.QueueState
			var bk, last int64
			if err := rows.Scan(&bk, &st.Tenant, &st.Queue, &last, &st.Pending, &st.Processing, &st.DeadLetter,
				&st.GroupLag, &st.Partitions); err != nil {
				return err
			}
			st.Minute = time.UnixMilli(bk).UTC()
			out = append(out, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsWorkerSeries returns per-broker rows.
func (s *Store) StatsWorkerSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.WorkerMinute, error) {
	query := `SELECT hostname, worker_id, minute, pid, port, ` + strings.Join(statsql.OpsColumns, ", ") + `, db_errors, gauges
		FROM metrics_worker WHERE minute >= ? AND minute < ? AND (? = '' OR hostname = ?) AND (? = '' OR worker_id = ?)
		ORDER BY hostname, worker_id, minute`
	var out []store.WorkerMinute
	err := s.read(ctx, "read broker metrics", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, p.From.UnixMilli(), p.To.UnixMilli(), p.Hostname, p.Hostname,
			p.WorkerID, p.WorkerID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var w store.WorkerMinute
			var minute int64
			var gauges string
			targets := append([]any{&w.Hostname, &w.WorkerID, &minute, &w.PID, &w.Port}, statsql.OpsTargets(&w.Ops)...)
			if err := rows.Scan(append(targets, &w.DBErrors, &gauges)...); err != nil {
				return err
			}
			w.Minute = time.UnixMilli(minute).UTC()
			if err := json.Unmarshal([]byte(gauges), &w.Gauges); err != nil {
				return fmt.Errorf("gauges of %s/%s at %d: %w", w.Hostname, w.WorkerID, minute, err)
			}
			out = append(out, w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsRetentionSeries reads the retention history (migration 008), if
// this database has it.
func (s *Store) StatsRetentionSeries(ctx context.Context, p *store.StatsSeriesParams) ([]store.RetentionBucket, error) {
	bucket := max(p.Bucket.Truncate(time.Minute), time.Minute).Milliseconds()
	b := fmt.Sprintf("(minute / %d) * %d", bucket, bucket)
	where := "tenant = ? AND minute >= ? AND minute < ?"
	args := []any{store.TenantOrDefault(p.Tenant), p.From.UnixMilli(), p.To.UnixMilli()}
	if len(p.Queues) > 0 {
		where += " AND queue IN (" + statsql.Placeholders(len(p.Queues)) + ")"
		for _, q := range p.Queues {
			args = append(args, q)
		}
	}
	var out []store.RetentionBucket
	err := s.read(ctx, "read retention history", func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
			WHERE type = 'table' AND name = 'retention_history'`).Scan(&n); err != nil || n == 0 {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+b+", kind, sum(count), count(*) FROM retention_history WHERE "+
			where+" GROUP BY 1, 2 ORDER BY 1, 2", args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r store.RetentionBucket
			var bk int64
			if err := rows.Scan(&bk, &r.Kind, &r.Messages, &r.Events); err != nil {
				return err
			}
			r.Bucket = time.UnixMilli(bk).UTC()
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsPool reports the writer and the read-only pool. The writer is one
// connection; operations waiting for it are the jobs queued.
func (s *Store) StatsPool() store.PoolUsage {
	rs := s.reader.Stats()
	waiting := len(s.jobs)
	u := store.PoolUsage{Size: 1 + rs.MaxOpenConnections, Open: 1 + rs.OpenConnections, Idle: rs.Idle,
		Active: rs.InUse, Waiting: waiting}
	if waiting > 0 {
		u.Active++ // the writer is at work on the jobs before them
	} else {
		u.Idle++
	}
	return u
}

// Pragmas reported as the embedded engine's settings.
var enginePragmas = []string{"page_size", "cache_size", "journal_mode", "wal_autocheckpoint", "auto_vacuum",
	"mmap_size"}

// StatsEngine reports the database file from SQLite's pragmas: its pages,
// free pages, the write-ahead log's size and the cache settings. SQLite
// keeps no cumulative cache statistics a pragma can read, and per-table
// sizes would need a read of every page (dbstat): neither is reported.
func (s *Store) StatsEngine(ctx context.Context, p *store.StatsEngineParams) (*store.EngineStats, error) {
	out := &store.EngineStats{}
	err := s.read(ctx, "engine statistics", func(tx *sql.Tx) error {
		d := &out.Database
		var file string
		if err := tx.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
			return err
		}
		d.Name = file
		for _, q := range []struct {
			pragma string
			into   *int64
		}{{"page_size", &d.PageSize}, {"page_count", &d.PageCount}, {"freelist_count", &d.FreelistPages}} {
			if err := tx.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.into); err != nil {
				return fmt.Errorf("pragma %s: %w", q.pragma, err)
			}
		}
		d.SizeBytes = d.PageSize * d.PageCount
		for _, name := range enginePragmas {
			var v sql.NullString
			err := tx.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("pragma %s: %w", name, err)
			}
			unit := ""
			if name == "cache_size" {
				// Negative: a size in KiB; positive: pages.
				var n int64
				if _, err := fmt.Sscan(v.String, &n); err == nil {
					if n < 0 && d.PageSize > 0 {
						d.CachePages = -n * 1024 / d.PageSize
					} else {
						d.CachePages = n
					}
				}
				unit = "pages, or KiB when negative"
			}
			out.Settings = append(out.Settings, store.EngineSetting{Name: name, Value: v.String, Unit: unit})
		}
		if file != "" {
			d.WALBytes = fileSize(file + "-wal")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fileSize returns the size of a file; 0 when it does not exist.
func fileSize(name string) int64 {
	fi, err := os.Stat(name)
	if err != nil {
		return 0
	}
	return fi.Size()
}
