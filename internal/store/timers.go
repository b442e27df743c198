package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/queen-go/queen/api"
)

// TimerStore keeps timers: messages to push at a given time. A fire pushes
// the timer's message exactly as a push would (queue and partition created
// on demand, dedup by transactionId, wake-ups of other brokers) and marks
// the timer fired in the same transaction, so that a crash never loses a
// fire nor repeats one.
type TimerStore interface {
	// TimerCancel cancels a scheduled timer of the tenant and returns it.
	// Cancelling a cancelled timer returns it unchanged; a timer that has
	// fired (or failed) is ErrTimerFired; an unknown one ErrTimerNotFound.
	TimerCancel(ctx context.Context, p *TimerCancelParams) (*Timer, error)
	// TimerFireDue fires up to p.Limit timers due at p.Now, of every
	// tenant, earliest fireAt first, in one transaction. Timers another
	// broker is firing at the same moment are skipped, never fired twice.
	TimerFireDue(ctx context.Context, p *TimerFireDueParams) (*TimerFireResult, error)
	// TimerGet returns one timer of the tenant; ErrTimerNotFound if none.
	TimerGet(ctx context.Context, p *TimerGetParams) (*Timer, error)
	// TimerList returns a page of the tenant's timers, by fireAt then id.
	TimerList(ctx context.Context, p *TimerListParams) (*TimerListResult, error)
	// TimerNext returns the earliest fireAt of a scheduled timer of any
	// tenant; false when none is scheduled.
	TimerNext(ctx context.Context, p *TimerNextParams) (time.Time, bool, error)
	// TimerPrune deletes up to p.Limit timers that left scheduled before
	// p.Before, and returns how many.
	TimerPrune(ctx context.Context, p *TimerPruneParams) (int, error)
	// TimerSchedule stores timers, one result per item in order. An item
	// whose (tenant, queue, partition, transactionId) a stored timer already
	// has is not stored again: its result is that timer, Duplicate.
	TimerSchedule(ctx context.Context, p *TimerScheduleParams) ([]TimerScheduleResult, error)
}

// TimerStatus is where a timer is in its life.
type TimerStatus string

// Timer statuses.
const (
	TimerCancelled TimerStatus = "cancelled"
	// TimerFailed: the push was refused (the queue was full, maxSize);
	// Error says why. The timer does not fire again.
	TimerFailed    TimerStatus = "failed"
	TimerFired     TimerStatus = "fired"
	TimerScheduled TimerStatus = "scheduled"
)

// Errors of TimerCancel and TimerGet.
var (
	// ErrTimerFired: the timer fired (or failed) before it could be
	// cancelled.
	ErrTimerFired = errors.New(api.TextTimerFired)
	// ErrTimerNotFound is an ErrNotFound.
	ErrTimerNotFound = &NotFoundError{Text: api.TextTimerNotFound}
)

// Timer is a scheduled, fired, failed or cancelled timer. MessageID is the
// id its message has (or will have) once pushed; a fire that found the
// transactionId already stored in the partition records that message's id.
type Timer struct {
	CreatedAt     time.Time
	Error         string
	FinishedAt    time.Time // when it left scheduled; zero while scheduled
	FireAt        time.Time
	ID            string
	MessageID     string
	Partition     string
	Queue         string
	Status        TimerStatus
	Tenant        string
	TransactionID string
}

// TimerItem is one timer to store: the message to push (MessageID,
// TransactionID, Partition, Namespace and Task already set, as the broker
// sets them for a push) and when.
type TimerItem struct {
	FireAt time.Time
	ID     string // UUIDv7, minted by the caller
	Item   PushItem
}

// TimerScheduleParams store timers of one tenant (every Item.Tenant is it).
type TimerScheduleParams struct {
	Items  []TimerItem
	Now    time.Time
	Tenant string
}

// TimerScheduleResult is the timer stored for an item, or the timer already
// stored under its transactionId (Duplicate).
type TimerScheduleResult struct {
	Duplicate bool
	Timer     Timer
}

// TimerFireDueParams bound one fire step.
type TimerFireDueParams struct {
	Limit int // <= 0 means 1000
	Now   time.Time
}

// TimerFireResult is what a fire step did: the timers it fired (or failed),
// in fire order. Pushed lists what the step stored, per tenant and queue, so
// the caller can wake consumers and count the pushes; a duplicate fire
// stores nothing.
type TimerFireResult struct {
	Fired  []FiredTimer
	Pushed []PushedCount
}

// FiredTimer is one timer a step fired.
type FiredTimer struct {
	Duplicate bool // its transactionId was already stored: nothing pushed
	Timer     Timer
}

// PushedCount counts messages a step stored in one queue.
type PushedCount struct {
	Messages int
	Queue    string
	Tenant   string
}

// TimerGetParams name one timer.
type TimerGetParams struct {
	ID     string
	Tenant string
}

// TimerCancelParams name the timer to cancel.
type TimerCancelParams struct {
	ID     string
	Now    time.Time
	Tenant string
}

// TimerListParams select a page of timers.
type TimerListParams struct {
	Limit  int    // <= 0 means 100
	Offset int    // timers to skip
	Queue  string // "" for every queue
	Status TimerStatus
	Tenant string
}

// TimerListResult is a page of timers and how many match in all.
type TimerListResult struct {
	Timers []Timer
	Total  int
}

// TimerNextParams ask for the next due time.
type TimerNextParams struct {
	Now time.Time
}

// TimerPruneParams bound one step of the deletion of finished timers.
type TimerPruneParams struct {
	Before time.Time
	Limit  int // <= 0 means 1000
	Now    time.Time
}

// TimerFireOutcome sets the outcome of each fired timer from the result of
// its push (res[i] for fired[i]): fired, fired as a duplicate (recording the
// id of the message already stored under the transactionId), or failed. It
// returns the messages stored per tenant and queue. Drivers call it inside
// the fire's transaction, before they record the outcomes.
func TimerFireOutcome(fired []FiredTimer, res []PushResult, now time.Time) []PushedCount {
	var pushed []PushedCount
	for i := range fired {
		tm := &fired[i].Timer
		r := res[i]
		tm.FinishedAt = time.UnixMilli(now.UnixMilli()).UTC()
		switch r.Status {
		case PushQueued:
			tm.Status = TimerFired
			j := slices.IndexFunc(pushed, func(c PushedCount) bool { return c.Tenant == tm.Tenant && c.Queue == tm.Queue })
			if j < 0 {
				pushed = append(pushed, PushedCount{Tenant: tm.Tenant, Queue: tm.Queue})
				j = len(pushed) - 1
			}
			pushed[j].Messages++
		case PushDuplicate:
			tm.Status, tm.MessageID, fired[i].Duplicate = TimerFired, r.MessageID, true
		default:
			tm.Status, tm.Error = TimerFailed, r.Error
		}
	}
	return pushed
}

// TimerWakeKey is the wake key a schedule announces to the other brokers
// sharing the database (as QueueKey announces a push), so that the one
// firing timers learns of a timer due before its next look.
const TimerWakeKey = "timers:scheduled"
