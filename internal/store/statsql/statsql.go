// Package statsql builds the metrics statements both engines run: the
// tables (metrics_queue, its 15-minute slots, metrics_worker) and their
// aggregation are the same on both, and only a dialect detail differs (how
// a list is passed, whether sums need a cast). Statements use ? placeholders;
// PostgreSQL numbers them itself.
package statsql

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Dialect is what differs between the engines.
type Dialect struct {
	// Cast follows every aggregate (PostgreSQL: "::bigint", since its sum
	// of bigint is numeric).
	Cast string
	// ArrayParams passes a list as one array parameter (= ANY (?)) instead
	// of one placeholder per element.
	ArrayParams bool
}

// Columns of a QueueOps, in order, in metrics_queue and metrics_worker.
var OpsColumns = []string{"push_requests", "push_messages", "pop_requests", "pop_messages", "pop_empty",
	"ack_requests", "ack_success", "ack_failed", "dlq", "transactions", "lag_count", "lag_sum_ms", "lag_max_ms"}

// OpsValues returns o's fields in the order of OpsColumns.
func OpsValues(o *store.QueueOps) []any {
	return []any{o.PushRequests, o.PushMessages, o.PopRequests, o.PopMessages, o.PopEmpty, o.AckRequests,
		o.AckSuccess, o.AckFailed, o.DLQ, o.Transactions, o.LagCount, o.LagSumMs, o.LagMaxMs}
}

// OpsTargets returns pointers to o's fields in the order of OpsColumns.
func OpsTargets(o *store.QueueOps) []any {
	return []any{&o.PushRequests, &o.PushMessages, &o.PopRequests, &o.PopMessages, &o.PopEmpty, &o.AckRequests,
		&o.AckSuccess, &o.AckFailed, &o.DLQ, &o.Transactions, &o.LagCount, &o.LagSumMs, &o.LagMaxMs}
}

// Placeholders returns n comma-separated ?.
func Placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// Upsert returns an INSERT of cols into table that replaces the row with
// the same key.
func Upsert(table string, key, cols []string) string {
	all := append(append([]string{}, key...), cols...)
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = c + " = excluded." + c
	}
	return "INSERT INTO " + table + " (" + strings.Join(all, ", ") + ") VALUES (" + Placeholders(len(all)) +
		") ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// Rollup sums the minute rows of [?, ?) over brokers into 15-minute
// slots (parked: the largest minute of the slot, brokers summed), replacing
// the slots' rows.
func Rollup(d Dialect) string {
	slot := fmt.Sprintf("(minute / %d) * %d", store.RollupSlot.Milliseconds(), store.RollupSlot.Milliseconds())
	inner := make([]string, 0, len(OpsColumns)+1)
	outer := make([]string, 0, len(OpsColumns)+1)
	set := make([]string, 0, len(OpsColumns)+1)
	for _, c := range append(append([]string{}, OpsColumns...), "parked") {
		agg, outerAgg := "sum", "sum"
		switch c {
		case "lag_max_ms":
			agg, outerAgg = "max", "max"
		case "parked":
			outerAgg = "max"
		}
		inner = append(inner, agg+"("+c+") AS "+c)
		outer = append(outer, outerAgg+"("+c+")"+d.Cast)
		set = append(set, c+" = excluded."+c)
	}
	return "INSERT INTO metrics_queue_15m (tenant, minute, queue, " + strings.Join(OpsColumns, ", ") + ", parked) " +
		"SELECT tenant, " + slot + ", queue, " + strings.Join(outer, ", ") +
		" FROM (SELECT tenant, minute, queue, " + strings.Join(inner, ", ") +
		" FROM metrics_queue WHERE minute >= ? AND minute < ? GROUP BY tenant, minute, queue) x" +
		" WHERE true GROUP BY tenant, " + slot + ", queue" +
		" ON CONFLICT (tenant, minute, queue) DO UPDATE SET " + strings.Join(set, ", ")
}

// RollupWindow widens [From, To) to whole slots.
func RollupWindow(p *store.StatsRollupParams) (from, to int64) {
	from = store.BucketOf(p.From, store.RollupSlot).UnixMilli()
	to = store.BucketOf(p.To, store.RollupSlot).Add(store.RollupSlot).UnixMilli()
	return from, to
}

// Series builds the statement of StatsQueueSeries: per minute the rows
// of a group are summed (brokers, and queues for SeriesByBucket), then the
// minutes of a bucket (parked keeps its largest minute).
func Series(p *store.StatsSeriesParams, d Dialect) (string, []any) {
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
	if len(p.Queues) > 0 && d.ArrayParams {
		where = append(where, "m.queue = ANY (?)")
		args = append(args, p.Queues)
	} else if len(p.Queues) > 0 {
		where = append(where, "m.queue IN ("+Placeholders(len(p.Queues))+")")
		for _, q := range p.Queues {
			args = append(args, q)
		}
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
	inner := make([]string, 0, len(OpsColumns)+1)
	outer := make([]string, 0, len(OpsColumns)+1)
	for _, c := range OpsColumns {
		agg := "sum"
		if c == "lag_max_ms" {
			agg = "max"
		}
		inner = append(inner, agg+"(m."+c+") AS "+c)
		if oneLevel {
			outer = append(outer, agg+"(m."+c+")"+d.Cast)
		} else {
			outer = append(outer, agg+"("+c+")"+d.Cast)
		}
	}
	inner = append(inner, "sum(m.parked) AS parked")
	innerKeys := strings.Join(append([]string{"m.minute"}, keys...), ", ")
	from := "(SELECT " + innerKeys + ", " + strings.Join(inner, ", ") + " FROM " + table + " m" + join +
		" WHERE " + strings.Join(where, " AND ") + " GROUP BY " + innerKeys + ") m"
	if oneLevel {
		from = table + " m" + join + " WHERE " + strings.Join(where, " AND ")
	}
	outer = append(outer, "max(m.parked)"+d.Cast)
	b := max(p.Bucket.Truncate(time.Minute), time.Minute).Milliseconds()
	outerKeys := append([]string{fmt.Sprintf("(m.minute / %d) * %d", b, b)}, keys...)
	query := "SELECT " + strings.Join(outerKeys, ", ") + ", " + strings.Join(outer, ", ") + " FROM " + from +
		" GROUP BY " + strings.Join(outerKeys, ", ") + " ORDER BY " + strings.Join(outerKeys, ", ")
	return query, args
}

// GaugeRow is a queue's figures as an engine sums them, with its row id for
// the lookups of the deepest queues.
type GaugeRow struct {
	ID int64
	store.QueueGauge
}

// RankGauges orders all most pending first (then by tenant and queue), sets
// out's totals over every queue, and returns the deepest limit of them: the
// queues whose lags and oldest unread message the engine then looks up.
func RankGauges(out *store.QueueGauges, all []GaugeRow, limit int) []GaugeRow {
	slices.SortFunc(all, func(a, b GaugeRow) int {
		if a.Pending != b.Pending {
			return cmp.Compare(b.Pending, a.Pending)
		}
		if a.Tenant != b.Tenant {
			return strings.Compare(a.Tenant, b.Tenant)
		}
		return strings.Compare(a.Queue, b.Queue)
	})
	out.Total = len(all)
	for _, g := range all {
		out.Pending += g.Pending
		out.DeadLetter += g.DeadLetter
	}
	return all[:min(limit, len(all))]
}
