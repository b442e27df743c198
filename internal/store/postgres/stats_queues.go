package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/newest"
	"github.com/queen-go/queen/internal/store/statsql"
)

// Live per-queue figures for the status routes and the Prometheus
// collector, from the same offsets and cursors as the control plane (see
// inspect.go).
const (
	// Every queue of every tenant ($1 now) with its pending, processing
	// and dead-letter figures over its partitions.
	sqlStatsQueueFigures = `SELECT q.id, q.tenant, q.name, count(pf.total), COALESCE(sum(pf.pending), 0)::bigint,
			COALESCE(sum(pf.processing), 0)::bigint, COALESCE(sum(pf.dead), 0)::bigint
		FROM queues q LEFT JOIN LATERAL (
			SELECT ` + sqlPartitionColumnsAs + `, ` + sqlDeadLetterCount + ` AS dead
			FROM partitions p ` + sqlPartitionFigures + `
			WHERE p.queue_id = q.id) pf ON true
		GROUP BY q.id`
	// The unread messages of the group furthest behind on queue $2.
	sqlStatsGroupLag = `SELECT COALESCE(max(lag), 0)::bigint FROM (SELECT sum(x.lag) AS lag
		FROM partitions p JOIN lanes l ON l.partition_id = p.id ` + sqlLaneFigures + `
		WHERE p.queue_id = $2 GROUP BY l.consumer_group) g`
	// The oldest message some lane of queue $1 has still to read: one
	// lookup per lane behind.
	sqlStatsOldestUnread = `SELECT min(` + sqlOldestUnread + `)
		FROM partitions p JOIN lanes l ON l.partition_id = p.id
		WHERE p.queue_id = $1 AND p.last_offset > greatest(l.cursor, p.cleared_offset)`
	// Some group has joined the queue (and so has a lane on every
	// partition).
	sqlStatsHasLanes = `SELECT EXISTS (SELECT 1 FROM consumer_groups WHERE queue_id = $1)`
	// The oldest message of queue $1 (when no group reads it): one lookup
	// per partition.
	sqlStatsOldestMessage = `SELECT min((SELECT m.created_at FROM messages m
			WHERE m.partition_id = p.id AND m.seq > p.cleared_offset ORDER BY m.seq LIMIT 1))
		FROM partitions p WHERE p.queue_id = $1 AND p.last_offset > p.cleared_offset`

	// Live leases of a tenant ($2), or of one queue ($3), along lanes_lease.
	sqlStatsLeases = `SELECT count(DISTINCT l.lease_id), count(*)
		FROM lanes l JOIN partitions p ON p.id = l.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE l.lease_id IS NOT NULL AND l.lease_expires_at > $1 AND q.tenant = $2 AND ($3 = '' OR q.name = $3)`

	// A queue's partitions holding messages, newest last message first.
	sqlStatsNewestPartitions = `SELECT id, uuid, name, last_offset, cleared_offset, last_message_at FROM partitions
		WHERE queue_id = $1 AND last_offset > cleared_offset ORDER BY last_message_at DESC, id DESC
		LIMIT $2 OFFSET $3`
	// A partition's messages between two offsets, newest first, along the
	// primary key.
	sqlStatsNewestMessages = `SELECT seq, id, transaction_id, created_at FROM messages
		WHERE partition_id = $1 AND seq > $2 AND seq < $3 ORDER BY seq DESC LIMIT $4`
	// Queue mode's lane of a partition, for the status of its messages.
	sqlStatsQueueModeLane = `SELECT cursor, lease_id IS NOT NULL AND lease_expires_at > $1, batch_end FROM lanes
		WHERE partition_id = $2 AND consumer_group = '` + store.QueueMode + `'`
	// Dead letters of a partition between two offsets.
	sqlStatsDeadLetters = `SELECT DISTINCT message_seq FROM dead_letters
		WHERE partition_id = $1 AND message_seq BETWEEN $2 AND $3`
)

