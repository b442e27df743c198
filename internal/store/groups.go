package store

import (
	"context"
	"time"

	"github.com/queen-go/queen/api"
)

// GroupStore inspects and repairs consumer groups: where each group stands
// on each lane, how far behind it is, and moving its cursors.
//
// A group has joined a queue when it has a consumer_groups row there: its
// first pop (or a seek) created it, with a lane for every partition. Queue
// mode (QueueMode) is a group like any other here.
type GroupStore interface {
	// GroupDelete drops a group's cursors on one queue (ErrQueueNotFound if
	// it does not exist) or on every queue of the tenant. With
	// DeleteMetadata the group leaves those queues (its next pop joins
	// afresh); without it the group stays joined and its cursors restart
	// from its subscription.
	GroupDelete(ctx context.Context, p *GroupDeleteParams) (*GroupDeleteResult, error)
	// GroupGet lists a page of a group's lanes on every queue it has
	// joined, by queue then partition name; ErrGroupNotFound when it has
	// joined none.
	GroupGet(ctx context.Context, p *GroupGetParams) ([]LaneInfo, error)
	// GroupLagging lists a page of lanes, of every group, whose oldest
	// unread message is older than p.MinLag, most behind first.
	GroupLagging(ctx context.Context, p *GroupLaggingParams) ([]LaneInfo, error)
	// GroupList lists a page of (group, queue) pairs with their figures, by
	// group then queue name.
	GroupList(ctx context.Context, p *GroupListParams) ([]GroupQueue, error)
	// GroupSeek moves a group's cursors on a queue, or on one partition of
	// it, to a point in time or to the end, under the same locks as pops
	// and acks. Leases and retry counters are dropped. A group that has not
	// joined the queue joins it there (see docs/decisions.md).
	// ErrQueueNotFound or ErrPartitionNotFound when the names do not exist.
	GroupSeek(ctx context.Context, p *GroupSeekParams) (*GroupSeekResult, error)
	// GroupSubscriptionSet changes where a group starts reading, on every
	// queue it has joined, and reports on how many; ErrGroupNotFound when
	// none. It takes effect when its cursors restart (GroupDelete without
	// DeleteMetadata); cursors in use do not move.
	GroupSubscriptionSet(ctx context.Context, p *GroupSubscriptionSetParams) (int, error)
}

// NotFoundError is the error of a request naming an entity that does not
// exist; its text is Queen's (api.TextQueueNotFound, "Queue not found"),
// which clients read. errors.Is(err, ErrNotFound) holds for it.
type NotFoundError struct {
	Text string
}

func (e *NotFoundError) Error() string { return e.Text }

// Is makes every NotFoundError an ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// The entities a control-plane request may name.
var (
	ErrGroupNotFound     = &NotFoundError{Text: api.TextGroupNotFound}
	ErrPartitionNotFound = &NotFoundError{Text: api.TextPartitionNotFound}
	ErrQueueNotFound     = &NotFoundError{Text: api.TextQueueNotFound}
)

// LaneInfo is where one group stands on one partition.
type LaneInfo struct {
	Consumed       int64     // messages committed since the partition was last cleared
	ConsumerGroup  string    //
	LastClaimedAt  time.Time // the group's last claim of the lane; zero when never
	Lag            int64     // unread messages
	LeaseExpiresAt time.Time // of the live lease; zero when none
	LeaseID        string    // the live lease; "" when none
	OldestUnread   time.Time // createdAt of the first unread message; zero when none
	Partition      string
	PartitionID    string
	Processing     int64 // messages under the live lease
	Queue          string
}

// GroupQueue is one group on one queue: its subscription and its figures
// over the queue's partitions.
type GroupQueue struct {
	Consumed          int64 // over all partitions; 0 when it never committed
	ConsumerGroup     string
	JoinedAt          time.Time
	Lag               int64 // unread messages over all partitions
	LaggingPartitions int   // partitions with unread messages
	Members           []GroupMember
	OldestUnread      time.Time // of all its lanes; zero when nothing is unread
	Queue             string
	SubscribedFrom    time.Time // zero: from the beginning
}

// MaxGroupMembers bounds GroupQueue.Members.
const MaxGroupMembers = 100

// GroupMember is a lane a consumer holds under a live lease.
type GroupMember struct {
	LeaseExpiresAt time.Time
	LeaseID        string
	Partition      string
	PartitionID    string
}

// GroupListParams select a page of (group, queue) pairs of a tenant.
type GroupListParams struct {
	Limit  int
	Now    time.Time
	Offset int
	Tenant string
}

// GroupGetParams name a group and the page of its lanes to list.
type GroupGetParams struct {
	Group  string
	Limit  int
	Now    time.Time
	Offset int
	Tenant string
}

// GroupLaggingParams select a page of lanes behind by more than MinLag.
type GroupLaggingParams struct {
	Limit  int
	MinLag time.Duration
	Now    time.Time
	Offset int
	Tenant string
}

// GroupDeleteParams name the group and, optionally, the queue.
type GroupDeleteParams struct {
	DeleteMetadata bool
	Group          string
	Now            time.Time
	Queue          string // "" means every queue
	Tenant         string
}

// GroupDeleteResult says how many lanes were dropped, and on which queues.
type GroupDeleteResult struct {
	Lanes  int
	Queues []string
}

// SeekTarget is where a seek moves cursors: to the end, or to just after
// the last message created at or before Time (the beginning when there is
// none).
type SeekTarget struct {
	Time  time.Time
	ToEnd bool
}

// GroupSeekParams move Group's cursors on Queue (or one Partition of it).
type GroupSeekParams struct {
	Group     string
	Now       time.Time
	Partition string // "" seeks every partition
	Queue     string
	Target    SeekTarget
	Tenant    string
}

// GroupSeekResult says what a seek moved.
type GroupSeekResult struct {
	// CursorAt is the createdAt of the last message at or before the new
	// cursor, for a one-partition seek; zero when there is none.
	CursorAt time.Time
	Joined   bool // the group joined the queue with this seek
	Lanes    int  // lanes moved
}

// GroupSubscriptionSetParams set where Group starts reading.
type GroupSubscriptionSetParams struct {
	From   time.Time // the zero time (or the Unix epoch) means from the beginning
	Group  string
	Now    time.Time
	Tenant string
}
