package api

// Webhook ingress (POST /ingress/v1/{queue}) and its management routes
// answer their errors as {"error":{"code","message"}} (IngressErrorBody),
// with these codes besides the catalogue's.

// The codes of the ingress.
const (
	CodeInvalidBody       Code = "invalid_body"
	CodeMissingAPIKey     Code = "missing_api_key"
	CodeInvalidAPIKey     Code = "invalid_api_key"
	CodeInvalidSignature  Code = "invalid_signature"
	CodeTimestampOutRange Code = "timestamp_out_of_range"
	CodeReplayedRequest   Code = "replayed_request"
	CodeIPNotAllowed      Code = "ip_not_allowed"
	CodeQueuePaused       Code = "queue_paused"
	CodeLoopDetected      Code = "loop_detected"
	CodeMaxHopsExceeded   Code = "max_hops_exceeded"
)

// The errors of the ingress.
var (
	ErrInvalidBody       = row(CodeInvalidBody, 400, "body is not one JSON value")
	ErrMissingAPIKey     = row(CodeMissingAPIKey, 401, "X-Api-Key required")
	ErrInvalidAPIKey     = row(CodeInvalidAPIKey, 401, "invalid API key")
	ErrInvalidSignature  = row(CodeInvalidSignature, 401, "invalid signature")
	ErrTimestampOutRange = row(CodeTimestampOutRange, 401, "timestamp out of range")
	ErrReplayedRequest   = row(CodeReplayedRequest, 401, "nonce already used")
	ErrIPNotAllowed      = row(CodeIPNotAllowed, 403, "client address not allowed")
	ErrQueuePaused       = row(CodeQueuePaused, 409, "queue ingress is paused")
	ErrLoopDetected      = row(CodeLoopDetected, 422, "X-Queuey-Path forms a cycle")
	ErrMaxHopsExceeded   = row(CodeMaxHopsExceeded, 422, "X-Queuey-Path exceeds the hop budget")
)

// IngressErrorBody is an error answer of the ingress routes.
type IngressErrorBody struct {
	Error IngressError `json:"error"`
}

// IngressError is the error of an IngressErrorBody.
type IngressError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// IngressAccepted is the 202 of POST /ingress/v1/{queue}: the stored
// message's id as the event's, and whether an Idempotency-Key repeated an
// event already accepted (whose id it then is).
type IngressAccepted struct {
	EventID   string `json:"eventId"`
	Partition string `json:"partition"`
	Queue     string `json:"queue"`
	Replayed  bool   `json:"replayed"`
}

// IngressQueue is a queue's ingress settings (PUT and GET
// /api/v1/ingress/queues/{queue}).
type IngressQueue struct {
	// Auth is "api_key" (X-Api-Key) or "hmac" (signed requests).
	Auth string `json:"auth"`
	// AllowIPs, when not empty, admits only these addresses and CIDR
	// ranges.
	AllowIPs []string `json:"allowIps"`
	// PartitionHeader and PartitionField name where a request without a
	// partition in its path takes it from: a header, else a top-level
	// string field of the body; else "Default".
	PartitionHeader string `json:"partitionHeader,omitempty"`
	PartitionField  string `json:"partitionField,omitempty"`
	Paused          bool   `json:"paused"`
	Queue           string `json:"queue"`
	// Forward lifts values off each accepted request (a header, a query
	// parameter or a top-level body field) into headers its deliveries
	// carry, snapshotted at accept.
	Forward []IngressForward `json:"forward,omitempty"`
}

// IngressForward is one value an accepted request's deliveries carry:
// From is "header", "query" or "body", Name what to read there, As the
// header name it is delivered under.
type IngressForward struct {
	As   string `json:"as"`
	From string `json:"from"`
	Name string `json:"name"`
}

// IngressCredential is an API key or a signing secret of a queue. Secret
// is set only in the answer that creates it: it is shown once.
type IngressCredential struct {
	// APIKey is the whole X-Api-Key value, qak_<keyId>.<secret> (API keys).
	APIKey    string `json:"apiKey,omitempty"`
	CreatedAt string `json:"createdAt"`
	KeyID     string `json:"keyId"`
	Kind      string `json:"kind"` // "api_key" or "signing_secret"
	Queue     string `json:"queue"`
	// Secret is the HMAC key (signing secrets), lowercase hex.
	Secret string `json:"secret,omitempty"`
}