// StatsLeases counts live leases.
func (s *Store) StatsLeases(ctx context.Context, p *store.StatsLeasesParams) (*store.LeaseSummary, error) {
	out := &store.LeaseSummary{}
	err := s.inReadTx(ctx, "count leases", func(t *txn) error {
		return t.tx.QueryRow(t.ctx, sqlStatsLeases, p.Now.UnixMilli(), store.TenantOrDefault(p.Tenant),
			p.Queue).Scan(&out.Leases, &out.Lanes)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StatsQueueGauges reports the deepest queues of every tenant: every
// queue's figures are summed (as QueueList does), then the lags and the
// oldest unread message are looked up for the deepest p.Limit only.
func (s *Store) StatsQueueGauges(ctx context.Context, p *store.StatsQueueGaugesParams) (*store.QueueGauges, error) {
	limit := store.PageLimit(p.Limit)
	now := p.Now.UnixMilli()
	out := &store.QueueGauges{}
	err := s.inReadTx(ctx, "queue gauges", func(t *txn) error {
		*out = store.QueueGauges{}
		rows, _ := t.tx.Query(t.ctx, sqlStatsQueueFigures, now)
		var all []statsql.GaugeRow
		var g statsql.GaugeRow
		if _, err := pgx.ForEachRow(rows, []any{&g.ID, &g.Tenant, &g.Queue, &g.Partitions, &g.Pending,
			&g.Processing, &g.DeadLetter}, func() error {
			all = append(all, g)
			return nil
		}); err != nil {
			return err
		}
		top := statsql.RankGauges(out, all, limit)
		// Three lookups per queue, sent together.
		var b pgx.Batch
		for _, g := range top {
			b.Queue(sqlStatsGroupLag, now, g.ID)
			b.Queue(sqlStatsHasLanes, g.ID)
			b.Queue(sqlStatsOldestUnread, g.ID)
			b.Queue(sqlStatsOldestMessage, g.ID)
		}
		res := t.tx.SendBatch(t.ctx, &b)
		defer res.Close()
		for _, g := range top {
			var lanes bool
			var unread, oldest *int64
			if err := res.QueryRow().Scan(&g.GroupLag); err != nil {
				return err
			}
			if err := res.QueryRow().Scan(&lanes); err != nil {
				return err
			}
			if err := res.QueryRow().Scan(&unread); err != nil {
				return err
			}
			if err := res.QueryRow().Scan(&oldest); err != nil {
				return err
			}
			if lanes {
				g.OldestUnread = fromMsPtr(unread)
			} else {
				g.OldestUnread = fromMsPtr(oldest)
			}
			out.Queues = append(out.Queues, g.QueueGauge)
		}
		return res.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newestPartition is a partition in the merge of StatsQueueMessages.
type newestPartition struct {
	cleared, id, last, lastAt int64
	name, uuid                string
}

// newestMessage is a message read by the merge.
type newestMessage struct {
	created, seq int64
	id, txn      string
	part         *newestPartition
}

// newestSource merges a queue's partitions by createdAt (partition and
// offset break ties). Offsets are per partition here; a partition's
// last_message_at is the latest createdAt it has stored, so it bounds its
// newest message.
type newestSource struct {
	t     *txn
	queue int64
}

func (n *newestSource) Partitions(skip, limit int) ([]*newestPartition, error) {
	rows, _ := n.t.tx.Query(n.t.ctx, sqlStatsNewestPartitions, n.queue, limit, skip)
	var out []*newestPartition
	var p newestPartition
	_, err := pgx.ForEachRow(rows, []any{&p.id, &p.uuid, &p.name, &p.last, &p.cleared, &p.lastAt}, func() error {
		c := p
		out = append(out, &c)
		return nil
	})
	return out, err
}

func (n *newestSource) Head(p *newestPartition) newest.Key {
	return newest.Key{Time: p.lastAt, Part: p.id, Seq: p.last}
}

func (n *newestSource) Key(m newestMessage) newest.Key {
	return newest.Key{Time: m.created, Part: m.part.id, Seq: m.seq}
}

func (n *newestSource) Read(reads []newest.Read[*newestPartition]) ([][]newestMessage, error) {
	var b pgx.Batch
	for _, r := range reads {
		b.Queue(sqlStatsNewestMessages, r.Partition.id, r.Partition.cleared, below(r.Below), r.Limit)
	}
	res := n.t.tx.SendBatch(n.t.ctx, &b)
	defer res.Close()
	out := make([][]newestMessage, len(reads))
	for i, r := range reads {
		rows, _ := res.Query()
		m := newestMessage{part: r.Partition}
		if _, err := pgx.ForEachRow(rows, []any{&m.seq, &m.id, &m.txn, &m.created}, func() error {
			out[i] = append(out[i], m)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return out, res.Close()
}

// below is the exclusive upper offset of a read: Below, or past every
// offset when it is 0.
func below(b int64) int64 {
	if b == 0 {
		return math.MaxInt64
	}
	return b
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
		return nil, fmt.Errorf("postgres: a page of messages ends at most %d messages down", store.MaxStatsWindow)
	}
	var out []store.QueueMessage
	err := s.inReadTx(ctx, "newest messages", func(t *txn) error {
		var qid int64
		err := t.tx.QueryRow(t.ctx, sqlQueueIDByName, store.TenantOrDefault(p.Tenant), p.Queue).Scan(&qid)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		page, err := newest.Page[*newestPartition, newestMessage](&newestSource{t: t, queue: qid}, p.Offset, limit)
		if err != nil {
			return err
		}
		status, err := messageStatuses(t, page, p.Now.UnixMilli())
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
// otherwise. Two lookups per partition of the page, in one round trip.
func messageStatuses(t *txn, page []newestMessage, now int64) ([]store.MessageStatus, error) {
	type span struct{ lo, hi int64 }
	spans := map[*newestPartition]*span{}
	var parts []*newestPartition
	for _, m := range page {
		if sp, ok := spans[m.part]; ok {
			sp.lo, sp.hi = min(sp.lo, m.seq), max(sp.hi, m.seq)
		} else {
			spans[m.part] = &span{m.seq, m.seq}
			parts = append(parts, m.part)
		}
	}
	var b pgx.Batch
	for _, part := range parts {
		b.Queue(sqlStatsQueueModeLane, now, part.id)
		b.Queue(sqlStatsDeadLetters, part.id, spans[part].lo, spans[part].hi)
	}
	res := t.tx.SendBatch(t.ctx, &b)
	defer res.Close()
	type laneState struct {
		cursor, batchEnd int64
		leased, found    bool
	}
	lanes := map[*newestPartition]laneState{}
	dead := map[*newestPartition]map[int64]bool{}
	for _, part := range parts {
		var l laneState
		err := res.QueryRow().Scan(&l.cursor, &l.leased, &l.batchEnd)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, err
		default:
			l.found = true
		}
		lanes[part] = l
		rows, _ := res.Query()
		var seq int64
		if _, err := pgx.ForEachRow(rows, []any{&seq}, func() error {
			if dead[part] == nil {
				dead[part] = map[int64]bool{}
			}
			dead[part][seq] = true
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if err := res.Close(); err != nil {
		return nil, err
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
