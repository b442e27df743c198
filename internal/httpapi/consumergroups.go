package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Consumer groups as the control plane shows them, with Queen's keys: the
// list and the lagging lanes are bare arrays (the lagging ones in
// snake_case), a group's description is an object keyed by queue name.

// consumerGroupRoutes list, describe, seek and delete consumer groups.
// /consumer-groups/lagging wins over /consumer-groups/{group} (ServeMux
// prefers the literal segment), as in Queen.
func (a *api) consumerGroupRoutes() []route {
	return []route{
		r(AccessRead, "GET", "/api/v1/consumer-groups", "group_list", a.groupList),
		r(AccessRead, "GET", "/api/v1/consumer-groups/lagging", "group_lagging", a.groupLagging),
		r(AccessRead, "GET", "/api/v1/consumer-groups/{group}", "group_get", a.groupGet),
		r(AccessAdmin, "DELETE", "/api/v1/consumer-groups/{group}", "group_delete", a.groupDelete),
		r(AccessAdmin, "DELETE", "/api/v1/consumer-groups/{group}/queues/{queue}", "group_queue_delete", a.groupDelete),
		r(AccessReadWrite, "POST", "/api/v1/consumer-groups/{group}/subscription", "group_subscription",
			a.groupSubscription),
		r(AccessReadWrite, "POST", "/api/v1/consumer-groups/{group}/queues/{queue}/seek", "group_seek", a.groupSeek),
		r(AccessReadWrite, "POST", "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
			"group_partition_seek", a.groupPartitionSeek),
		r(AccessAdmin, "POST", "/api/v1/stats/refresh", "stats_refresh", a.statsRefresh).processWide(),
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

type memberJSON struct {
	Partition      string `json:"partition"`
	PartitionID    string `json:"partitionId"`
	LeaseID        string `json:"leaseId"`
	LeaseExpiresAt string `json:"leaseExpiresAt"`
}

type groupListItemJSON struct {
	Name                  string       `json:"name"`
	Topics                []string     `json:"topics"`
	QueueName             string       `json:"queueName"`
	Members               []memberJSON `json:"members"`
	PartitionsWithLag     int          `json:"partitionsWithLag"`
	TotalLag              int64        `json:"totalLag"`
	MaxTimeLag            float64      `json:"maxTimeLag"`
	State                 string       `json:"state"`
	SubscriptionMode      string       `json:"subscriptionMode"`
	SubscriptionTimestamp *string      `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt string       `json:"subscriptionCreatedAt"`
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

func (a *api) groupList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	if q.err != nil {
		return q.err
	}
	groups, err := a.control.GroupList(r.Context(), caller(r).Tenant, store.GroupListParams{Limit: limit,
		Offset: offset})
	if err != nil {
		return err
	}
	out := make([]groupListItemJSON, len(groups))
	for i := range groups {
		g := &groups[i]
		members := make([]memberJSON, len(g.Members))
		for j, m := range g.Members {
			members[j] = memberJSON{Partition: m.Partition, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
				LeaseExpiresAt: timestamp(m.LeaseExpiresAt)}
		}
		out[i] = groupListItemJSON{Name: g.ConsumerGroup, Topics: []string{g.Queue}, QueueName: g.Queue,
			Members: members, PartitionsWithLag: g.LaggingPartitions, TotalLag: g.Lag,
			MaxTimeLag: seconds(g.MaxTimeLag), State: g.State, SubscriptionMode: subscriptionMode(&g.GroupQueue),
			SubscriptionTimestamp: tsOrNull(g.SubscribedFrom), SubscriptionCreatedAt: timestamp(g.JoinedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type laggingJSON struct {
	ConsumerGroup      string  `json:"consumer_group"`
	QueueName          string  `json:"queue_name"`
	PartitionName      string  `json:"partition_name"`
	PartitionID        string  `json:"partition_id"`
	WorkerID           *string `json:"worker_id"`
	OffsetLag          int64   `json:"offset_lag"`
	TimeLagSeconds     float64 `json:"time_lag_seconds"`
	LagHours           float64 `json:"lag_hours"`
	OldestUnconsumedAt *string `json:"oldest_unconsumed_at"`
	LastConsumedAt     *string `json:"last_consumed_at"`
}

func (a *api) groupLagging(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	minLag := q.int("minLagSeconds", DefaultLagSeconds, rangeLagSeconds)
	if q.err != nil {
		return q.err
	}
	lanes, err := a.control.GroupLagging(r.Context(), caller(r).Tenant, store.GroupLaggingParams{
		MinLag: time.Duration(minLag) * time.Second, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	out := make([]laggingJSON, len(lanes))
	for i, l := range lanes {
		out[i] = laggingJSON{ConsumerGroup: l.ConsumerGroup, QueueName: l.Queue, PartitionName: l.Partition,
			PartitionID: l.PartitionID, WorkerID: nullable(l.LeaseID), OffsetLag: l.Lag,
			TimeLagSeconds: seconds(l.TimeLag), LagHours: math.Round(l.TimeLag.Hours()*100) / 100,
			OldestUnconsumedAt: tsOrNull(l.OldestUnread), LastConsumedAt: tsOrNull(l.LastClaimedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type groupLaneJSON struct {
	Partition      string  `json:"partition"`
	PartitionID    string  `json:"partitionId"`
	WorkerID       *string `json:"workerId"`
	LastConsumedAt *string `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds float64 `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
}

type groupQueueJSON struct {
	Partitions []groupLaneJSON `json:"partitions"`
}

func (a *api) groupGet(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group"); err != nil {
		return err
	}
	q := parseQuery(r)
	limit, offset := q.page(DefaultPartitionLimit, MaxPartitionLimit)
	if q.err != nil {
		return q.err
	}
	lanes, err := a.control.GroupGet(r.Context(), caller(r).Tenant, store.GroupGetParams{Group: r.PathValue("group"),
		Limit: limit, Offset: offset})
	if err != nil {
		return entity(err)
	}
	out := map[string]*groupQueueJSON{}
	for _, l := range lanes {
		gq := out[l.Queue]
		if gq == nil {
			gq = &groupQueueJSON{Partitions: []groupLaneJSON{}}
			out[l.Queue] = gq
		}
		gq.Partitions = append(gq.Partitions, groupLaneJSON{Partition: l.Partition, PartitionID: l.PartitionID,
			WorkerID: nullable(l.LeaseID), LastConsumedAt: tsOrNull(l.LastClaimedAt), TotalConsumed: l.Consumed,
			OffsetLag: l.Lag, TimeLagSeconds: seconds(l.TimeLag), LeaseActive: l.LeaseID != ""})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type groupDeleteJSON struct {
	Success           bool    `json:"success"`
	ConsumerGroup     string  `json:"consumerGroup"`
	QueueName         *string `json:"queueName,omitempty"`
	DeletedPartitions int     `json:"deletedPartitions"`
	MetadataDeleted   bool    `json:"metadataDeleted"`
}

// groupDelete serves both deletes: of a group on every queue, and on the
// queue in the path. deleteMetadata (default false) also forgets the
// group's subscription; without it the group restarts from it.
func (a *api) groupDelete(w http.ResponseWriter, r *http.Request) error {
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
	res, err := a.control.GroupDelete(r.Context(), caller(r).Tenant, store.GroupDeleteParams{Group: group,
		Queue: queue, DeleteMetadata: meta})
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, groupDeleteJSON{Success: true, ConsumerGroup: group, QueueName: nullable(queue),
		DeletedPartitions: res.Lanes, MetadataDeleted: meta})
	return nil
}

type subscriptionBody struct {
	SubscriptionTimestamp *string `json:"subscriptionTimestamp"`
}

type subscriptionJSON struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	NewTimestamp  string `json:"newTimestamp"`
	RowsUpdated   int    `json:"rowsUpdated"`
}

func (a *api) groupSubscription(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group"); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var b subscriptionBody
	if len(body) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return err
		}
	}
	if b.SubscriptionTimestamp == nil || *b.SubscriptionTimestamp == "" {
		return badRequest("Missing subscriptionTimestamp in request body")
	}
	from, err := parseTimestamp("subscriptionTimestamp", *b.SubscriptionTimestamp)
	if err != nil {
		return err
	}
	group := r.PathValue("group")
	n, err := a.control.GroupSubscriptionSet(r.Context(), caller(r).Tenant, group, from)
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, subscriptionJSON{Success: true, ConsumerGroup: group, NewTimestamp: timestamp(from),
		RowsUpdated: n})
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

type seekBody struct {
	Timestamp *string `json:"timestamp"`
	ToEnd     *bool   `json:"toEnd"`
}

// decodeSeek reads a seek's body: {"toEnd":true} or {"timestamp":…}. An
// empty body or {} means toEnd when emptyToEnd (the partition seek, which
// Queen sends without a body), else it is a 400.
func decodeSeek(r *http.Request, emptyToEnd bool) (store.SeekTarget, error) {
	body, err := readBody(r)
	if err != nil {
		return store.SeekTarget{}, err
	}
	var b seekBody
	if len(body) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return store.SeekTarget{}, err
		}
	}
	toEnd := b.ToEnd != nil && *b.ToEnd
	hasTime := b.Timestamp != nil && *b.Timestamp != ""
	switch {
	case toEnd && hasTime:
		return store.SeekTarget{}, badRequest("Specify either 'toEnd': true or 'timestamp', not both")
	case toEnd:
		return store.SeekTarget{ToEnd: true}, nil
	case hasTime:
		t, err := parseTimestamp("timestamp", *b.Timestamp)
		return store.SeekTarget{Time: t}, err
	case emptyToEnd:
		return store.SeekTarget{ToEnd: true}, nil
	}
	return store.SeekTarget{}, badRequest("Must specify either 'toEnd': true or 'timestamp'")
}

type seekJSON struct {
	Success           bool    `json:"success"`
	ConsumerGroup     string  `json:"consumerGroup"`
	QueueName         string  `json:"queueName"`
	SeekToEnd         bool    `json:"seekToEnd"`
	TargetTimestamp   *string `json:"targetTimestamp"`
	PartitionsUpdated int     `json:"partitionsUpdated"`
	Joined            bool    `json:"joined"`
}

func (a *api) groupSeek(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group", "queue"); err != nil {
		return err
	}
	target, err := decodeSeek(r, false)
	if err != nil {
		return err
	}
	group, queue := r.PathValue("group"), r.PathValue("queue")
	res, err := a.control.GroupSeek(r.Context(), caller(r).Tenant, store.GroupSeekParams{Group: group, Queue: queue,
		Target: target})
	if err != nil {
		return entity(err)
	}
	out := seekJSON{Success: true, ConsumerGroup: group, QueueName: queue, SeekToEnd: target.ToEnd,
		PartitionsUpdated: res.Lanes, Joined: res.Joined}
	if !target.ToEnd {
		ts := timestamp(target.Time)
		out.TargetTimestamp = &ts
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type partitionSeekJSON struct {
	Success       bool    `json:"success"`
	ConsumerGroup string  `json:"consumerGroup"`
	QueueName     string  `json:"queueName"`
	PartitionName string  `json:"partitionName"`
	Updated       bool    `json:"updated"`
	CursorMovedTo *string `json:"cursorMovedTo"`
	Joined        bool    `json:"joined"`
}

func (a *api) groupPartitionSeek(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "group", "queue", "partition"); err != nil {
		return err
	}
	target, err := decodeSeek(r, true)
	if err != nil {
		return err
	}
	group, queue, partition := r.PathValue("group"), r.PathValue("queue"), r.PathValue("partition")
	res, err := a.control.GroupSeek(r.Context(), caller(r).Tenant, store.GroupSeekParams{Group: group, Queue: queue,
		Partition: partition, Target: target})
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, partitionSeekJSON{Success: true, ConsumerGroup: group, QueueName: queue,
		PartitionName: partition, Updated: res.Lanes > 0, CursorMovedTo: tsOrNull(res.CursorAt), Joined: res.Joined})
	return nil
}

type statsRefreshJSON struct {
	Success  bool   `json:"success"`
	StatsAge int    `json:"statsAge"`
	Message  string `json:"message"`
}

// statsRefresh answers Queen's refresh: there is nothing to refresh, every
// figure is computed when asked.
func (a *api) statsRefresh(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, statsRefreshJSON{Success: true, StatsAge: 0,
		Message: "statistics are computed live from cursors and counters; there is nothing to refresh"})
	return nil
}
