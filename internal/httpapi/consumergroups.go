package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// Consumer groups as the control plane shows them, with Queen's keys: the
// list and the lagging lanes are bare arrays (the lagging ones in
// snake_case), a group's description is an object keyed by queue name.

// consumerGroupRoutes list, describe, seek and delete consumer groups.
// /consumer-groups/lagging wins over /consumer-groups/{group} (ServeMux
// prefers the literal segment), as in Queen.
type consumerGroupRoutes struct {
	control *control.Control
}

func (g *consumerGroupRoutes) Routes() []Route {
	return []Route{
		row(AccessRead, "GET", "/api/v1/consumer-groups", "group_list", g.groupList),
		row(AccessRead, "GET", "/api/v1/consumer-groups/lagging", "group_lagging", g.groupLagging),
		row(AccessRead, "GET", "/api/v1/consumer-groups/{group}", "group_get", g.groupGet),
		row(AccessAdmin, "DELETE", "/api/v1/consumer-groups/{group}", "group_delete", g.groupDelete),
		row(AccessAdmin, "DELETE", "/api/v1/consumer-groups/{group}/queues/{queue}", "group_queue_delete", g.groupDelete),
		row(AccessReadWrite, "POST", "/api/v1/consumer-groups/{group}/subscription", "group_subscription",
			g.groupSubscription),
		row(AccessReadWrite, "POST", "/api/v1/consumer-groups/{group}/queues/{queue}/seek", "group_seek", g.groupSeek),
		row(AccessReadWrite, "POST", "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
			"group_partition_seek", g.groupPartitionSeek),
		row(AccessAdmin, "POST", "/api/v1/stats/refresh", "stats_refresh", statsRefresh).Operator(),
	}
}

// DefaultLagSeconds is /consumer-groups/lagging's minLagSeconds when the
// request gives none (Queen's example value).
const DefaultLagSeconds = 3600

// rangeLagSeconds bounds minLagSeconds: zero to ten years.
var rangeLagSeconds = intRange{0, 10 * 365 * 86400}

// seconds renders a duration in seconds, to the millisecond.
func seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}

// subscriptionMode names where a group started: all (the beginning), new
// (when it joined) or timestamp.
func subscriptionMode(g *store.GroupQueue) string {
	switch {
	case g.SubscribedFrom.IsZero():
		return "all"
	case g.SubscribedFrom.Equal(g.JoinedAt):
		return "new"
	}
	return "timestamp"
}

