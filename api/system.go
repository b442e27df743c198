package api

// The broker's own routes: probes, metrics, maintenance modes and the
// spool, and who the caller is.

// Health is /health's document, at 200 and 503 alike.
type Health struct {
	// Status is healthy or unhealthy.
	Status string `json:"status"`
	// Database is connected or disconnected.
	Database string `json:"database"`
	// Engine is sqlite or postgres.
	Engine  string `json:"engine"`
	Version string `json:"version"`
	// Auth is "none" only when the API is served without authentication
	// on an address other hosts can reach; absent otherwise.
	Auth string `json:"auth,omitempty"`
}

// Ready is /ready's document: 200 "ready"; 503 "not ready" while the
// database is unreachable, or "shutting down".
type Ready struct {
	Status   string `json:"status"`
	Database string `json:"database"`
}

// Live is the liveness probes' document (/healthz, /live).
type Live struct {
	Status string `json:"status"`
}

// MaintenanceRequest is the body of both maintenance toggles.
type MaintenanceRequest struct {
	// Enabled is required.
	Enabled *bool `json:"enabled"`
}

// Maintenance is GET /api/v1/system/maintenance.
type Maintenance struct {
	MaintenanceMode    bool        `json:"maintenanceMode"`
	PopMaintenanceMode bool        `json:"popMaintenanceMode"`
	BufferedMessages   int64       `json:"bufferedMessages"`
	BufferHealthy      bool        `json:"bufferHealthy"`
	BufferStats        BufferStats `json:"bufferStats"`
}

// BufferStats are the disk spool's figures.
type BufferStats struct {
	PendingCount int64 `json:"pendingCount"`
	FailedCount  int64 `json:"failedCount"`
	DBHealthy    bool  `json:"dbHealthy"`
}

// MaintenanceSet answers POST /api/v1/system/maintenance.
type MaintenanceSet struct {
	MaintenanceMode  bool   `json:"maintenanceMode"`
	BufferedMessages int64  `json:"bufferedMessages"`
	BufferHealthy    bool   `json:"bufferHealthy"`
	Message          string `json:"message"`
}

// PopMaintenance answers both pop-maintenance routes.
type PopMaintenance struct {
	PopMaintenanceMode bool   `json:"popMaintenanceMode"`
	Message            string `json:"message"`
}

// Buffers is /api/v1/status/buffers: this broker's disk spool. Failed and
// DeadLettered are the same count: pushes the database refused at replay,
// set aside in the spool's dead-letter file.
type Buffers struct {
	Pending   int64 `json:"pending"`
	Failed    int64 `json:"failed"`
	DBHealthy bool  `json:"dbHealthy"`
	Worker    int   `json:"worker"`
	// Beyond Queen: what failed means here, and push maintenance.
	DeadLettered    int64 `json:"deadLettered"`
	BufferHealthy   bool  `json:"bufferHealthy"`
	MaintenanceMode bool  `json:"maintenanceMode"`
}

// MetricsSnapshot is /metrics: Queen's JSON snapshot of the process.
type MetricsSnapshot struct {
	CPU       MetricsCPU      `json:"cpu"`
	Database  MetricsDatabase `json:"database"`
	LongPolls MetricsPolls    `json:"longPolls"`
	Memory    MetricsMemory   `json:"memory"`
	Messages  MetricsRate     `json:"messages"`
	Requests  MetricsRate     `json:"requests"`
	// Uptime is in seconds.
	Uptime float64 `json:"uptime"`
}

// MetricsCPU is CPU time since start, in microseconds.
type MetricsCPU struct {
	System float64 `json:"system"`
	User   float64 `json:"user"`
}

// MetricsDatabase is the database pool.
type MetricsDatabase struct {
	ActiveConnections int64  `json:"activeConnections"`
	Engine            string `json:"engine"`
	IdleConnections   int64  `json:"idleConnections"`
	PoolSize          int64  `json:"poolSize"`
	WaitingRequests   int64  `json:"waitingRequests"`
}

// MetricsPolls are the long polls waiting (beyond Queen).
type MetricsPolls struct {
	Waiting int64 `json:"waiting"`
}

// MetricsMemory is the process's memory in bytes: RSS and virtual size
// from /proc on Linux, the Go heap as heapTotal and heapUsed; external and
// arrayBuffers (Node's) are 0.
type MetricsMemory struct {
	ArrayBuffers float64 `json:"arrayBuffers"`
	External     float64 `json:"external"`
	HeapTotal    float64 `json:"heapTotal"`
	HeapUsed     float64 `json:"heapUsed"`
	RSS          float64 `json:"rss"`
	Virtual      float64 `json:"virtual"`
}

