package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/groupsql"
	"github.com/queen-go/queen/internal/store/seek"
)

// Consumer groups as the control plane sees them (see inspect.go), and the
// writes that move them: seek, delete, subscription.
const (
	// A page of (group, queue) pairs ($2 tenant, $3 limit, $4 offset) with
	// their figures over the queue's lanes.
	sqlGroupList = `WITH gs AS MATERIALIZED (
			SELECT g.queue_id, g.consumer_group, g.subscribed_from, g.created_at, q.name AS queue
			FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
			WHERE q.tenant = $2 ORDER BY g.consumer_group, q.name LIMIT $3 OFFSET $4)
		SELECT gs.queue_id, gs.consumer_group, gs.queue, gs.subscribed_from, gs.created_at,
			COALESCE(sum(lf.consumed), 0), COALESCE(sum(lf.lag), 0), count(*) FILTER (WHERE lf.lag > 0),
			min(lf.oldest)
		FROM gs LEFT JOIN LATERAL (
			SELECT x.consumed, x.lag, CASE WHEN x.lag > 0 THEN ` + sqlOldestUnread + ` END AS oldest
			FROM partitions p JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = gs.consumer_group
			` + sqlLaneFigures + `
			WHERE p.queue_id = gs.queue_id) lf ON true
		GROUP BY gs.queue_id, gs.consumer_group, gs.queue, gs.subscribed_from, gs.created_at
		ORDER BY gs.consumer_group, gs.queue`
	// The live leases of the listed pairs ($2 queue ids, $3 groups), at
	// most MaxGroupMembers per pair.
	sqlGroupMembers = `SELECT queue_id, consumer_group, name, uuid, lease_id, lease_expires_at FROM (
			SELECT p.queue_id, l.consumer_group, p.name, p.uuid, l.lease_id, l.lease_expires_at,
				row_number() OVER (PARTITION BY p.queue_id, l.consumer_group ORDER BY p.name) AS n
			FROM unnest($2::bigint[], $3::text[]) AS u(queue_id, grp)
			JOIN partitions p ON p.queue_id = u.queue_id
			JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = u.grp
			WHERE l.lease_id IS NOT NULL AND l.lease_expires_at > $1) x
		WHERE n <= $4 ORDER BY queue_id, consumer_group, name`

	// sqlLaneColumns are the columns of a store.LaneInfo.
	sqlLaneColumns = `q.name, p.name, p.uuid, l.consumer_group, x.consumed, x.lag, x.proc,
			CASE WHEN l.lease_id IS NOT NULL AND l.lease_expires_at > $1 THEN l.lease_id ELSE '' END,
			CASE WHEN l.lease_id IS NOT NULL AND l.lease_expires_at > $1 THEN l.lease_expires_at ELSE 0 END,
			l.last_claimed_at`
	// A page of one group's lanes ($2 tenant, $3 group, $4 limit, $5
	// offset), by queue then partition name.
	sqlGroupGet = `WITH page AS MATERIALIZED (
			SELECT p.id AS pid, l.consumer_group AS grp
			FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
			JOIN partitions p ON p.queue_id = q.id
			JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = g.consumer_group
			WHERE q.tenant = $2 AND g.consumer_group = $3
			ORDER BY q.name, p.name LIMIT $4 OFFSET $5)
		SELECT ` + sqlLaneColumns + `, CASE WHEN x.lag > 0 THEN ` + sqlOldestUnread + ` END
		FROM page JOIN partitions p ON p.id = page.pid JOIN queues q ON q.id = p.queue_id
		JOIN lanes l ON l.partition_id = page.pid AND l.consumer_group = page.grp
		` + sqlLaneFigures + `
		ORDER BY q.name, p.name`
	// Lanes of every group of the tenant ($2) whose oldest unread message
	// was created before $3, most behind first ($4 limit, $5 offset).
	sqlGroupLagging = `WITH c AS MATERIALIZED (
			SELECT p.id AS pid, l.consumer_group AS grp, ` + sqlOldestUnread + ` AS oldest
			FROM queues q JOIN partitions p ON p.queue_id = q.id JOIN lanes l ON l.partition_id = p.id
			WHERE q.tenant = $2 AND p.last_offset > greatest(l.cursor, p.cleared_offset)),
		page AS MATERIALIZED (
			SELECT c.* FROM c JOIN partitions p ON p.id = c.pid JOIN queues q ON q.id = p.queue_id
			WHERE c.oldest < $3
			ORDER BY c.oldest, q.name, p.name, c.grp LIMIT $4 OFFSET $5)
		SELECT ` + sqlLaneColumns + `, page.oldest
		FROM page JOIN partitions p ON p.id = page.pid JOIN queues q ON q.id = p.queue_id
		JOIN lanes l ON l.partition_id = page.pid AND l.consumer_group = page.grp
		` + sqlLaneFigures + `
		ORDER BY page.oldest, q.name, p.name, l.consumer_group`

	// Seek and delete: the queue ($1 tenant, $2 name), share-locked so that
	// it is not deleted meanwhile.
	sqlGroupQueue = `SELECT id, EXISTS (SELECT 1 FROM consumer_groups g WHERE g.queue_id = q.id AND g.consumer_group = $3)
		FROM queues q WHERE tenant = $1 AND name = $2 FOR SHARE`
	// The partitions a seek moves ($1 queue id, $2 one name or '').
	sqlSeekPartitions = `SELECT id, last_offset, cleared_offset, last_message_at FROM partitions
		WHERE queue_id = $1 AND ($2 = '' OR name = $2) ORDER BY id`
	// One step of the binary searches (package seek): the first message
	// of each partition in [from, to].
	sqlSeekProbe = `SELECT COALESCE(m.seq, 0), COALESCE(m.created_at, 0), m.seq IS NOT NULL
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS u(pid, lo, hi, i)
		LEFT JOIN LATERAL (SELECT seq, created_at FROM messages
			WHERE partition_id = u.pid AND seq >= u.lo AND seq <= u.hi ORDER BY seq LIMIT 1) m ON true
		ORDER BY u.i`
	// A group joining with a seek: its lanes on every partition ($1 queue
	// id, $2 group), which the seek then positions. Under the join lock
	// (sqlJoinLock), as a pop's join.
	sqlSeekJoinLanes = `INSERT INTO lanes (partition_id, consumer_group, queue_id, ready)
		SELECT id, $2, queue_id, last_offset > cleared_offset FROM partitions WHERE queue_id = $1 ORDER BY id
		ON CONFLICT DO NOTHING`
	// The group's lanes on the partitions ($1 ids, $2 group), locked in key
	// order as acks lock them (pops skip locked lanes).
	sqlSeekLanesLock = `SELECT 1 FROM lanes WHERE partition_id = ANY($1::bigint[]) AND consumer_group = $2
		ORDER BY partition_id FOR UPDATE`
	// Move them: to the partition's end where the target is -1, else to the
	// target (never below the cleared offset). A push in flight on the
	// partition sets ready again when it marks its lanes, after this
	// commits (it waits for the lane locks).
	sqlSeekLanes = `UPDATE lanes l SET cursor = t.c, lease_id = NULL, lease_expires_at = 0, batch_end = 0,
			head_attempts = 0, ready = p.last_offset > t.c
		FROM unnest($1::bigint[], $2::bigint[]) AS u(pid, target)
		JOIN partitions p ON p.id = u.pid
		CROSS JOIN LATERAL (SELECT CASE WHEN u.target < 0 THEN p.last_offset
			ELSE least(greatest(u.target, p.cleared_offset), p.last_offset) END AS c) t
		WHERE l.partition_id = u.pid AND l.consumer_group = $3`
	// The createdAt of the last message at or before a cursor.
	sqlSeekCursorAt = `SELECT m.created_at FROM partitions p JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = $2
		JOIN messages m ON m.partition_id = p.id AND m.seq <= l.cursor AND m.seq > p.cleared_offset
		WHERE p.id = $1 ORDER BY m.seq DESC LIMIT 1`

	// Deleting a group's lanes on a queue ($1 queue id, $2 group), locked
	// in key order first.
	sqlGroupLanesDelete = `DELETE FROM lanes WHERE (partition_id, consumer_group) IN (
			SELECT l.partition_id, l.consumer_group FROM partitions p
			JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = $2
			WHERE p.queue_id = $1 ORDER BY l.partition_id FOR UPDATE OF l)`
)

