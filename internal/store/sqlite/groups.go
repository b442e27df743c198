package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/groupsql"
	"github.com/queen-go/queen/internal/store/seek"
)

// Consumer groups as the control plane sees them (see inspect.go), and the
// writes that move them. A seek finds its targets on the read-only pool
// (a binary search per partition, package seek) and then moves the cursors
// in one short writer job, so that the searching never holds up pushes and
// pops.
const (
	// A page of (group, queue) pairs (?2 tenant, ?3 limit, ?4 offset) with
	// their figures over the queue's lanes.
	sqlInspectGroupList = `WITH gs AS MATERIALIZED (
			SELECT g.queue_id, g.consumer_group, g.subscribed_from, g.created_at, q.name AS queue
			FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
			WHERE q.tenant = ?2 ORDER BY g.consumer_group, q.name LIMIT ?3 OFFSET ?4)
		SELECT gs.queue_id, gs.consumer_group, gs.queue, gs.subscribed_from, gs.created_at,
			COALESCE(sum(l.consumed), 0), COALESCE(sum(` + sqlLag + `), 0), COALESCE(sum(` + sqlLag + ` > 0), 0),
			min(CASE WHEN ` + sqlLag + ` > 0 THEN ` + sqlOldestUnread + ` END)
		FROM gs LEFT JOIN partitions p ON p.queue_id = gs.queue_id
		LEFT JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = gs.consumer_group
		GROUP BY gs.queue_id, gs.consumer_group ORDER BY gs.consumer_group, gs.queue`
	// The live leases of a pair (?2 queue id, ?3 group, ?4 at most), along
	// the index of leased lanes.
	sqlInspectGroupMembers = `SELECT p.name, p.uuid, l.lease_id, l.lease_expires_at
		FROM lanes l INDEXED BY lanes_lease JOIN partitions p ON p.id = l.partition_id
		WHERE l.lease_id IS NOT NULL AND l.lease_expires_at > ?1 AND l.queue_id = ?2 AND l.consumer_group = ?3
		ORDER BY p.name LIMIT ?4`

	// sqlInspectLaneColumns are the columns of a store.LaneInfo.
	sqlInspectLaneColumns = `q.name, p.name, p.uuid, l.consumer_group, l.consumed, ` + sqlLag + `, ` + sqlProc + `,
			` + sqlLiveLease + `, l.last_claimed_at`
	// A page of one group's lanes (?2 tenant, ?3 group, ?4 limit, ?5
	// offset), by queue then partition name.
	sqlInspectGroupGet = `WITH page AS MATERIALIZED (
			SELECT p.id AS pid, g.consumer_group AS grp
			FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
			JOIN partitions p ON p.queue_id = q.id
			JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = g.consumer_group
			WHERE q.tenant = ?2 AND g.consumer_group = ?3
			ORDER BY q.name, p.name LIMIT ?4 OFFSET ?5)
		SELECT ` + sqlInspectLaneColumns + `, CASE WHEN ` + sqlLag + ` > 0 THEN ` + sqlOldestUnread + ` END
		FROM page JOIN partitions p ON p.id = page.pid JOIN queues q ON q.id = p.queue_id
		JOIN lanes l ON l.partition_id = page.pid AND l.consumer_group = page.grp
		ORDER BY q.name, p.name`
	// Lanes of every group of the tenant (?2) whose oldest unread message
	// was created before ?3, most behind first (?4 limit, ?5 offset).
	sqlInspectGroupLagging = `WITH c AS MATERIALIZED (
			SELECT p.id AS pid, l.consumer_group AS grp, ` + sqlOldestUnread + ` AS oldest
			FROM queues q JOIN partitions p ON p.queue_id = q.id JOIN lanes l ON l.partition_id = p.id
			WHERE q.tenant = ?2 AND l.cursor < p.last_offset AND ` + sqlLag + ` > 0),
		page AS MATERIALIZED (
			SELECT c.* FROM c JOIN partitions p ON p.id = c.pid JOIN queues q ON q.id = p.queue_id
			WHERE c.oldest < ?3
			ORDER BY c.oldest, q.name, p.name, c.grp LIMIT ?4 OFFSET ?5)
		SELECT ` + sqlInspectLaneColumns + `, page.oldest
		FROM page JOIN partitions p ON p.id = page.pid JOIN queues q ON q.id = p.queue_id
		JOIN lanes l ON l.partition_id = page.pid AND l.consumer_group = page.grp
		ORDER BY page.oldest, q.name, p.name, l.consumer_group`

	// Seek planning, on the read-only pool.
	sqlSeekQueue = `SELECT id, EXISTS (SELECT 1 FROM consumer_groups g WHERE g.queue_id = q.id AND g.consumer_group = ?3)
		FROM queues q WHERE tenant = ?1 AND name = ?2`
	sqlSeekPartition  = `SELECT id FROM partitions WHERE queue_id = ?1 AND name = ?2`
	sqlSeekPartitions = `SELECT id, last_offset, cleared_offset, last_message_at FROM partitions
		WHERE queue_id = ?1 AND (?2 = 0 OR id = ?2) ORDER BY id`
	// One step of the binary searches for many partitions (?1 a JSON
	// array of [partition, from, to]): the first message of each in
	// [from, to], along the index on messages (partition_id).
	sqlSeekProbe = `SELECT x.seq, (SELECT m.created_at FROM messages m WHERE m.seq = x.seq) FROM (
			SELECT j.key AS k, (SELECT m.seq FROM messages m
				WHERE m.partition_id = json_extract(j.value, '$[0]')
				  AND m.seq >= json_extract(j.value, '$[1]') AND m.seq <= json_extract(j.value, '$[2]')
				ORDER BY m.seq LIMIT 1) AS seq
			FROM json_each(?1) j) x
		ORDER BY x.k`
	sqlSeekCountBetween = `SELECT count(*) FROM messages WHERE partition_id = ?1 AND seq > ?2 AND seq <= ?3`

	// Seek writes, in a writer job. A group joining with a seek: its row
	// (?1 queue, ?2 group, ?3 from, ?4 now) and its lanes on every
	// partition, which the seek then positions.
	sqlSeekJoinLanes = `INSERT INTO lanes (partition_id, consumer_group, queue_id, ready)
		SELECT id, ?2, queue_id, last_offset > cleared_offset FROM partitions WHERE queue_id = ?1
		ON CONFLICT (partition_id, consumer_group) DO NOTHING`
	// Move the group's (?2) lanes to targets (?1 a JSON array of [partition,
	// target (-1: the end), cleared offset seen, last offset seen, consumed
	// at target (-1: unknown), unread after it up to the last offset seen]),
	// setting consumed with the cursor (which keeps the lanes trigger out).
	// A clear since the search moves a lane to the cleared offset; messages
	// pushed since are counted here, along the index.
	sqlSeekLanes = `UPDATE lanes SET cursor = t.c, consumed = t.n, lease_id = NULL, lease_expires_at = 0,
			batch_end = 0, head_attempts = 0, ready = t.last > t.c
		FROM (SELECT p.id AS pid, p.last_offset AS last,
				CASE WHEN j.target < 0 THEN p.last_offset
					ELSE min(max(j.target, p.cleared_offset), p.last_offset) END AS c,
				CASE WHEN j.target < 0 THEN p.message_count
					WHEN j.target <= p.cleared_offset OR j.cleared <> p.cleared_offset THEN 0
					WHEN j.consumed >= 0 THEN j.consumed
					ELSE max(0, p.message_count - j.unread - (SELECT count(*) FROM messages m
						WHERE m.partition_id = p.id AND m.seq > j.last)) END AS n
			FROM (SELECT json_extract(value, '$[0]') AS pid, json_extract(value, '$[1]') AS target,
					json_extract(value, '$[2]') AS cleared, json_extract(value, '$[3]') AS last,
					json_extract(value, '$[4]') AS consumed, json_extract(value, '$[5]') AS unread
				FROM json_each(?1)) j
			JOIN partitions p ON p.id = j.pid) t
		WHERE lanes.partition_id = t.pid AND lanes.consumer_group = ?2`
	// Move the group's (?3) lanes on queue ?1 (or partition ?2) to the end.
	sqlSeekLanesToEnd = `UPDATE lanes SET cursor = p.last_offset, consumed = p.message_count, lease_id = NULL,
			lease_expires_at = 0, batch_end = 0, head_attempts = 0, ready = 0
		FROM partitions p
		WHERE lanes.partition_id = p.id AND lanes.consumer_group = ?3 AND p.queue_id = ?1 AND (?2 = 0 OR p.id = ?2)`
	sqlSeekCursorAt = `SELECT m.created_at FROM lanes l JOIN partitions p ON p.id = l.partition_id
		JOIN messages m ON m.partition_id = p.id AND m.seq <= l.cursor AND m.seq > p.cleared_offset
		WHERE l.partition_id = ?1 AND l.consumer_group = ?2 ORDER BY m.seq DESC LIMIT 1`

	// Deleting and subscribing.
	sqlGroupLanesDelete = `DELETE FROM lanes
		WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?1) AND consumer_group = ?2`
)

