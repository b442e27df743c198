package transfer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// ErrTargetNotEmpty means the target of a copy already holds queues, or
// rows of another entity a copy writes: a copy writes nothing into it.
var ErrTargetNotEmpty = errors.New("the target is not empty")

// Entities are what a copy counts, in the order its report lists them.
// Key/value state ("kv") and the features after it come from a queen-go
// source only.
var Entities = []string{"queues", "partitions", "messages", "consumer_groups", "dead_letters", "kv",
	"timers", "ephemeral_queues", "streams_queries", "streams_state", "webhooks"}

// Count is one entity's rows at the source and at the target.
type Count struct {
	Entity         string
	Source, Target int64
}

// Report is what a copy counted, one Count per entity of Entities.
type Report []Count

// Match reports whether every entity has as many rows at the target as at
// the source.
func (r Report) Match() bool {
	for _, c := range r {
		if c.Source != c.Target {
			return false
		}
	}
	return len(r) > 0
}

// Progress is how far a copy is: messages copied of the source's total.
type Progress struct {
	Messages, Total int64
	Elapsed         time.Duration
}

// Options tune a copy.
type Options struct {
	// Batch is how many rows one read and one write hold at most; 0 means
	// 1000. Memory is bounded by it, whatever the source holds.
	Batch int
	// Progress, when set, is called after every batch of messages.
	Progress func(Progress)
	// Writing, when set, is called once the target is found empty and the
	// source counted (total messages), before the first row is written:
	// the end of the preparation, the start of the bulk of the copy.
	Writing func(total int64)
}

// writing calls o.Writing.
func (o Options) writing(total int64) {
	if o.Writing != nil {
		o.Writing(total)
	}
}

func (o Options) batch() int {
	if o.Batch <= 0 {
		return 1000
	}
	return o.Batch
}

// CheckEmpty returns ErrTargetNotEmpty (wrapped, naming the entity and its
// count) when dst holds queues, or any row of another entity a copy writes:
// a target with only timers or key/value state would fail part-way through
// the copy, on the first key the two share.
func CheckEmpty(ctx context.Context, dst store.TransferStore) error {
	n, err := dst.TransferQueueCount(ctx)
	if err != nil {
		return fmt.Errorf("count the target's queues: %w", err)
	}
	entity := "queues"
	if n == 0 {
		c, err := dst.TransferCounts(ctx)
		if err != nil {
			return fmt.Errorf("count the target: %w", err)
		}
		for i, v := range countsOf(c) {
			if v > 0 {
				entity, n = strings.ReplaceAll(Entities[i], "_", " "), v
				break
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%w: it already holds %s (%d); a copy goes into an empty database only, and writes nothing here",
			ErrTargetNotEmpty, entity, n)
	}
	return nil
}

// counts turns store counts into a Report side.
func countsOf(c store.TransferCounts) []int64 {
	return []int64{c.Queues, c.Partitions, c.Messages, c.ConsumerGroups, c.DeadLetters, c.KV,
		c.Timers, c.EphemeralQueues, c.StreamsQueries, c.StreamsState, c.Webhooks}
}

func report(src, dst []int64) Report {
	r := make(Report, len(Entities))
	for i, e := range Entities {
		r[i] = Count{Entity: e, Source: src[i], Target: dst[i]}
	}
	return r
}

// Validate counts what a copy copies at the source and at the target.
func Validate(ctx context.Context, src, dst store.TransferStore) (Report, error) {
	s, err := src.TransferCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("count the source: %w", err)
	}
	d, err := dst.TransferCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("count the target: %w", err)
	}
	return report(countsOf(s), countsOf(d)), nil
}

// progress calls o.Progress after each batch.
type progress struct {
	o     Options
	start time.Time
	total int64
	done  int64
}

func (p *progress) add(n int) {
	p.done += int64(n)
	if p.o.Progress != nil {
		p.o.Progress(Progress{Messages: p.done, Total: p.total, Elapsed: time.Since(p.start)})
	}
}