func (g *consumerGroupRoutes) groupList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	if q.err != nil {
		return q.err
	}
	groups, err := g.control.GroupList(r.Context(), caller(r).Tenant, store.GroupListParams{Limit: limit,
		Offset: offset})
	if err != nil {
		return err
	}
	out := make([]api.GroupListItem, len(groups))
	for i := range groups {
		gq := &groups[i]
		members := make([]api.GroupMember, len(gq.Members))
		for j, m := range gq.Members {
			members[j] = api.GroupMember{Partition: m.Partition, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
				LeaseExpiresAt: api.TimeOf(m.LeaseExpiresAt)}
		}
		out[i] = api.GroupListItem{Name: gq.ConsumerGroup, Topics: []string{gq.Queue}, QueueName: gq.Queue,
			Members: members, PartitionsWithLag: gq.LaggingPartitions, TotalLag: gq.Lag,
			MaxTimeLag: seconds(gq.MaxTimeLag), State: gq.State, SubscriptionMode: subscriptionMode(&gq.GroupQueue),
			SubscriptionTimestamp: timeOrNull(gq.SubscribedFrom), SubscriptionCreatedAt: api.TimeOf(gq.JoinedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *consumerGroupRoutes) groupLagging(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	minLag := q.int("minLagSeconds", DefaultLagSeconds, rangeLagSeconds)
	if q.err != nil {
		return q.err
	}
	lanes, err := g.control.GroupLagging(r.Context(), caller(r).Tenant, store.GroupLaggingParams{
		MinLag: time.Duration(minLag) * time.Second, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := make([]api.LaggingPartition, len(lanes))
	for i, l := range lanes {
		out[i] = api.LaggingPartition{ConsumerGroup: l.ConsumerGroup, QueueName: l.Queue, PartitionName: l.Partition,
			PartitionID: l.PartitionID, WorkerID: nullable(l.LeaseID), OffsetLag: l.Lag,
			TimeLagSeconds: seconds(l.TimeLag), LagHours: math.Round(l.TimeLag.Hours()*100) / 100,
			OldestUnconsumedAt: timeOrNull(l.OldestUnread), LastConsumedAt: timeOrNull(l.LastClaimedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *consumerGroupRoutes) groupGet(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultPartitionLimit, MaxPartitionLimit)
	if q.err != nil {
		return q.err
	}
	lanes, err := g.control.GroupGet(r.Context(), caller(r).Tenant, store.GroupGetParams{Group: r.PathValue("group"),
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := api.GroupDetail{}
	for _, l := range lanes {
		gq := out[l.Queue]
		if gq == nil {
			gq = &api.GroupQueue{Partitions: []api.GroupLane{}}
			out[l.Queue] = gq
		}
		gq.Partitions = append(gq.Partitions, api.GroupLane{Partition: l.Partition, PartitionID: l.PartitionID,
			WorkerID: nullable(l.LeaseID), LastConsumedAt: timeOrNull(l.LastClaimedAt), TotalConsumed: l.Consumed,
			OffsetLag: l.Lag, TimeLagSeconds: seconds(l.TimeLag), LeaseActive: l.LeaseID != ""})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// groupDelete serves both deletes: of a group on every queue, and on the
// queue in the path. deleteMetadata (default false) also forgets the
// group's subscription; without it the group restarts from it.
func (g *consumerGroupRoutes) groupDelete(w http.ResponseWriter, r *http.Request) error {
	names := []string{"group"}
	queue := r.PathValue("queue")
	if queue != "" {
		names = append(names, "queue")
	}
	if err := pathNames(r, names...); err != nil {
		return err
	}
	q := parseQuery(r)
	meta := q.flag("deleteMetadata")
	if q.err != nil {
		return q.err
	}
	group := r.PathValue("group")
	res, err := g.control.GroupDelete(r.Context(), caller(r).Tenant, store.GroupDeleteParams{Group: group,
		Queue: queue, DeleteMetadata: meta})
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, api.GroupDeleteResponse{Success: true, ConsumerGroup: group,
		QueueName: nullable(queue), DeletedPartitions: res.Lanes, MetadataDeleted: meta})
	return nil
}

func (g *consumerGroupRoutes) groupSubscription(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group"); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var b api.SubscriptionRequest
	if len(body) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return err
		}
	}
	if b.SubscriptionTimestamp == "" {
		return badRequest("Missing subscriptionTimestamp in request body")
	}
	from, err := parseTimestamp("subscriptionTimestamp", b.SubscriptionTimestamp)
	if err != nil {
		return err
	}
	group := r.PathValue("group")
	n, err := g.control.GroupSubscriptionSet(r.Context(), caller(r).Tenant, group, from)
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, api.SubscriptionResponse{Success: true, ConsumerGroup: group,
		NewTimestamp: api.TimeOf(from), RowsUpdated: n})
	return nil
}

// parseTimestamp reads an RFC 3339 timestamp of the body.
func parseTimestamp(key, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return time.Time{}, badBody("%s: expected an RFC 3339 timestamp, got %q", key, s)
	}
	return t.UTC(), nil
}

// decodeSeek reads a seek's body: {"toEnd":true} or {"timestamp":…}. An
// empty body or {} means toEnd when emptyToEnd (the partition seek, which
// Queen sends without a body), else it is a 400.
func decodeSeek(r *http.Request, emptyToEnd bool) (store.SeekTarget, error) {
	body, err := readBody(r)
	if err != nil {
		return store.SeekTarget{}, err
	}
	var b api.SeekRequest
	if len(body) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return store.SeekTarget{}, err
		}
	}
	switch {
	case b.ToEnd && b.Timestamp != "":
		return store.SeekTarget{}, badRequest("Specify either 'toEnd': true or 'timestamp', not both")
	case b.ToEnd:
		return store.SeekTarget{ToEnd: true}, nil
	case b.Timestamp != "":
		t, err := parseTimestamp("timestamp", b.Timestamp)
		return store.SeekTarget{Time: t}, err
	case emptyToEnd:
		return store.SeekTarget{ToEnd: true}, nil
	}
	return store.SeekTarget{}, badRequest("Must specify either 'toEnd': true or 'timestamp'")
}

func (g *consumerGroupRoutes) groupSeek(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group", "queue"); err != nil {
		return err
	}
	target, err := decodeSeek(r, false)
	if err != nil {
		return err
	}
	group, queue := r.PathValue("group"), r.PathValue("queue")
	res, err := g.control.GroupSeek(r.Context(), caller(r).Tenant, store.GroupSeekParams{Group: group, Queue: queue,
		Target: target})
	if err != nil {
		return entity(err)
	}
	out := api.SeekResponse{Success: true, ConsumerGroup: group, QueueName: queue, SeekToEnd: target.ToEnd,
		PartitionsUpdated: res.Lanes, Joined: res.Joined}
	if !target.ToEnd {
		out.TargetTimestamp = &api.Time{Time: target.Time}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *consumerGroupRoutes) groupPartitionSeek(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group", "queue", "partition"); err != nil {
		return err
	}
	target, err := decodeSeek(r, true)
	if err != nil {
		return err
	}
	group, queue, partition := r.PathValue("group"), r.PathValue("queue"), r.PathValue("partition")
	res, err := g.control.GroupSeek(r.Context(), caller(r).Tenant, store.GroupSeekParams{Group: group, Queue: queue,
		Partition: partition, Target: target})
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, api.PartitionSeekResponse{Success: true, ConsumerGroup: group, QueueName: queue,
		PartitionName: partition, Updated: res.Lanes > 0, CursorMovedTo: timeOrNull(res.CursorAt), Joined: res.Joined})
	return nil
}

// statsRefresh answers Queen's refresh: there is nothing to refresh, every
// figure is computed when asked.
func statsRefresh(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, api.StatsRefreshResponse{Success: true, StatsAge: 0,
		Message: "statistics are computed live from cursors and counters; there is nothing to refresh"})
	return nil
}
