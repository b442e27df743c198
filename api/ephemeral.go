package api

import "encoding/json"

// Ephemeral queues (/api/v1/ephemeral*): short-lived channels with a TTL
// renewed by keepalive, a bound on their depth and at-most-once delivery.

// EphemeralCreateRequest is the optional body of POST /api/v1/ephemeral.
type EphemeralCreateRequest struct {
	// Name is the queue's; "" mints one.
	Name string `json:"name,omitempty"`
	// TTLSeconds is how long the queue lives without a keepalive; nil
	// means 300.
	TTLSeconds *int `json:"ttlSeconds,omitempty"`
	// MaxMessages bounds its depth; nil means 1000.
	MaxMessages *int `json:"maxMessages,omitempty"`
}

// EphemeralCreated answers a creation (201).
type EphemeralCreated struct {
	ExpiresAt   Time   `json:"expiresAt"`
	MaxMessages int    `json:"maxMessages"`
	Queue       string `json:"queue"`
	TTLSeconds  int    `json:"ttlSeconds"`
}

// EphemeralList is GET /api/v1/ephemeral.
type EphemeralList struct {
	Queues     []EphemeralQueue `json:"queues"`
	Pagination Pagination       `json:"pagination"`
}

// EphemeralQueue is one queue of the list.
type EphemeralQueue struct {
	Queue       string `json:"queue"`
	CreatedAt   Time   `json:"createdAt"`
	ExpiresAt   Time   `json:"expiresAt"`
	Depth       int    `json:"depth"`
	MaxMessages int    `json:"maxMessages"`
	TTLSeconds  int    `json:"ttlSeconds"`
}

// EphemeralPushRequest is the body of POST /api/v1/ephemeral/push.
type EphemeralPushRequest struct {
	Items []EphemeralItem `json:"items"`
}

// EphemeralItem is one message to push.
type EphemeralItem struct {
	// Queue is required.
	Queue string `json:"queue"`
	// Payload is any JSON value, null included; it is required.
	Payload json.RawMessage `json:"payload"`
}

// EphemeralVerdict is one element of a push answer (201): PushQueued, or
// PushFailed with ReasonQueueNotFound or ReasonQueueFull.
type EphemeralVerdict struct {
	Index     int        `json:"index"`
	MessageID *string    `json:"message_id"`
	QueueName string     `json:"queueName"`
	Status    PushStatus `json:"status"`
	Error     string     `json:"error,omitempty"`
}

// EphemeralPop answers a pop that delivered messages (200); they are
// deleted as they are delivered.
type EphemeralPop struct {
	Queue    string             `json:"queue"`
	Messages []EphemeralMessage `json:"messages"`
}

// EphemeralMessage is one delivered message.
type EphemeralMessage struct {
	ID        string          `json:"id"`
	Data      json.RawMessage `json:"data"`
	CreatedAt Time            `json:"createdAt"`
}

// EphemeralKeepalive answers a keepalive.
type EphemeralKeepalive struct {
	ExpiresAt Time   `json:"expiresAt"`
	Queue     string `json:"queue"`
}

// EphemeralDeleted answers DELETE /api/v1/ephemeral/{queue}.
type EphemeralDeleted struct {
	Deleted bool `json:"deleted"`
}
