package api

// Webhook delivery: targets a queue's messages are POSTed to, and the
// attempts made per message (/api/v1/delivery/...). The routes answer their
// errors in the ingress's envelope, {"error":{"code","message"}}.

// DeliveryTarget is a delivery target (POST, PUT and GET
// /api/v1/delivery/targets[/{id}]). Secrets (the auth's token, password
// and client secret, and the signing secret) are never answered back but
// once: SigningSecret in the answer that creates the target.
type DeliveryTarget struct {
	Attempts       int               `json:"attempts,omitempty"` // per redelivery; 0: the broker's default
	Auth           *DeliveryAuth     `json:"auth,omitempty"`
	ConsumerGroup  string            `json:"consumerGroup"`
	CreatedAt      string            `json:"createdAt,omitempty"`
	GroupKeyHeader string            `json:"groupKeyHeader,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	ID             string            `json:"id"`
	Paused         bool              `json:"paused"`
	Queue          string            `json:"queue"`
	// Sign signs each delivery (X-Queuey-Signature and its headers) with
	// the target's signing secret.
	Sign          bool   `json:"sign"`
	SigningKeyID  string `json:"signingKeyId,omitempty"`
	SigningSecret string `json:"signingSecret,omitempty"`
	TimeoutMs     int    `json:"timeoutMs,omitempty"` // 0: the broker's default
	UpdatedAt     string `json:"updatedAt,omitempty"`
	URL           string `json:"url"`
	Workers       int    `json:"workers,omitempty"` // partitions in flight per broker; 0: default
}

// DeliveryAuth is how a target is authenticated: Mode "none", "bearer"
// (Token), "basic" (Username, Password) or "oauth2" (client credentials:
// ClientID, ClientSecret, TokenURL, Scopes).
type DeliveryAuth struct {
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	Mode         string   `json:"mode"`
	Password     string   `json:"password,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Token        string   `json:"token,omitempty"`
	TokenURL     string   `json:"tokenUrl,omitempty"`
	Username     string   `json:"username,omitempty"`
}

// DeliveryAttempt is one POST of a message to a target.
type DeliveryAttempt struct {
	At        string  `json:"at"`
	Code      int     `json:"code,omitempty"` // the receiver's status; 0 when none came
	Error     string  `json:"error,omitempty"`
	LatencyMs float64 `json:"latencyMs"`
	// Status is "delivered" (2xx), "failed" (another status), "timeout",
	// "refused" (the address is not allowed) or "error" (no answer).
	Status string `json:"status"`
}

// DeliveryAttempts are a message's attempts to one target (the latest
// kept), and where they left it: "delivered", "retrying" (nacked, the
// queue redelivers it) or "dlq".
type DeliveryAttempts struct {
	Attempts  []DeliveryAttempt `json:"attempts"`
	MessageID string            `json:"messageId"`
	Outcome   string            `json:"outcome"`
	Partition string            `json:"partition"`
	Queue     string            `json:"queue"`
	Target    string            `json:"target"`
	Total     int               `json:"total"` // attempts made, kept or not
}
