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

// Login is GET /auth/login's answer to clients that do not ask for HTML:
// where logging in happens.
type Login struct {
	AuthEnabled bool `json:"authEnabled"`
	// Login is external (an identity provider or a proxy) or none.
	Login   string `json:"login"`
	Message string `json:"message"`
}
