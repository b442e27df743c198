package client

import (
	"fmt"
	"strings"

	"github.com/queen-go/queen/api"
)

// The kinds of error the broker answers, for errors.Is: an error answer is
// an *api.Error, and two of those match when their codes are equal, so
// errors.Is(err, client.ErrNotFound) holds for every 404 of a missing
// entity whatever its text.
var (
	ErrBadRequest         = api.ErrBadRequest
	ErrUnauthorized       = api.ErrUnauthorized
	ErrForbidden          = api.ErrForbidden
	ErrFeatureDisabled    = api.ErrFeatureDisabled
	ErrNotFound           = api.ErrNotFound
	ErrMessageNotFound    = api.ErrMessageNotFound
	ErrNoSuchRoute        = api.ErrNoSuchRoute
	ErrConflict           = api.ErrConflict
	ErrKVConflict         = api.ErrKVConflict
	ErrTimerFired         = api.ErrTimerFired
	ErrEphemeralExists    = api.ErrEphemeralExists
	ErrNotDeadLettered    = api.ErrNotDeadLettered
	ErrBodyTooLarge       = api.ErrBodyTooLarge
	ErrLimitExceeded      = api.ErrLimitExceeded
	ErrRateLimited        = api.ErrRateLimited
	ErrInternal           = api.ErrInternal
	ErrUnavailable        = api.ErrUnavailable
	ErrShuttingDown       = api.ErrShuttingDown
	ErrFeatureUnavailable = api.ErrFeatureUnavailable
)

// ErrPartial matches every *PartialError.
var ErrPartial = &PartialError{}

// PartialError is a push or an acknowledgement answered 2xx whose verdicts
// say that some items failed, or whose verdicts do not match the items
// sent one for one.
type PartialError struct {
	// Op is "push", "ack" or "transaction".
	Op string
	// Sent and Got are the numbers of items sent and of verdicts answered.
	Sent, Got int
	// Failed are the items that failed, in request order.
	Failed []ItemError
}

// ItemError is one failed item of a push or an acknowledgement.
type ItemError struct {
	Index         int
	TransactionID string
	Reason        string
}

func (e *PartialError) Error() string {
	if e.Sent != e.Got {
		return fmt.Sprintf("%s: sent %d items, got %d verdicts", e.Op, e.Sent, e.Got)
	}
	parts := make([]string, 0, min(len(e.Failed), 3))
	for i, f := range e.Failed {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Failed)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("item %d (%s): %s", f.Index, f.TransactionID, f.Reason))
	}
	return fmt.Sprintf("%s: %d of %d items failed: %s", e.Op, len(e.Failed), e.Sent, strings.Join(parts, "; "))
}

// Is makes every *PartialError match ErrPartial.
func (e *PartialError) Is(target error) bool {
	_, ok := target.(*PartialError)
	return ok
}
