// Package groupsql is what the engines do alike for consumer groups,
// written once over sqlq: the reading of a group listing's rows and of lane
// pages, a group's description and lagging lanes, the subscription change,
// and the steps of a group delete (which queues, their lanes, the group's
// row or its restart from its subscription). An engine answers for its
// statements (the figures of a lane are dialect), how it fetches the live
// leases of a listing, its locks, and how it gives a restarted group its
// lanes back.
package groupsql

import (
	"errors"
	"fmt"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// The statements both engines run as they are.
const (
	Joined = `SELECT EXISTS (SELECT 1 FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
		WHERE q.tenant = $1 AND g.consumer_group = $2)`
	QueuesOf = `SELECT q.id, q.name FROM consumer_groups g JOIN queues q ON q.id = g.queue_id
		WHERE q.tenant = $1 AND g.consumer_group = $2 ORDER BY q.id`
	RowDelete  = `DELETE FROM consumer_groups WHERE queue_id = $1 AND consumer_group = $2`
	Subscribed = `SELECT subscribed_from FROM consumer_groups WHERE queue_id = $1 AND consumer_group = $2`
	Subscribe  = `UPDATE consumer_groups SET subscribed_from = $3
		WHERE queue_id IN (SELECT id FROM queues WHERE tenant = $1) AND consumer_group = $2`
)

// ListIn reads a page of (group, queue) pairs with list (the engine's
// statement: $1 now, $2 tenant, $3 limit, $4 offset; answering queue id,
// group, queue, subscribed from, joined at, consumed, lag, lagging
// partitions, oldest unread) and fills their live leases with members
// (qids[i] is out[i]'s queue).
func ListIn(q sqlq.Q, list string, p *store.GroupListParams,
	members func(now int64, qids []int64, out []store.GroupQueue) error) ([]store.GroupQueue, error) {
	now := p.Now.UnixMilli()
	var out []store.GroupQueue
	var qids []int64
	err := q.Each(list, []any{now, store.TenantOrDefault(p.Tenant), store.PageLimit(p.Limit), max(p.Offset, 0)},
		func(row sqlq.Row) error {
			var g store.GroupQueue
			var qid, from, joined int64
			var oldest *int64
			if err := row.Scan(&qid, &g.ConsumerGroup, &g.Queue, &from, &joined, &g.Consumed, &g.Lag,
				&g.LaggingPartitions, &oldest); err != nil {
				return err
			}
			g.SubscribedFrom, g.JoinedAt, g.OldestUnread = FromMs(from), FromMs(joined), fromMsPtr(oldest)
			out = append(out, g)
			qids = append(qids, qid)
			return nil
		})
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, members(now, qids, out)
}

// Lanes runs a statement answering a store.LaneInfo's columns (queue,
// partition, partition id, group, consumed, lag, processing, live lease id
// and expiry, last claimed, oldest unread).
func Lanes(q sqlq.Q, query string, args ...any) ([]store.LaneInfo, error) {
	var out []store.LaneInfo
	err := q.Each(query, args, func(row sqlq.Row) error {
		var li store.LaneInfo
		var exp, claimed int64
		var oldest *int64
		if err := row.Scan(&li.Queue, &li.Partition, &li.PartitionID, &li.ConsumerGroup, &li.Consumed, &li.Lag,
			&li.Processing, &li.LeaseID, &exp, &claimed, &oldest); err != nil {
			return err
		}
		li.LeaseExpiresAt, li.LastClaimedAt, li.OldestUnread = FromMs(exp), FromClaim(claimed), fromMsPtr(oldest)
		out = append(out, li)
		return nil
	})
	return out, err
}

// GetIn reads a page of one group's lanes with get (the engine's
// statement: $1 now, $2 tenant, $3 group, $4 limit, $5 offset); a group
// that has joined no queue is ErrGroupNotFound.
func GetIn(q sqlq.Q, get string, p *store.GroupGetParams) ([]store.LaneInfo, error) {
	tenant := store.TenantOrDefault(p.Tenant)
	out, err := Lanes(q, get, p.Now.UnixMilli(), tenant, p.Group, store.PageLimit(p.Limit), max(p.Offset, 0))
	if err != nil || len(out) > 0 {
		return out, err
	}
	var joined bool
	if err := q.Row(Joined, tenant, p.Group).Scan(&joined); err != nil {
		return nil, err
	}
	if !joined {
		return nil, store.ErrGroupNotFound
	}
	return out, nil
}

// LaggingIn reads a page of lanes behind by more than p.MinLag with
// lagging (the engine's statement: $1 now, $2 tenant, $3 the creation time
// before which the oldest unread message lags, $4 limit, $5 offset).
func LaggingIn(q sqlq.Q, lagging string, p *store.GroupLaggingParams) ([]store.LaneInfo, error) {
	return Lanes(q, lagging, p.Now.UnixMilli(), store.TenantOrDefault(p.Tenant), p.Now.Add(-p.MinLag).UnixMilli(),
		store.PageLimit(p.Limit), max(p.Offset, 0))
}

// SubscribeIn changes where a group starts reading on every queue it has
// joined, and returns how many; none is ErrGroupNotFound.
func SubscribeIn(q sqlq.Q, p *store.GroupSubscriptionSetParams) (int, error) {
	from := max(p.From.UnixMilli(), 0) // the zero time and the epoch: from the beginning
	n, err := q.Exec(Subscribe, store.TenantOrDefault(p.Tenant), p.Group, from)
	if err != nil {
		return 0, fmt.Errorf("set subscription: %w", err)
	}
	if n == 0 {
		return 0, store.ErrGroupNotFound
	}
	return int(n), nil
}

// Queue is a queue a group delete visits.
type Queue struct {
	ID   int64
	Name string
}

// Delete is what a group delete needs of an engine inside its transaction.
type Delete struct {
	// Queue resolves the one queue named (ErrQueueNotFound if none), with
	// the engine's lock.
	Queue func(name string) (Queue, error)
	// Lock, when set, is taken on each queue before its lanes are deleted.
	Lock func(qid int64) error
	// LanesDelete deletes the group's lanes on a queue ($1 queue id, $2
	// group), with the engine's locks.
	LanesDelete string
	// Forget, when set, is told of a group row deleted.
	Forget func(qid int64)
	// Restart gives the group, kept joined, its lanes on q back from its
	// subscription (from, Unix ms; 0 the beginning), now or after commit.
	Restart func(q Queue, from int64) error
}

// DeleteIn drops a group's lanes on p.Queue, or on every queue it has
// joined, in an engine's transaction: with p.DeleteMetadata the group's row
// goes too; without, a group that had joined restarts from its
// subscription.
func DeleteIn(q sqlq.Q, e Delete, p *store.GroupDeleteParams) (*store.GroupDeleteResult, error) {
	var queues []Queue
	if p.Queue != "" {
		one, err := e.Queue(p.Queue)
		if err != nil {
			return nil, err
		}
		queues = append(queues, one)
	} else {
		err := q.Each(QueuesOf, []any{store.TenantOrDefault(p.Tenant), p.Group}, func(row sqlq.Row) error {
			var one Queue
			err := row.Scan(&one.ID, &one.Name)
			queues = append(queues, one)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read queues: %w", err)
		}
	}
	out := &store.GroupDeleteResult{}
	for _, qu := range queues {
		if e.Lock != nil {
			if err := e.Lock(qu.ID); err != nil {
				return nil, fmt.Errorf("join lock: %w", err)
			}
		}
		n, err := q.Exec(e.LanesDelete, qu.ID, p.Group)
		if err != nil {
			return nil, fmt.Errorf("delete lanes: %w", err)
		}
		out.Lanes += int(n)
		out.Queues = append(out.Queues, qu.Name)
		if p.DeleteMetadata {
			if _, err := q.Exec(RowDelete, qu.ID, p.Group); err != nil {
				return nil, fmt.Errorf("delete group: %w", err)
			}
			if e.Forget != nil {
				e.Forget(qu.ID)
			}
			continue
		}
		var from int64
		err = q.Row(Subscribed, qu.ID, p.Group).Scan(&from)
		if errors.Is(err, store.ErrNotFound) {
			continue // it had lanes (acks) but never joined: nothing to restart
		}
		if err != nil {
			return nil, fmt.Errorf("read consumer group: %w", err)
		}
		if err := e.Restart(qu, from); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FromMs converts Unix ms to a time; 0 (never) is the zero time.
func FromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func fromMsPtr(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return FromMs(*ms)
}

// FromClaim converts a lane's last_claimed_at (a claim order in Unix
// microseconds) to a time; 0 (never) is the zero time.
func FromClaim(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