// GroupList lists a page of (group, queue) pairs with their figures, and
// the live leases of all of them in one statement.
func (s *Store) GroupList(ctx context.Context, p *store.GroupListParams) ([]store.GroupQueue, error) {
	var out []store.GroupQueue
	err := s.inReadTx(ctx, "list consumer groups", func(t *txn) error {
		var err error
		out, err = groupsql.ListIn(t.q(), sqlGroupList, p, t.groupMembers)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// groupMembers fills the live leases of listed pairs (qids[i] is out[i]'s
// queue).
func (t *txn) groupMembers(now int64, qids []int64, out []store.GroupQueue) error {
	index := make(map[groupOf]int, len(out))
	groups := make([]string, len(out))
	for i := range out {
		index[groupOf{qids[i], out[i].ConsumerGroup}] = i
		groups[i] = out[i].ConsumerGroup
	}
	rows, _ := t.tx.Query(t.ctx, sqlGroupMembers, now, qids, groups, store.MaxGroupMembers)
	var m store.GroupMember
	var qid, exp int64
	var grp string
	_, err := pgx.ForEachRow(rows, []any{&qid, &grp, &m.Partition, &m.PartitionID, &m.LeaseID, &exp}, func() error {
		m.LeaseExpiresAt = fromMs(exp)
		i := index[groupOf{qid, grp}]
		out[i].Members = append(out[i].Members, m)
		return nil
	})
	return err
}

// groupOf names a group on a queue.
type groupOf struct {
	queueID int64
	group   string
}

// GroupGet lists a page of one group's lanes.
func (s *Store) GroupGet(ctx context.Context, p *store.GroupGetParams) ([]store.LaneInfo, error) {
	var out []store.LaneInfo
	err := s.inReadTx(ctx, "describe consumer group", func(t *txn) error {
		var err error
		out, err = groupsql.GetIn(t.q(), sqlGroupGet, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GroupLagging lists a page of lanes behind by more than p.MinLag.
func (s *Store) GroupLagging(ctx context.Context, p *store.GroupLaggingParams) ([]store.LaneInfo, error) {
	var out []store.LaneInfo
	err := s.inReadTx(ctx, "list lagging lanes", func(t *txn) error {
		var err error
		out, err = groupsql.LaggingIn(t.q(), sqlGroupLagging, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GroupSeek moves a group's cursors on a queue or one of its partitions.
func (s *Store) GroupSeek(ctx context.Context, p *store.GroupSeekParams) (*store.GroupSeekResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out := &store.GroupSeekResult{}
	err := s.inTx(ctx, "seek consumer group", func(t *txn) error {
		*out = store.GroupSeekResult{}
		var qid int64
		var joined bool
		err := t.tx.QueryRow(t.ctx, sqlGroupQueue, tenant, p.Queue, p.Group).Scan(&qid, &joined)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return fmt.Errorf("lock queue: %w", err)
		}
		if p.Partition != "" {
			var one int64
			err := t.tx.QueryRow(t.ctx, `SELECT id FROM partitions WHERE queue_id = $1 AND name = $2`, qid,
				p.Partition).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrPartitionNotFound
			}
			if err != nil {
				return err
			}
		}
		partition := p.Partition
		if !joined {
			// The group joins the queue here: record where it starts (the
			// seek's point, as subscriptionFrom would) and give it a lane
			// on every partition, all of which the seek then positions.
			from := p.Target.Time.UnixMilli()
			if p.Target.ToEnd {
				from = p.Now.UnixMilli()
			}
			b := &pgx.Batch{}
			b.Queue(sqlJoinLock, qid)
			b.Queue(sqlJoinGroup, qid, p.Group, max(from, 0), p.Now.UnixMilli())
			b.Queue(sqlSeekJoinLanes, qid, p.Group)
			if err := t.execBatch(b); err != nil {
				return fmt.Errorf("join group: %w", err)
			}
			out.Joined, partition = true, ""
		}
		pids, targets, err := t.seekTargets(qid, partition, p.Target)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlSeekLanesLock, pids, p.Group)
		if err := t.execBatch(b); err != nil {
			return fmt.Errorf("lock lanes: %w", err)
		}
		tag, err := t.tx.Exec(t.ctx, sqlSeekLanes, pids, targets, p.Group)
		if err != nil {
			return fmt.Errorf("move cursors: %w", err)
		}
		out.Lanes = int(tag.RowsAffected())
		if p.Partition != "" && len(pids) == 1 {
			var at int64
			err := t.tx.QueryRow(t.ctx, sqlSeekCursorAt, pids[0], p.Group).Scan(&at)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			out.CursorAt = fromMs(at)
		}
		t.wakeAfterCommit(store.Wake{Key: store.QueueKey(tenant, p.Queue)}) // every poll of the group
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// seekTargets returns the partitions of queue qid (or its one named
// partition) and where target puts a cursor on each: -1 for the end, else
// an offset (package seek's binary search, one statement per step for all
// partitions).
func (t *txn) seekTargets(qid int64, partition string, target store.SeekTarget) ([]int64, []int64, error) {
	rows, _ := t.tx.Query(t.ctx, sqlSeekPartitions, qid, partition)
	var pids, targets []int64
	var ranges []seek.Range
	var slots []int
	ts := target.Time.UnixMilli()
	var id, last, cleared, lastAt int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &last, &cleared, &lastAt}, func() error {
		pids = append(pids, id)
		switch {
		case target.ToEnd || lastAt <= ts:
			targets = append(targets, -1)
		default:
			slots = append(slots, len(targets))
			targets = append(targets, cleared)
			ranges = append(ranges, seek.Range{Partition: id, Lo: cleared, Hi: last})
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("read partitions: %w", err)
	}
	if len(ranges) == 0 {
		return pids, targets, nil
	}
	cursors, err := seek.Cursors(ranges, ts, func(parts, from, to []int64) ([]seek.Found, error) {
		rows, _ := t.tx.Query(t.ctx, sqlSeekProbe, parts, from, to)
		found := make([]seek.Found, 0, len(parts))
		var f seek.Found
		if _, err := pgx.ForEachRow(rows, []any{&f.Offset, &f.CreatedAt, &f.OK}, func() error {
			found = append(found, f)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("seek: %w", err)
		}
		return found, nil
	})
	if err != nil {
		return nil, nil, err
	}
	for k, c := range cursors {
		targets[slots[k]] = c
	}
	return pids, targets, nil
}

// GroupDelete drops a group's lanes on one queue or on every queue it has
// joined, in one transaction. A group kept joined restarts from its
// subscription there: its lanes are created again and positioned as by a
// join now.
func (s *Store) GroupDelete(ctx context.Context, p *store.GroupDeleteParams) (*store.GroupDeleteResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	var out *store.GroupDeleteResult
	err := s.inTx(ctx, "delete consumer group", func(t *txn) error {
		var err error
		out, err = groupsql.DeleteIn(t.q(), groupsql.Delete{
			Queue: func(name string) (groupsql.Queue, error) {
				q := groupsql.Queue{Name: name}
				var joined bool
				err := t.tx.QueryRow(t.ctx, sqlGroupQueue, tenant, name, p.Group).Scan(&q.ID, &joined)
				if errors.Is(err, pgx.ErrNoRows) {
					return q, store.ErrQueueNotFound
				}
				return q, err
			},
			// Under the join lock, as a pop's join: partitions created
			// meanwhile get lanes from a join that is either finished or
			// not begun.
			Lock: func(qid int64) error {
				_, err := t.tx.Exec(t.ctx, sqlJoinLock, qid)
				return err
			},
			LanesDelete: sqlGroupLanesDelete,
			Restart: func(q groupsql.Queue, from int64) error {
				if _, err := t.tx.Exec(t.ctx, sqlSeekJoinLanes, q.ID, p.Group); err != nil {
					return fmt.Errorf("create lanes: %w", err)
				}
				pids, targets, err := t.seekTargets(q.ID, "", store.SeekTarget{Time: time.UnixMilli(from)})
				if err != nil {
					return err
				}
				if _, err := t.tx.Exec(t.ctx, sqlSeekLanes, pids, targets, p.Group); err != nil {
					return fmt.Errorf("position lanes: %w", err)
				}
				t.wakeAfterCommit(store.Wake{Key: store.QueueKey(tenant, q.Name)})
				return nil
			},
		}, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GroupSubscriptionSet changes where a group starts reading.
func (s *Store) GroupSubscriptionSet(ctx context.Context, p *store.GroupSubscriptionSetParams) (int, error) {
	var n int
	err := s.inTx(ctx, "set subscription", func(t *txn) error {
		var err error
		n, err = groupsql.SubscribeIn(t.q(), p)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