// CopyEngine copies everything a migration copies from one engine of this
// broker into another, which must hold no queue. Every group keeps its
// position in every partition; leases are released. It returns the counts
// at both ends.
func CopyEngine(ctx context.Context, src, dst store.TransferStore, o Options) (Report, error) {
	if err := CheckEmpty(ctx, dst); err != nil {
		return nil, err
	}
	total, err := src.TransferCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("count the source: %w", err)
	}
	o.writing(total.Messages)
	pr := &progress{o: o, start: time.Now(), total: total.Messages}
	err = src.ExportQueues(ctx, func(q store.TransferQueue) error {
		return copyEngineQueue(ctx, src, dst, q, o.batch(), pr)
	})
	if err != nil {
		return nil, err
	}
	if err := copyFeatures(ctx, src, dst, o.batch()); err != nil {
		return nil, err
	}
	return Validate(ctx, src, dst)
}

// copyFeatures copies the state of the broker's own features, each row as
// it was (versions, ids, seals and times kept), a bounded page at a time.
func copyFeatures(ctx context.Context, src, dst store.TransferStore, batch int) error {
	steps := []func() error{
		func() error {
			return copyPages(batch, "key/value state", func(a store.TransferKV, n int) ([]store.TransferKV, error) {
				return src.ExportKV(ctx, a, n)
			}, func(rows []store.TransferKV) error { return dst.ImportKV(ctx, rows) })
		},
		func() error {
			return copyPages(batch, "timers", func(a store.TransferTimer, n int) ([]store.TransferTimer, error) {
				return src.ExportTimers(ctx, a.ID, n)
			}, func(rows []store.TransferTimer) error { return dst.ImportTimers(ctx, rows) })
		},
		func() error {
			return copyPages(batch, "ephemeral queues", func(a store.TransferEphemeralQueue, n int) ([]store.TransferEphemeralQueue, error) {
				return src.ExportEphemeralQueues(ctx, a, n)
			}, func(rows []store.TransferEphemeralQueue) error { return dst.ImportEphemeralQueues(ctx, rows) })
		},
		func() error {
			return copyPages(batch, "stream queries", func(a store.TransferStreamsQuery, n int) ([]store.TransferStreamsQuery, error) {
				return src.ExportStreamsQueries(ctx, a.ID, n)
			}, func(rows []store.TransferStreamsQuery) error { return dst.ImportStreamsQueries(ctx, rows) })
		},
		func() error {
			return copyPages(batch, "stream state", func(a store.TransferStreamsState, n int) ([]store.TransferStreamsState, error) {
				return src.ExportStreamsState(ctx, a, n)
			}, func(rows []store.TransferStreamsState) error { return dst.ImportStreamsState(ctx, rows) })
		},
		func() error {
			return copyPages(batch, "stream state sizes", func(a store.TransferStreamsShard, n int) ([]store.TransferStreamsShard, error) {
				return src.ExportStreamsShards(ctx, a, n)
			}, func(rows []store.TransferStreamsShard) error { return dst.ImportStreamsShards(ctx, rows) })
		},
		func() error {
			return copyPages(batch, "webhooks", func(a store.TransferWebhook, n int) ([]store.TransferWebhook, error) {
				return src.ExportWebhooks(ctx, a, n)
			}, func(rows []store.TransferWebhook) error { return dst.ImportWebhooks(ctx, rows) })
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// copyPages reads pages of up to batch rows, each after the last row of
// the one before, and writes each before reading the next.
func copyPages[T any](batch int, what string, read func(after T, limit int) ([]T, error), write func([]T) error) error {
	var after T
	for {
		rows, err := read(after, batch)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		if err := write(rows); err != nil {
			return fmt.Errorf("write %s: %w", what, err)
		}
		if len(rows) < batch {
			return nil
		}
		after = rows[len(rows)-1]
	}
}

func copyEngineQueue(ctx context.Context, src, dst store.TransferStore, q store.TransferQueue, batch int, pr *progress) error {
	if err := dst.ImportQueue(ctx, q); err != nil {
		return fmt.Errorf("queue %q: %w", q.Name, err)
	}
	ref := q.TransferQueueRef
	groups, err := src.ExportGroups(ctx, ref)
	if err != nil {
		return err
	}
	for i := range groups {
		groups[i].Consumed = map[string]int64{}
	}
	err = src.ExportPartitions(ctx, ref, func(p store.TransferPartition) error {
		id, err := dst.ImportPartition(ctx, ref, p)
		if err != nil {
			return fmt.Errorf("queue %q partition %q: %w", q.Name, p.Name, err)
		}
		for after := int64(0); ; {
			ms, err := src.ExportMessages(ctx, p.ID, after, batch)
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				break
			}
			for _, g := range groups {
				cursor := g.Cursors[p.ID]
				for _, m := range ms {
					if m.Offset <= cursor {
						g.Consumed[id]++
					}
				}
			}
			if err := dst.ImportMessages(ctx, id, ms); err != nil {
				return fmt.Errorf("queue %q partition %q: %w", q.Name, p.Name, err)
			}
			pr.add(len(ms))
			if len(ms) < batch {
				break
			}
			after = ms[len(ms)-1].Offset
		}
		for after := int64(0); ; {
			ds, err := src.ExportDeadLetters(ctx, p.ID, after, batch)
			if err != nil {
				return err
			}
			if len(ds) == 0 {
				break
			}
			if err := dst.ImportDeadLetters(ctx, id, ds); err != nil {
				return fmt.Errorf("queue %q partition %q: %w", q.Name, p.Name, err)
			}
			after = ds[len(ds)-1].ID
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range groups {
		g.Cursors = nil
		if err := dst.ImportGroup(ctx, ref, g); err != nil {
			return fmt.Errorf("queue %q group %q: %w", q.Name, g.Name, err)
		}
	}
	return nil
}

// CopyQueen copies a database of Queen's broker into an engine of this one,
// which must hold no queue: queues with their options, partitions with
// their ids, messages in Queen's order, every consumer group's position in
// every partition (from its subscription where it never popped one), the
// DLQ. Leases live at the source are released. It returns the counts at
// both ends; the source's consumer groups are the (queue, group) pairs it
// has positions or a subscription for.
func CopyQueen(ctx context.Context, r *QueenReader, dst store.TransferStore, o Options) (Report, error) {
	if err := CheckEmpty(ctx, dst); err != nil {
		return nil, err
	}
	if o.Batch > 0 && r.Batch <= 0 {
		r.Batch = o.Batch
	}
	src, err := r.Counts(ctx)
	if err != nil {
		return nil, err
	}
	subs, err := r.Subscriptions(ctx)
	if err != nil {
		return nil, err
	}
	o.writing(src.Messages)
	pr := &progress{o: o, start: time.Now(), total: src.Messages}
	var groups int64
	err = r.Queues(ctx, func(q QueenQueue) error {
		n, err := copyQueenQueue(ctx, r, dst, q, subs, pr)
		groups += n
		return err
	})
	if err != nil {
		return nil, err
	}
	d, err := dst.TransferCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("count the target: %w", err)
	}
	return report([]int64{src.Queues, src.Partitions, src.Messages, groups, src.DeadLetters, 0, 0, 0, 0, 0, 0}, countsOf(d)), nil
}

func copyQueenQueue(ctx context.Context, r *QueenReader, dst store.TransferStore, q QueenQueue,
	subs map[[2]string]QueenSubscription, pr *progress) (int64, error) {
	ref := store.TransferQueueRef{Tenant: store.DefaultTenant, Name: q.Name}
	if err := dst.ImportQueue(ctx, store.TransferQueue{TransferQueueRef: ref, Namespace: q.Namespace, Task: q.Task,
		Options: q.Options, CreatedAt: q.CreatedAt}); err != nil {
		return 0, fmt.Errorf("queue %q: %w", q.Name, err)
	}
	// Positions are per partition and group; the groups of the queue are
	// those with a position or a subscription.
	positions := map[string]map[string]QueenPosition{} // group → partition → position
	var order []string
	addGroup := func(g string) {
		if _, ok := positions[g]; !ok {
			positions[g] = map[string]QueenPosition{}
			order = append(order, g)
		}
	}
	if err := r.Positions(ctx, q.ID, func(p QueenPosition) error {
		addGroup(p.Group)
		positions[p.Group][p.PartitionID] = p
		return nil
	}); err != nil {
		return 0, err
	}
	for k := range subs {
		if k[1] == q.Name {
			addGroup(k[0])
		}
	}
	consumed := make(map[string]map[string]int64, len(order))
	for _, g := range order {
		consumed[g] = map[string]int64{}
	}
	partIDs := map[string]string{} // Queen's partition id → the target's
	err := r.Partitions(ctx, q.ID, func(p QueenPartition) error {
		id, err := dst.ImportPartition(ctx, ref, store.TransferPartition{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt})
		if err != nil {
			return fmt.Errorf("queue %q partition %q: %w", q.Name, p.Name, err)
		}
		partIDs[p.ID] = id
		batch := make([]store.TransferMessage, 0, r.batch())
		return r.Messages(ctx, p.ID, func(ms []QueenMessage) error {
			batch = batch[:0]
			for _, m := range ms {
				batch = append(batch, store.TransferMessage{ID: m.ID, TransactionID: m.TransactionID, TraceID: m.TraceID,
					ProducerSub: m.ProducerSub, Payload: m.Payload, Sealed: m.Seal(), CreatedAt: m.CreatedAt})
			}
			for _, g := range order {
				pos, ok := positions[g][p.ID]
				if !ok {
					pos = QueenPosition{PartitionID: p.ID, Group: g, Empty: true}
				}
				var sub *QueenSubscription
				if s, ok := subs[[2]string{g, q.Name}]; ok {
					sub = &s
				}
				for _, m := range ms {
					if !pos.After(m, sub) {
						consumed[g][id]++
					}
				}
			}
			if err := dst.ImportMessages(ctx, id, batch); err != nil {
				return fmt.Errorf("queue %q partition %q: %w", q.Name, p.Name, err)
			}
			pr.add(len(ms))
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	for _, g := range order {
		tg := store.TransferGroup{Name: g, CreatedAt: q.CreatedAt, Consumed: consumed[g]}
		if s, ok := subs[[2]string{g, q.Name}]; ok && s.Mode == "new" {
			tg.SubscribedFrom = s.At
		}
		if err := dst.ImportGroup(ctx, ref, tg); err != nil {
			return 0, fmt.Errorf("queue %q group %q: %w", q.Name, g, err)
		}
	}
	err = r.DeadLetters(ctx, q.ID, func(ds []QueenDeadLetter) error {
		byPart := map[string][]store.TransferDeadLetter{}
		for _, d := range ds {
			g := d.Group
			if g == "" {
				g = store.QueueMode
			}
			byPart[d.PartitionID] = append(byPart[d.PartitionID], store.TransferDeadLetter{TransactionID: d.Message.TransactionID,
				Group: g, Error: d.ErrorMessage, RetryCount: d.RetryCount, FailedAt: d.FailedAt})
		}
		for pid, list := range byPart {
			id, ok := partIDs[pid]
			if !ok {
				return fmt.Errorf("queue %q: a dead letter names partition %s, which the queue does not have", q.Name, pid)
			}
			if err := dst.ImportDeadLetters(ctx, id, list); err != nil {
				return fmt.Errorf("queue %q: %w", q.Name, err)
			}
		}
		return nil
	})
	return int64(len(order)), err
}

// DefaultSchema is the schema both brokers use by default.
const DefaultSchema = "queen"
