// Package tracesql is what the engines do alike for traces, written once
// over sqlq: the reading of a message's traces, of a name's page and of
// the name summaries, the names of listed traces, and the accounting of a
// trace delete (which names lose how many traces, and which stop tracing a
// message). An engine answers for its statements where they are dialect
// (an index hint, a list passed as JSON or as an array), its locks on the
// summaries, and its pipelining.
package tracesql

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// The statements both engines run as they are.
const (
	// List is a message's traces ($1 partition row id, $2 transactionId),
	// oldest first, in the columns ScanList reads.
	List = `SELECT t.id, t.uuid, t.consumer_group, t.event_type, t.data, COALESCE(t.worker_id, ''), t.created_at
		FROM traces t WHERE t.partition_id = $1 AND t.transaction_id = $2
		ORDER BY t.created_at, t.id`
	NameInsert = `INSERT INTO trace_names (trace_id, tenant, name, partition_id, transaction_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`
	NameCount  = `SELECT COALESCE((SELECT trace_count FROM trace_name_stats WHERE tenant = $1 AND name = $2), 0)`
	NamesTotal = `SELECT COALESCE((SELECT names FROM trace_totals WHERE tenant = $1), 0)`
)

// Default page sizes of the params that say 0.
const (
	DefaultByNameLimit = 100
	DefaultNamesLimit  = 50
)

// ByNameLimit is p.Limit, or DefaultByNameLimit.
func ByNameLimit(p *store.TraceListByNameParams) int { return orDefault(p.Limit, DefaultByNameLimit) }

// NamesLimit is p.Limit, or DefaultNamesLimit.
func NamesLimit(p *store.TraceNamesParams) int { return orDefault(p.Limit, DefaultNamesLimit) }

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// ListIn reads the traces of message txn of partition pid (uuid puuid) with
// List, and returns them with their row ids.
func ListIn(q sqlq.Q, pid int64, puuid, txn string) ([]store.Trace, []int64, error) {
	out := []store.Trace{}
	var ids []int64
	err := q.Each(List, []any{pid, txn}, func(row sqlq.Row) error {
		tr := store.Trace{PartitionID: puuid, TransactionID: txn}
		var id, createdAt int64
		if err := row.Scan(&id, &tr.ID, &tr.ConsumerGroup, &tr.EventType, &tr.Data, &tr.WorkerID,
			&createdAt); err != nil {
			return err
		}
		tr.CreatedAt = millis(createdAt)
		ids, out = append(ids, id), append(out, tr)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read traces: %w", err)
	}
	return out, ids, nil
}

// ScanByName reads a row of a name's page of traces: row id, uuid,
// transactionId, group, event type, data, worker, created at, partition
// uuid and name, queue, payload (NULL once the message is gone) and its seal
// (0 then).
func ScanByName(row sqlq.Row) (int64, store.Trace, error) {
	var tr store.Trace
	var id, createdAt int64
	err := row.Scan(&id, &tr.ID, &tr.TransactionID, &tr.ConsumerGroup, &tr.EventType, &tr.Data, &tr.WorkerID,
		&createdAt, &tr.PartitionID, &tr.Partition, &tr.Queue, &tr.Payload, &tr.Sealed)
	tr.CreatedAt = millis(createdAt)
	return id, tr, err
}

// ScanName reads a row of a page of name summaries: name, traces,
// messages, last seen.
func ScanName(row sqlq.Row) (store.TraceName, error) {
	var n store.TraceName
	var last int64
	err := row.Scan(&n.Name, &n.TraceCount, &n.MessageCount, &last)
	n.LastSeen = millis(last)
	return n, err
}

// FillNames fills the names of traces (ids[i] is out[i]'s row id) with
// namesOf, the engine's statement of the (trace id, name) pairs of the
// traces list, ordered by trace id then name, with list its argument.
func FillNames(q sqlq.Q, namesOf string, list any, ids []int64, out []store.Trace) error {
	if len(ids) == 0 {
		return nil
	}
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
		out[i].Names = []string{}
	}
	err := q.Each(namesOf, []any{list}, func(row sqlq.Row) error {
		var id int64
		var name string
		if err := row.Scan(&id, &name); err != nil {
			return err
		}
		i := at[id]
		out[i].Names = append(out[i].Names, name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read trace names: %w", err)
	}
	return nil
}

// Name is a trace name of a tenant.
type Name struct{ Tenant, Name string }

// Pair is a name tracing a message (partition row id, transactionId).
type Pair struct {
	Name
	Partition int64
	Txn       string
}

// Tally counts what a delete of traces took from each name: its traces,
// and the messages it traced (which may still have other traces of it).
type Tally struct {
	Traces map[Name]int
	Pairs  map[Pair]bool
}

// NewTally is an empty tally.
func NewTally() *Tally { return &Tally{Traces: map[Name]int{}, Pairs: map[Pair]bool{}} }

// Add counts one deleted trace_names row.
func (t *Tally) Add(p Pair) {
	t.Traces[p.Name]++
	t.Pairs[p] = true
}

// Names returns the names touched, in (tenant, name) order: the order
// their summaries are locked and updated in.
func (t *Tally) Names() []Name {
	return slices.SortedFunc(maps.Keys(t.Traces), func(a, b Name) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Name, b.Name))
	})
}

// Untraced returns per name how many messages it stops tracing: the pairs
// that still traced reports false for.
func (t *Tally) Untraced(still func(Pair) (bool, error)) (map[Name]int, error) {
	out := make(map[Name]int)
	for p := range t.Pairs {
		left, err := still(p)
		if err != nil {
			return nil, err
		}
		if !left {
			out[p.Name]++
		}
	}
	return out, nil
}

func millis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
