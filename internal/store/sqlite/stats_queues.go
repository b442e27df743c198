package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/newest"
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

	// A queue's partitions holding messages, newest last message first.
	sqlStatsNewestPartitions = `SELECT id, uuid, name, last_offset, cleared_offset FROM partitions
		WHERE queue_id = ? AND last_offset > cleared_offset ORDER BY last_offset DESC, id DESC LIMIT ? OFFSET ?`
	// A partition's messages between two offsets, newest first, along
	// messages_partition.
	sqlStatsNewestMessages = `SELECT seq, id, transaction_id, created_at FROM messages
		WHERE partition_id = ? AND seq > ? AND seq < ? ORDER BY seq DESC LIMIT ?`
	// Queue mode's lane of a partition, for the status of its messages.
	sqlStatsQueueModeLane = `SELECT cursor, lease_id IS NOT NULL AND lease_expires_at > ?, batch_end FROM lanes
		WHERE partition_id = ? AND consumer_group = '` + store.QueueMode + `'`
	// Dead letters of a partition between two offsets.
	sqlStatsDeadLetters = `SELECT DISTINCT message_seq FROM dead_letters
		WHERE partition_id = ? AND message_seq BETWEEN ? AND ?`
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

// newestPartition is a partition in the merge of StatsQueueMessages.
type newestPartition struct {
	cleared, id, last int64
	name, uuid        string
}

// newestMessage is a message read by the merge.
type newestMessage struct {
	created, seq int64
	id, txn      string
	part         *newestPartition
}

// newestSource merges a queue's partitions by offset: offsets are rowids
// of one table, so they order messages across partitions too.
type newestSource struct {
	ctx   context.Context
	tx    *sql.Tx
	queue int64
}

func (n *newestSource) Partitions(skip, limit int) ([]*newestPartition, error) {
	rows, err := n.tx.QueryContext(n.ctx, sqlStatsNewestPartitions, n.queue, limit, skip)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*newestPartition
	for rows.Next() {
		p := &newestPartition{}
		if err := rows.Scan(&p.id, &p.uuid, &p.name, &p.last, &p.cleared); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (n *newestSource) Head(p *newestPartition) newest.Key {
	return newest.Key{Time: p.last, Seq: p.last}
}

func (n *newestSource) Key(m newestMessage) newest.Key { return newest.Key{Time: m.seq, Seq: m.seq} }

func (n *newestSource) Read(reads []newest.Read[*newestPartition]) ([][]newestMessage, error) {
	out := make([][]newestMessage, len(reads))
	for i, r := range reads {
		rows, err := n.tx.QueryContext(n.ctx, sqlStatsNewestMessages, r.Partition.id, r.Partition.cleared,
			below(r.Below), r.Limit)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			m := newestMessage{part: r.Partition}
			if err := rows.Scan(&m.seq, &m.id, &m.txn, &m.created); err != nil {
				rows.Close()
				return nil, err
			}
			out[i] = append(out[i], m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StatsQueueMessages lists a page of a queue's newest messages, merging its
// partitions' logs (package newest), then judges each against queue mode's
// lane of its partition.
func (s *Store) StatsQueueMessages(ctx context.Context, p *store.StatsQueueMessagesParams) ([]store.QueueMessage, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	if p.Offset < 0 || p.Offset+limit > store.MaxStatsWindow {
		return nil, fmt.Errorf("sqlite: a page of messages ends at most %d messages down", store.MaxStatsWindow)
	}
	var out []store.QueueMessage
	err := s.read(ctx, "newest messages", func(tx *sql.Tx) error {
		var qid int64
		err := tx.QueryRowContext(ctx, sqlInspectQueueID, store.TenantOrDefault(p.Tenant), p.Queue).Scan(&qid)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		page, err := newest.Page[*newestPartition, newestMessage](&newestSource{ctx: ctx, tx: tx, queue: qid},
			p.Offset, limit)
		if err != nil {
			return err
		}
		status, err := messageStatuses(ctx, tx, page, p.Now.UnixMilli())
		if err != nil {
			return err
		}
		out = make([]store.QueueMessage, len(page))
		for i, m := range page {
			out[i] = store.QueueMessage{CreatedAt: fromMs(m.created), ID: m.id, Partition: m.part.name,
				PartitionID: m.part.uuid, Status: status[i], TransactionID: m.txn}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// messageStatuses judges each message against queue mode's lane of its
// partition (Queen's rule): dead-lettered by any group, else completed when
// the cursor has passed it, processing under a live lease, pending
// otherwise.
func messageStatuses(ctx context.Context, tx *sql.Tx, page []newestMessage, now int64) ([]store.MessageStatus, error) {
	type span struct{ lo, hi int64 }
	spans := map[*newestPartition]*span{}
	for _, m := range page {
		if sp, ok := spans[m.part]; ok {
			sp.lo, sp.hi = min(sp.lo, m.seq), max(sp.hi, m.seq)
		} else {
			spans[m.part] = &span{m.seq, m.seq}
		}
	}
	type laneState struct {
		cursor, batchEnd int64
		leased, found    bool
	}
	lanes := map[*newestPartition]laneState{}
	dead := map[*newestPartition]map[int64]bool{}
	for part, sp := range spans {
		var l laneState
		err := tx.QueryRowContext(ctx, sqlStatsQueueModeLane, now, part.id).Scan(&l.cursor, &l.leased, &l.batchEnd)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, err
		default:
			l.found = true
		}
		lanes[part] = l
		rows, err := tx.QueryContext(ctx, sqlStatsDeadLetters, part.id, sp.lo, sp.hi)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				rows.Close()
				return nil, err
			}
			if dead[part] == nil {
				dead[part] = map[int64]bool{}
			}
			dead[part][seq] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]store.MessageStatus, len(page))
	for i, m := range page {
		l := lanes[m.part]
		switch {
		case dead[m.part][m.seq]:
			out[i] = store.StatusDeadLetter
		case l.found && m.seq <= l.cursor:
			out[i] = store.StatusCompleted
		case l.found && l.leased && m.seq <= l.batchEnd:
			out[i] = store.StatusProcessing
		default:
			out[i] = store.StatusPending
		}
	}
	return out, nil
}

// below is the exclusive upper offset of a read: Below, or past every
// offset when it is 0.
func below(b int64) int64 {
	if b == 0 {
		return math.MaxInt64
	}
	return b
}
