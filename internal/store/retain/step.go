package retain

import (
	"fmt"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// The statements of a step's walk, the same on both engines.
const (
	MaxPartition = `SELECT COALESCE(max(id), 0) FROM partitions`
	// Partitions lists the partitions of window [$1, $2) whose queue (of
	// tenant $3, or any) asks for the sweep; the engine's filter of the
	// kind (Filters) is appended.
	Partitions = `SELECT p.id, p.floor_offset, p.cleared_offset, q.tenant, q.name, q.options
		FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE p.id >= $1 AND p.id < $2 AND ($3 = '' OR q.tenant = $3) AND `
)

// Partition is a partition a sweep visits.
type Partition struct {
	ID, Floor     int64
	Cleared       int64 // every message up to it is gone
	Tenant, Queue string
	Opts          store.QueueOptions
}

// Visits are an engine's sweeps of one partition within the step's
// budget, each reporting whether the partition has more to remove.
type Visits struct {
	// Expire removes messages created before cutoff (consumed: only those
	// every group has consumed).
	Expire func(p Partition, cutoff int64, consumed bool) (bool, error)
	// Evict dead-letters or drops messages waiting since before cutoff.
	Evict func(p Partition, cutoff int64) (bool, error)
}

// StepIn walks one step of a sweep of p.Kind in an engine's transaction:
// the window's partitions that filter (the engine's, for the kind)
// selects, each visited until the budget is spent. It returns where the
// next step starts.
func StepIn(q sqlq.Q, filter string, p *store.RetentionSweepParams, spent func() bool, v Visits) (int64, error) {
	var maxID int64
	if err := q.Row(MaxPartition).Scan(&maxID); err != nil {
		return 0, fmt.Errorf("retention sweep: %w", err)
	}
	nowMs := p.Now.UnixMilli()
	w := Walk[Partition]{From: p.From, MaxID: maxID,
		List:  func(from, end int64) ([]Partition, error) { return list(q, Partitions+filter, from, end, p.Tenant) },
		ID:    func(sp Partition) int64 { return sp.ID },
		Spent: spent,
		Visit: func(sp Partition) (bool, error) {
			cutoff := Cutoff(p.Kind, &sp.Opts, nowMs)
			if p.Kind == store.RetentionEviction {
				return v.Evict(sp, cutoff)
			}
			return v.Expire(sp, cutoff, p.Kind == store.RetentionCompleted)
		},
	}
	return w.Run()
}

func list(q sqlq.Q, query string, from, end int64, tenant string) ([]Partition, error) {
	var out []Partition
	err := q.Each(query, []any{from, end, tenant}, func(row sqlq.Row) error {
		var sp Partition
		var opts []byte
		if err := row.Scan(&sp.ID, &sp.Floor, &sp.Cleared, &sp.Tenant, &sp.Queue, &opts); err != nil {
			return err
		}
		o, err := store.DecodeQueueOptions(opts)
		if err != nil {
			return fmt.Errorf("queue %q: %w", sp.Queue, err)
		}
		sp.Opts = o
		out = append(out, sp)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retention sweep: list partitions: %w", err)
	}
	return out, nil
}
