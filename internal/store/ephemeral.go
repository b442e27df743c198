package store

import (
	"context"
	"errors"
	"time"

	"github.com/queen-go/queen/api"
)

// EphemeralStore keeps ephemeral queues: short-lived channels of one tenant
// (reply queues, notifications) without partitions, consumer groups or
// retention. A queue lives until its expiry (creation or the last keepalive
// plus its TTL); an expired queue is absent at once, and EphemeralSweep frees
// its rows later. Delivery is at most once: a pop deletes what it returns,
// and no two pops ever return the same message.
type EphemeralStore interface {
	// EphemeralCreate creates a queue; ErrEphemeralExists when a live queue
	// has the name (an expired one is replaced).
	EphemeralCreate(ctx context.Context, p *EphemeralCreateParams) (*EphemeralQueue, error)
	// EphemeralDelete deletes a queue and its messages; it reports whether
	// a live queue existed.
	EphemeralDelete(ctx context.Context, p *EphemeralDeleteParams) (bool, error)
	// EphemeralKeepalive moves a live queue's expiry to p.Now plus its TTL;
	// ErrEphemeralNotFound when there is none.
	EphemeralKeepalive(ctx context.Context, p *EphemeralKeepaliveParams) (*EphemeralQueue, error)
	// EphemeralList returns a page of the tenant's live queues by name,
	// with their depths.
	EphemeralList(ctx context.Context, p *EphemeralListParams) (*EphemeralListResult, error)
	// EphemeralPop deletes and returns up to p.Limit of the oldest messages
	// of a live queue; ErrEphemeralNotFound when there is none.
	EphemeralPop(ctx context.Context, p *EphemeralPopParams) ([]EphemeralMessage, error)
	// EphemeralPush stores messages, one result per item in order: an item
	// whose queue is absent or full is refused, the others stored.
	EphemeralPush(ctx context.Context, p *EphemeralPushParams) ([]EphemeralPushResult, error)
	// EphemeralSweep deletes up to p.Limit expired queues of every tenant,
	// with their messages, and returns how many.
	EphemeralSweep(ctx context.Context, p *EphemeralSweepParams) (int, error)
}

// Errors of ephemeral queues.
var (
	// ErrEphemeralExists: a live queue has the name.
	ErrEphemeralExists = errors.New(api.TextEphemeralExists)
	// ErrEphemeralNotFound is an ErrNotFound.
	ErrEphemeralNotFound = &NotFoundError{Text: api.TextEphemeralNotFound}
)

// EphemeralKey is the wake key of an ephemeral queue: pushes announce it
// (to other brokers too, as QueueKey does for queues), pops wait on it. It
// never equals a QueueKey, which starts with a tenant id.
func EphemeralKey(tenant, name string) string { return "eph:" + TenantOrDefault(tenant) + "/" + name }

// EphemeralQueue is a live ephemeral queue. Depth counts its messages (set
// by EphemeralList only).
type EphemeralQueue struct {
	CreatedAt   time.Time
	Depth       int
	ExpiresAt   time.Time
	MaxMessages int
	Name        string
	TTL         time.Duration
}

// EphemeralMessage is one delivered message.
type EphemeralMessage struct {
	CreatedAt time.Time
	ID        string
	Payload   []byte
}

// EphemeralCreateParams create a queue.
type EphemeralCreateParams struct {
	MaxMessages int
	Name        string
	Now         time.Time
	Tenant      string
	TTL         time.Duration
}

// EphemeralDeleteParams name a queue.
type EphemeralDeleteParams struct {
	Name   string
	Now    time.Time
	Tenant string
}

// EphemeralKeepaliveParams name a queue.
type EphemeralKeepaliveParams struct {
	Name   string
	Now    time.Time
	Tenant string
}

// EphemeralListParams select a page of queues.
type EphemeralListParams struct {
	Limit  int // <= 0 means 100
	Now    time.Time
	Offset int
	Tenant string
}

// EphemeralListResult is a page of queues and how many are live in all.
type EphemeralListResult struct {
	Queues []EphemeralQueue
	Total  int
}

// EphemeralPopParams pop from one queue.
type EphemeralPopParams struct {
	Limit  int // >= 1
	Name   string
	Now    time.Time
	Tenant string
}

// EphemeralItem is one message to push; ID is minted by the caller.
type EphemeralItem struct {
	ID      string
	Payload []byte
	Queue   string
}

// EphemeralPushParams push messages of one tenant, created at Now.
type EphemeralPushParams struct {
	Items  []EphemeralItem
	Now    time.Time
	Tenant string
}

// EphemeralPushResult is the verdict on one item: Error is "" when it was
// stored, else api.ReasonQueueNotFound or api.ReasonQueueFull.
type EphemeralPushResult struct {
	Error string
}

// EphemeralSweepParams bound one sweep step.
type EphemeralSweepParams struct {
	Limit int // queues at most; <= 0 means 100
	Now   time.Time
}
