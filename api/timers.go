package api

import "encoding/json"

// Timers (/api/v1/timers*): messages pushed to a queue at a time to come.

// TimersRequest is the body of POST /api/v1/timers.
type TimersRequest struct {
	// Items are scheduled in order; at least one.
	Items []TimerItem `json:"items"`
}

// TimerItem is one timer to schedule: the message it pushes, and when,
// by FireAt or DelaySeconds (neither: now).
type TimerItem struct {
	// Queue is required.
	Queue     string `json:"queue"`
	Partition string `json:"partition,omitempty"`
	// Payload is any JSON value, null included; it is required.
	Payload json.RawMessage `json:"payload"`
	// TransactionID deduplicates the timer, then its message.
	TransactionID string `json:"transactionId,omitempty"`
	// FireAt is an RFC 3339 time.
	FireAt *string `json:"fireAt,omitempty"`
	// DelaySeconds counts from now; fractions are kept.
	DelaySeconds *float64 `json:"delaySeconds,omitempty"`
}

// The statuses of a scheduling verdict.
const (
	TimerVerdictScheduled = "scheduled"
	TimerVerdictDuplicate = "duplicate"
	TimerVerdictFailed    = "failed"
)

// TimerScheduled is one element of a scheduling answer (201), in request
// order; its casing mirrors a push verdict's.
type TimerScheduled struct {
	Index         int     `json:"index"`
	TimerID       *string `json:"timer_id"`
	TransactionID string  `json:"transaction_id"`
	QueueName     string  `json:"queueName"`
	FireAt        *Time   `json:"fireAt"`
	// Status is TimerVerdictScheduled, TimerVerdictDuplicate or
	// TimerVerdictFailed.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// The states of a timer.
const (
	TimerScheduledState = "scheduled"
	TimerFiredState     = "fired"
	TimerCancelledState = "cancelled"
	TimerFailedState    = "failed"
)

// Timer is a timer as read.
type Timer struct {
	ID            string `json:"id"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	TransactionID string `json:"transactionId"`
	FireAt        Time   `json:"fireAt"`
	// Status is one of the Timer*State values.
	Status string `json:"status"`
	// MessageID is the pushed message's, once fired.
	MessageID   *string `json:"messageId"`
	CreatedAt   Time    `json:"createdAt"`
	FiredAt     *Time   `json:"firedAt"`
	CancelledAt *Time   `json:"cancelledAt,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// TimerList is GET /api/v1/timers.
type TimerList struct {
	Timers     []Timer    `json:"timers"`
	Pagination Pagination `json:"pagination"`
}

// TimerCancelled answers DELETE /api/v1/timers/{timerId}.
type TimerCancelled struct {
	Cancelled bool `json:"cancelled"`
}