// MetricsRate is a count since start and its rate per second.
type MetricsRate struct {
	Rate  float64 `json:"rate"`
	Total int64   `json:"total"`
}

// Me is GET /auth/me: who the caller is.
type Me struct {
	Authenticated bool `json:"authenticated"`
	AuthEnabled   bool `json:"authEnabled"`
	// Method is how the token was verified (jwt, api-token); absent without
	// authentication.
	Method   string  `json:"method,omitempty"`
	Sub      *string `json:"sub"`
	Username *string `json:"username"`
	// Role is the broadest of Roles.
	Role  string   `json:"role"`
	Roles []string `json:"roles"`
	// Levels are the access levels the roles satisfy.
	Levels         []string `json:"levels"`
	TenancyEnabled bool     `json:"tenancyEnabled"`
	Tenant         *string  `json:"tenant"`
}

// Login is GET /auth/login's answer, with authentication on, to clients
// that ask for JSON and not for HTML: where logging in happens.
type Login struct {
	AuthEnabled bool `json:"authEnabled"`
	// Login is external (an identity provider or a proxy) or none.
	Login   string `json:"login"`
	Message string `json:"message"`
}

// SharedState is GET /api/v1/system/shared-state and
// /internal/api/shared-state/stats (and its legacy alias
// /internal/api/inter-instance/stats), with Queen's keys. Queen's brokers
// share state over UDP; these share it through their PostgreSQL database
// (LISTEN/NOTIFY), so the transport's keys describe that channel: peers are
// the brokers heard on it, port is 0, and the signature and sequence
// counters, which belong to Queen's datagrams, stay 0. Enabled is false on
// the embedded engine, which has one broker and nothing to share.
type SharedState struct {
	Enabled            bool               `json:"enabled"`
	Running            bool               `json:"running"`
	ServerID           string             `json:"server_id"`
	Transport          SharedTransport    `json:"transport"`
	QueueConfigCache   QueueConfigCache   `json:"queue_config_cache"`
	ServerHealth       SharedServerHealth `json:"server_health"`
	MaintenanceMode    bool               `json:"maintenance_mode"`
	PopMaintenanceMode bool               `json:"pop_maintenance_mode"`
}

// SharedTransport is SharedState's transport.
type SharedTransport struct {
	// Type is "postgres-listen-notify", or "none" on the embedded engine.
	Type    string `json:"type"`
	Channel string `json:"channel,omitempty"`
	// ServerID and SessionID are this broker's id on the channel, new at
	// every start (Queen's session id tells a restart; so does this).
	ServerID               string       `json:"server_id"`
	SessionID              string       `json:"session_id"`
	Port                   int          `json:"port"`
	PeerCount              int          `json:"peer_count"`
	LearnedIdentitiesCount int          `json:"learned_identities_count"`
	Peers                  []SharedPeer `json:"peers"`
	LearnedIdentities      []string     `json:"learned_identities"`
	// MessagesSent and MessagesReceived count wake-up notifications; a
	// dropped one is a notification the database did not take.
	MessagesSent       int64 `json:"messages_sent"`
	MessagesReceived   int64 `json:"messages_received"`
	MessagesDropped    int64 `json:"messages_dropped"`
	SignatureFailures  int64 `json:"signature_failures"`
	SequenceRejections int64 `json:"sequence_rejections"`
}

// SharedPeer is another broker heard on the transport.
type SharedPeer struct {
	ServerID         string `json:"server_id"`
	LastSeen         Time   `json:"last_seen"`
	MessagesReceived int64  `json:"messages_received"`
	Alive            bool   `json:"alive"`
}

// QueueConfigCache is the broker's cache of queue options.
type QueueConfigCache struct {
	Size    int     `json:"size"`
	Hits    int64   `json:"hits"`
	Misses  int64   `json:"misses"`
	HitRate float64 `json:"hit_rate"`
}

// SharedServerHealth counts the brokers heard: alive when heard within the
// last minute. Brokers announce themselves only with wake-ups (there is no
// heartbeat), so a quiet broker counts as dead until it pushes again.
type SharedServerHealth struct {
	ServersTracked     int   `json:"servers_tracked"`
	ServersAlive       int   `json:"servers_alive"`
	ServersDead        int   `json:"servers_dead"`
	HeartbeatsReceived int64 `json:"heartbeats_received"`
	RestartsDetected   int64 `json:"restarts_detected"`
}

// NotifyRequest is the body of POST /internal/api/notify.
type NotifyRequest struct {
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
}

// StatusOK is {"status":"ok"}.
type StatusOK struct {
	Status string `json:"status"`
}