// GroupList lists a page of (group, queue) pairs with their figures.
func (s *Store) GroupList(ctx context.Context, p *store.GroupListParams) ([]store.GroupQueue, error) {
	var out []store.GroupQueue
	err := s.read(ctx, "list consumer groups", func(tx *sql.Tx) error {
		var err error
		out, err = groupsql.ListIn(txQ(ctx, tx), sqlInspectGroupList, p,
			func(now int64, qids []int64, out []store.GroupQueue) error {
				for i := range out {
					if err := groupMembers(ctx, tx, now, qids[i], &out[i]); err != nil {
						return err
					}
				}
				return nil
			})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// groupMembers reads the live leases of one group on one queue.
func groupMembers(ctx context.Context, tx *sql.Tx, now, qid int64, g *store.GroupQueue) error {
	rows, err := tx.QueryContext(ctx, sqlInspectGroupMembers, now, qid, g.ConsumerGroup, store.MaxGroupMembers)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var m store.GroupMember
		var exp int64
		if err := rows.Scan(&m.Partition, &m.PartitionID, &m.LeaseID, &exp); err != nil {
			return err
		}
		m.LeaseExpiresAt = fromMs(exp)
		g.Members = append(g.Members, m)
	}
	return rows.Err()
}

// GroupGet lists a page of one group's lanes.
func (s *Store) GroupGet(ctx context.Context, p *store.GroupGetParams) ([]store.LaneInfo, error) {
	var out []store.LaneInfo
	err := s.read(ctx, "describe consumer group", func(tx *sql.Tx) error {
		var err error
		out, err = groupsql.GetIn(txQ(ctx, tx), sqlInspectGroupGet, p)
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
	err := s.read(ctx, "list lagging lanes", func(tx *sql.Tx) error {
		var err error
		out, err = groupsql.LaggingIn(txQ(ctx, tx), sqlInspectGroupLagging, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// seekPlan is a seek worked out on the read-only pool.
type seekPlan struct {
	queueID   int64
	partition int64  // the one partition named, 0 for none
	scope     int64  // the one partition moved, 0 for all
	join      bool   // the group has not joined the queue
	targets   []byte // nil: to the end
}

// GroupSeek moves a group's cursors on a queue or one of its partitions.
func (s *Store) GroupSeek(ctx context.Context, p *store.GroupSeekParams) (*store.GroupSeekResult, error) {
	plan, err := s.planSeek(ctx, store.TenantOrDefault(p.Tenant), p.Queue, p.Group, p.Partition, p.Target)
	if err != nil {
		return nil, err
	}
	out := &store.GroupSeekResult{}
	err = s.run(ctx, durable, func(tx *sql.Tx) error {
		*out = store.GroupSeekResult{}
		t := s.txn(tx)
		if plan.join {
			from := p.Target.Time.UnixMilli()
			if p.Target.ToEnd {
				from = p.Now.UnixMilli()
			}
			joined, err := t.joinForSeek(plan.queueID, p.Group, max(from, 0), p.Now)
			if err != nil {
				return err
			}
			out.Joined = joined
		}
		n, err := t.applySeek(plan, p.Group)
		if err != nil {
			return err
		}
		out.Lanes = n
		if p.Partition != "" && plan.partition != 0 {
			var at int64
			err := t.tx.QueryRowContext(t.ctx, sqlSeekCursorAt, plan.partition, p.Group).Scan(&at)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("read cursor: %w", err)
			}
			out.CursorAt = fromMs(at)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// joinForSeek records a group's join of queue qid where a seek puts it,
// with a lane on every partition (at the beginning, until the seek moves
// them). It reports whether the group joined here (a pop may have joined
// it since the seek was planned).
func (t *txn) joinForSeek(qid int64, group string, from int64, now time.Time) (bool, error) {
	var seen int64
	err := t.queryRow(sqlGroupGet, qid, group).Scan(&seen)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("read consumer group: %w", err)
	}
	if _, err := t.exec(sqlGroupInsert, qid, group, from, now.UnixMilli()); err != nil {
		return false, fmt.Errorf("record consumer group: %w", err)
	}
	if _, err := t.tx.ExecContext(t.ctx, sqlSeekJoinLanes, qid, group); err != nil {
		return false, fmt.Errorf("create lanes: %w", err)
	}
	t.cache.groups.Add(groupKey{qid, group}, from)
	return true, nil
}

// applySeek moves the lanes of a planned seek and returns how many moved.
func (t *txn) applySeek(plan *seekPlan, group string) (int, error) {
	var res sql.Result
	var err error
	if plan.targets == nil {
		res, err = t.tx.ExecContext(t.ctx, sqlSeekLanesToEnd, plan.queueID, plan.scope, group)
	} else {
		res, err = t.tx.ExecContext(t.ctx, sqlSeekLanes, string(plan.targets), group)
	}
	if err != nil {
		return 0, fmt.Errorf("move cursors: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// planSeek works out a seek on the read-only pool: the queue, whether the
// group must join it (a seek of a group that never joined moves all its
// lanes), and, for a seek to a time, each partition's target and what the
// lane will have consumed there.
func (s *Store) planSeek(ctx context.Context, tenant, queue, group, partition string,
	target store.SeekTarget) (*seekPlan, error) {
	plan := &seekPlan{}
	err := s.read(ctx, "plan seek", func(tx *sql.Tx) error {
		var joined bool
		err := tx.QueryRowContext(ctx, sqlSeekQueue, tenant, queue, group).Scan(&plan.queueID, &joined)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		if partition != "" {
			err := tx.QueryRowContext(ctx, sqlSeekPartition, plan.queueID, partition).Scan(&plan.partition)
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrPartitionNotFound
			}
			if err != nil {
				return err
			}
		}
		plan.join = !joined
		if !plan.join {
			plan.scope = plan.partition
		}
		if target.ToEnd {
			return nil
		}
		plan.targets, err = seekTargets(ctx, tx, plan.queueID, plan.scope, target.Time.UnixMilli())
		return err
	})
	if err != nil {
		return nil, err
	}
	return plan, nil
}

// seekTargets returns the JSON targets of sqlSeekLanes for the partitions
// of queue qid (or partition pid) and a seek to ts.
func seekTargets(ctx context.Context, tx *sql.Tx, qid, pid, ts int64) ([]byte, error) {
	rows, err := tx.QueryContext(ctx, sqlSeekPartitions, qid, pid)
	if err != nil {
		return nil, err
	}
	type part struct{ id, last, cleared, target int64 }
	var parts []part
	var ranges []seek.Range
	var slots []int
	for rows.Next() {
		var p part
		var lastAt int64
		if err := rows.Scan(&p.id, &p.last, &p.cleared, &lastAt); err != nil {
			rows.Close()
			return nil, err
		}
		p.target = -1 // the end: nothing after ts
		if lastAt > ts {
			slots = append(slots, len(parts))
			ranges = append(ranges, seek.Range{Partition: p.id, Lo: p.cleared, Hi: p.last})
		}
		parts = append(parts, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	cursors, err := seek.Cursors(ranges, ts, func(ps, from, to []int64) ([]seek.Found, error) {
		arg := make([]byte, 0, 48*len(ps))
		arg = append(arg, '[')
		for k := range ps {
			if k > 0 {
				arg = append(arg, ',')
			}
			arg = appendInts(arg, ps[k], from[k], to[k])
		}
		arg = append(arg, ']')
		rows, err := tx.QueryContext(ctx, sqlSeekProbe, string(arg))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		found := make([]seek.Found, 0, len(ps))
		for rows.Next() {
			var seq, at sql.NullInt64
			if err := rows.Scan(&seq, &at); err != nil {
				return nil, err
			}
			found = append(found, seek.Found{Offset: seq.Int64, CreatedAt: at.Int64, OK: seq.Valid})
		}
		return found, rows.Err()
	})
	if err != nil {
		return nil, err
	}
	for k, c := range cursors {
		parts[slots[k]].target = c
	}
	out := make([]byte, 0, 64*len(parts))
	out = append(out, '[')
	for i, p := range parts {
		// What the lane will have consumed at its target: nothing at the
		// cleared offset, everything at the end, else counted along the
		// index on the shorter side of the target (by offsets, which is
		// where the rows lie).
		consumed, unread := int64(-1), int64(0)
		switch {
		case p.target < 0:
		case p.target <= p.cleared:
			consumed = 0
		case p.target-p.cleared <= p.last-p.target:
			if err := tx.QueryRowContext(ctx, sqlSeekCountBetween, p.id, p.cleared, p.target).Scan(&consumed); err != nil {
				return nil, err
			}
		default:
			if err := tx.QueryRowContext(ctx, sqlSeekCountBetween, p.id, p.target, p.last).Scan(&unread); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = appendInts(out, p.id, p.target, p.cleared, p.last, consumed, unread)
	}
	return append(out, ']'), nil
}

// appendInts appends a JSON array of integers.
func appendInts(b []byte, ns ...int64) []byte {
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, ']')
}

// GroupDelete drops a group's lanes on one queue or on every queue it has
// joined, in one writer job. A group kept joined (no DeleteMetadata)
// restarts from its subscription: from the beginning its lanes are created
// again at once; from a time, by a seek planned on the read-only pool after
// the job, as any seek.
func (s *Store) GroupDelete(ctx context.Context, p *store.GroupDeleteParams) (*store.GroupDeleteResult, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	var out *store.GroupDeleteResult
	type reseed struct {
		queue string
		from  int64
	}
	var again []reseed
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		again = again[:0]
		t := s.txn(tx)
		var err error
		out, err = groupsql.DeleteIn(t.q(), groupsql.Delete{
			Queue: func(name string) (groupsql.Queue, error) {
				q, err := t.existingQueue(queueName{tenant, name})
				if err != nil {
					return groupsql.Queue{}, err
				}
				if q == nil {
					return groupsql.Queue{}, store.ErrQueueNotFound
				}
				return groupsql.Queue{ID: q.id, Name: q.name}, nil
			},
			LanesDelete: sqlGroupLanesDelete,
			Forget:      func(qid int64) { t.cache.groups.Remove(groupKey{qid, p.Group}) },
			Restart: func(q groupsql.Queue, from int64) error {
				if from > 0 {
					again = append(again, reseed{q.Name, from})
					return nil
				}
				// From the beginning: every lane at the start, at once.
				if _, err := tx.ExecContext(t.ctx, sqlSeekJoinLanes, q.ID, p.Group); err != nil {
					return fmt.Errorf("create lanes: %w", err)
				}
				return nil
			},
		}, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The group stays joined but holds no lanes on these queues until the
	// seek below gives them back (a pop meanwhile finds nothing).
	for _, r := range again {
		plan, err := s.planSeek(ctx, tenant, r.queue, p.Group, "", store.SeekTarget{Time: time.UnixMilli(r.from)})
		if errors.Is(err, store.ErrQueueNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		err = s.run(ctx, durable, func(tx *sql.Tx) error {
			t := s.txn(tx)
			if _, err := tx.ExecContext(t.ctx, sqlSeekJoinLanes, plan.queueID, p.Group); err != nil {
				return fmt.Errorf("create lanes: %w", err)
			}
			_, err := t.applySeek(plan, p.Group)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GroupSubscriptionSet changes where a group starts reading.
func (s *Store) GroupSubscriptionSet(ctx context.Context, p *store.GroupSubscriptionSetParams) (int, error) {
	var n int
	err := s.run(ctx, durable, func(tx *sql.Tx) error {
		var err error
		n, err = groupsql.SubscribeIn(txQ(ctx, tx), p)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
