// Package config holds the broker's settings. One table lists every setting
// once: its environment variable (Queen's name where Queen has one), its
// command-line flag, its default and its meaning. Load fills a Config from
// the flags, then the environment, then the defaults, and validates every
// value. Only cmd/queen calls it with the real command line and environment;
// everything else receives a Config, so tests build one in code.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/logging"
	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/server"
)

// Config is the broker's whole configuration. Each setting is one row of
// the settings table (see Settings), which holds its default. The rows of
// the server's settings write the server's configuration directly
// (Server), each into the Config of the feature it configures; the rest
// are cmd/queen's own (listening, storage, logging).
type Config struct {
	// Listening.
	BindAddr string // QUEEN_BIND_ADDR (or HOST): address the HTTP API binds to
	Port     int    // PORT: TCP port of the HTTP API; 0 picks a free one

	// Storage.
	DataDir     string // QUEEN_DATA_DIR: folder of the embedded engine's database
	DatabaseURL string // QUEEN_DATABASE_URL, else built from the PG* fields when PGHost is set; "" = embedded engine

	// PostgreSQL, used to build DatabaseURL when QUEEN_DATABASE_URL is unset.
	PGDatabase              string        // PG_DB
	PGHost                  string        // PG_HOST; selects PostgreSQL
	PGPassword              string        // PG_PASSWORD
	PGPoolSize              int           // DB_POOL_SIZE: connections per broker
	PGPort                  int           // PG_PORT
	PGSSLRejectUnauthorized bool          // PG_SSL_REJECT_UNAUTHORIZED: verify the server's certificate
	PGSchema                string        // QUEEN_PG_SCHEMA: schema holding the broker's tables
	PGStatementTimeout      time.Duration // DB_STATEMENT_TIMEOUT (milliseconds)
	PGUseSSL                bool          // PG_USE_SSL
	PGUser                  string        // PG_USER

	// Logging and debugging.
	LogFormat logging.Format // LOG_FORMAT: text or json
	LogLevel  slog.Level     // LOG_LEVEL: trace, debug, info, warn, error, critical or off
	PprofAddr string         // QUEEN_PPROF_ADDR: serve net/http/pprof there; "" = off

	// Encryption keys, which make the server's keyring (Keyring).
	EncryptionKey     string   // QUEEN_ENCRYPTION_KEY: 64 hex characters; "" = no encryption
	EncryptionKeysOld []string // QUEEN_ENCRYPTION_KEYS_OLD: earlier keys, still opening what they sealed

	jwksAllowHTTP    bool // JWT_JWKS_ALLOW_HTTP
	pprofAllowRemote bool // QUEEN_PPROF_ALLOW_REMOTE

	// server is the server's configuration, written by the rows of its
	// settings; Load adds the keyring.
	server server.Config
}

// Server returns the server's configuration: every setting of the broker
// but listening, storage and logging, each in the Config of the package it
// configures. The caller adds what is not a setting (the logger, the
// metrics registry, the version).
func (c *Config) Server() server.Config { return c.server }

// NameCacheSize is QUEEN_NAME_CACHE_SIZE: entries each name → id cache
// holds at most, in the engines and the broker alike.
func (c *Config) NameCacheSize() int { return c.server.NameCacheSize }

// Keyring returns the encryption keyring of QUEEN_ENCRYPTION_KEY and
// QUEEN_ENCRYPTION_KEYS_OLD, or nil when no key is set.
func (c *Config) Keyring() (*crypt.Keyring, error) {
	if c.EncryptionKey == "" {
		if len(c.EncryptionKeysOld) > 0 {
			return nil, errors.New("QUEEN_ENCRYPTION_KEYS_OLD is set without QUEEN_ENCRYPTION_KEY: " +
				"old keys only open what they sealed, so the current key must be set too")
		}
		return nil, nil
	}
	k, err := crypt.New(c.EncryptionKey, c.EncryptionKeysOld...)
	if err != nil {
		// The error names which key, never its value.
		return nil, fmt.Errorf("QUEEN_ENCRYPTION_KEY / QUEEN_ENCRYPTION_KEYS_OLD: %w", err)
	}
	return k, nil
}

// Auth returns the authentication settings as package auth takes them.
func (c *Config) Auth() auth.Config { return c.server.Auth }

// Engine names the storage engine this configuration selects.
func (c *Config) Engine() string {
	if c.DatabaseURL != "" {
		return "postgres"
	}
	return "sqlite"
}

// Addr is the listen address.
func (c *Config) Addr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Port))
}

// Setting is one row of the settings table: one thing an operator can set,
// by flag or by environment variable.
type Setting struct {
	// Env is the environment variable, Queen's name where Queen has one.
	Env string
	// Aliases are further variables read when Env is unset, in order.
	Aliases []string
	// Flag is the command-line flag without its dashes: Env in lower case
	// with dashes for underscores and the QUEEN_ prefix dropped.
	Flag string
	// Default is the value used when neither the flag nor a variable is
	// set; "" leaves the setting unset.
	Default string
	// Unset says, for help, what an unset setting without Default means.
	Unset string
	// Usage is the setting's meaning in one line.
	Usage string

	kind   kind
	secret bool // errors never quote the value
}

// Type names the kind of value the setting takes, for help: int, ms, bytes,
// bool, level, format or a kind of string (addr, dir, url…).
func (s Setting) Type() string { return s.kind.name }

// kind is how a setting's text becomes a Config field.
type kind struct {
	name string                          // shown in help after the flag
	set  func(c *Config, v string) error // v is non-blank; the error says what is wanted
}

// settings is the table. Its order is the order of --help and README.md.
var settings = []Setting{
	{Env: "PORT", Flag: "port", Default: "6632",
		Usage: "TCP port of the HTTP API (0: any free port)",
		kind:  integer("int", 0, 65535, func(c *Config) *int { return &c.Port })},
	{Env: "QUEEN_BIND_ADDR", Aliases: []string{"HOST"}, Flag: "bind-addr", Default: "0.0.0.0",
		Usage: "address the HTTP API binds to",
		kind:  text("addr", func(c *Config) *string { return &c.BindAddr })},
	{Env: "QUEEN_DATA_DIR", Flag: "data-dir", Default: "./queen-data",
		Usage: "folder of the embedded engine's database",
		kind:  text("dir", func(c *Config) *string { return &c.DataDir })},
	{Env: "QUEEN_DATABASE_URL", Flag: "database-url", Unset: "none (embedded engine)",
		Usage: "PostgreSQL URL; selects the PostgreSQL engine and wins over the PG_* settings",
		kind:  text("url", func(c *Config) *string { return &c.DatabaseURL })},
	{Env: "FILE_BUFFER_DIR", Flag: "file-buffer-dir", Unset: "<data-dir>/spool",
		Usage: "disk spool for pushes the database cannot take (outage, push maintenance)",
		kind:  text("dir", func(c *Config) *string { return &c.server.SpoolDir })},
	{Env: "FILE_BUFFER_MAX_BYTES", Flag: "file-buffer-max-bytes", Default: "1073741824",
		Usage: "bytes the disk spool may hold; past it, pushes it would take fail (0: no cap)",
		kind:  integer("bytes", 0, math.MaxInt64, func(c *Config) *int64 { return &c.server.SpoolMaxBytes })},
	{Env: "PG_HOST", Flag: "pg-host", Unset: "none (embedded engine)",
		Usage: "PostgreSQL host; selects the PostgreSQL engine unless a database URL is set",
		kind:  text("host", func(c *Config) *string { return &c.PGHost })},
	{Env: "PG_PORT", Flag: "pg-port", Default: "5432",
		Usage: "PostgreSQL port",
		kind:  integer("int", 1, 65535, func(c *Config) *int { return &c.PGPort })},
	{Env: "PG_USER", Flag: "pg-user", Default: "postgres",
		Usage: "PostgreSQL user",
		kind:  text("string", func(c *Config) *string { return &c.PGUser })},
	{Env: "PG_PASSWORD", Flag: "pg-password", Default: "postgres",
		Usage: "PostgreSQL password (the variable keeps it out of ps)",
		kind:  verbatim("string", func(c *Config) *string { return &c.PGPassword })},
	{Env: "PG_DB", Flag: "pg-db", Default: "postgres",
		Usage: "PostgreSQL database",
		kind:  text("string", func(c *Config) *string { return &c.PGDatabase })},
	{Env: "PG_USE_SSL", Flag: "pg-use-ssl", Default: "false",
		Usage: "connect to PostgreSQL over TLS",
		kind:  boolean(func(c *Config) *bool { return &c.PGUseSSL })},
	{Env: "PG_SSL_REJECT_UNAUTHORIZED", Flag: "pg-ssl-reject-unauthorized", Default: "true",
		Usage: "with PG_USE_SSL, verify the server's certificate and host name",
		kind:  boolean(func(c *Config) *bool { return &c.PGSSLRejectUnauthorized })},
	{Env: "QUEEN_PG_SCHEMA", Flag: "pg-schema", Default: "queen",
		Usage: "PostgreSQL schema holding the broker's tables (created and migrated at start-up)",
		kind:  text("string", func(c *Config) *string { return &c.PGSchema })},
	// Two connections at least: a LISTEN connection is held for wake-ups.
	{Env: "DB_POOL_SIZE", Flag: "db-pool-size", Default: "20",
		Usage: "PostgreSQL connections per broker (2 at least)",
		kind:  integer("int", 2, math.MaxInt32, func(c *Config) *int { return &c.PGPoolSize })},
	{Env: "DB_STATEMENT_TIMEOUT", Flag: "db-statement-timeout", Default: "30000",
		Usage: "PostgreSQL statement timeout in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.PGStatementTimeout })},
	{Env: "QUEEN_NAME_CACHE_SIZE", Flag: "name-cache-size", Default: "50000",
		Usage: "entries each name → id cache (queues, partitions, consumer groups) holds at most; the least recently used are dropped and read again when needed",
		kind:  integer("int", 1, math.MaxInt32, func(c *Config) *int { return &c.server.NameCacheSize })},
	{Env: "QUEEN_MAX_BODY_BYTES", Flag: "max-body-bytes", Default: "67108864",
		Usage: "largest request body; a larger one is answered 413",
		kind:  integer("bytes", 1, math.MaxInt64, func(c *Config) *int64 { return &c.server.MaxBodyBytes })},
	{Env: "QUEEN_HTTP_READ_HEADER_TIMEOUT_MS", Flag: "http-read-header-timeout-ms", Default: "10000",
		Usage: "time a client has to send the request headers, in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.ReadHeaderTimeout })},
	{Env: "QUEEN_HTTP_READ_TIMEOUT_MS", Flag: "http-read-timeout-ms", Default: "10000",
		Usage: "longest wait for the next bytes of a request body, in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.ReadTimeout })},
	{Env: "QUEEN_HTTP_BODY_MIN_RATE", Flag: "http-body-min-rate", Default: "1024",
		Usage: "bytes per second a body must average once the read timeout has passed, or it is cut off (0: no minimum)",
		kind:  offAtZero(integer("int", 0, math.MaxInt64, bodyMinRate), bodyMinRate, -1)},
	{Env: "QUEEN_HTTP_WRITE_TIMEOUT_MS", Flag: "http-write-timeout-ms", Default: "30000",
		Usage: "time to write a response, in milliseconds; a long poll gets its wait on top",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.WriteTimeout })},
	{Env: "QUEEN_HTTP_IDLE_TIMEOUT_MS", Flag: "http-idle-timeout-ms", Default: "120000",
		Usage: "how long an idle keep-alive connection stays open, in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.IdleTimeout })},
	// Below 1 KiB ordinary requests with a token or a few cookies fail.
	{Env: "QUEEN_HTTP_MAX_HEADER_BYTES", Flag: "http-max-header-bytes", Default: "65536",
		Usage: "largest request header block (1024 at least)",
		kind:  integer("bytes", 1024, math.MaxInt32, func(c *Config) *int { return &c.server.MaxHeaderBytes })},
	{Env: "QUEEN_MAX_POLL_TIMEOUT_MS", Flag: "max-poll-timeout-ms", Default: "3600000",
		Usage: "longest wait of a long poll, in milliseconds: a pop asking for more waits this long (then answers 204)",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.MaxPollTimeout })},
	{Env: "QUEEN_HTTP_MAX_CONNECTIONS", Flag: "http-max-connections", Default: "16384",
		Usage: "concurrent connections accepted at most; past nine tenths of it the oldest idle keep-alives are closed and connections get 1 s to send a request",
		kind:  integer("int", 1, math.MaxInt32, func(c *Config) *int { return &c.server.MaxConnections })},
	{Env: "QUEEN_HTTP_MAX_IN_FLIGHT", Flag: "http-max-in-flight", Unset: "QUEEN_HTTP_MAX_CONNECTIONS",
		Usage: "requests handled at once past which a connection's further concurrent requests (HTTP/2 streams) are answered 503 with Retry-After",
		kind:  integer("int", 1, math.MaxInt32, func(c *Config) *int { return &c.server.MaxInFlight })},
	{Env: "QUEEN_HTTP2_MAX_CONCURRENT_STREAMS", Flag: "http2-max-concurrent-streams", Default: "100",
		Usage: "streams one HTTP/2 connection may have open at once (HTTP/2 is served over TLS)",
		kind:  integer("int", 1, 1<<20, func(c *Config) *int { return &c.server.HTTP2MaxStreams })},
	{Env: "LOG_LEVEL", Flag: "log-level", Default: "info",
		Usage: "trace, debug, info, warn, error, critical or off",
		kind:  level(func(c *Config) *slog.Level { return &c.LogLevel })},
	{Env: "LOG_FORMAT", Flag: "log-format", Default: "text",
		Usage: "text or json",
		kind:  format(func(c *Config) *logging.Format { return &c.LogFormat })},
	{Env: "QUEEN_PPROF_ADDR", Flag: "pprof-addr", Unset: "off",
		Usage: "serve net/http/pprof on this address, e.g. 127.0.0.1:6060",
		kind:  text("addr", func(c *Config) *string { return &c.PprofAddr })},

	// Authentication, tenants, TLS, CORS.
	{Env: "QUEEN_PPROF_ALLOW_REMOTE", Flag: "pprof-allow-remote", Default: "false",
		Usage: "allow QUEEN_PPROF_ADDR on an address other hosts reach (pprof has no authentication)",
		kind:  boolean(func(c *Config) *bool { return &c.pprofAllowRemote })},
	{Env: "METRICS_SAMPLE_INTERVAL_MS", Flag: "metrics-sample-interval-ms", Default: "1000",
		Usage: "how often the metrics sampler drains the per-queue counters and samples CPU, memory and the pool",
		kind:  millis(10, func(c *Config) *time.Duration { return &c.server.MetricsSampleEvery })},
	{Env: "METRICS_AGGREGATE_INTERVAL_S", Flag: "metrics-aggregate-interval-s", Default: "60",
		Usage: "how often each broker writes its per-minute metrics rows (status and analytics series)",
		kind:  seconds(1, func(c *Config) *time.Duration { return &c.server.MetricsAggregateEvery })},
	{Env: "METRICS_RETENTION_DAYS", Flag: "metrics-retention-days", Default: "90",
		Usage: "days metrics rows and the retention history are kept; older rows are swept in bounded steps",
		kind: days(1, func(c *Config) *time.Duration { return &c.server.MetricsRetention },
			func(c *Config) *time.Duration { return &c.server.Sweeps.HistoryKeep })},
	{Env: "QUEEN_METRICS_AUTH", Flag: "metrics-auth", Default: "false",
		Usage: "put /metrics and /metrics/prometheus behind a read-level token, whatever JWT_SKIP_PATHS says (needs JWT_ENABLED or QUEEN_API_TOKENS)",
		kind:  boolean(func(c *Config) *bool { return &c.server.MetricsAuth })},
	{Env: "QUEEN_METRICS_MAX_QUEUES", Flag: "metrics-max-queues", Default: "500",
		Usage: "queues with per-queue Prometheus series and recorded figures: the deepest; queen_queue_metrics_omitted_queues counts the rest",
		kind:  integer("int", 1, 100000, func(c *Config) *int { return &c.server.MetricsMaxQueues })},
	{Env: "WORKER_ID", Flag: "worker-id", Unset: "the process id",
		Usage: "names this broker's metrics rows beside its hostname (brokers sharing a database each write their own)",
		kind:  text("string", func(c *Config) *string { return &c.server.WorkerID })},
	{Env: "JWT_ENABLED", Flag: "jwt-enabled", Default: "false",
		Usage: "require a JWT (Authorization: Bearer) on every route that is not public",
		kind:  boolean(func(c *Config) *bool { return &c.server.Auth.JWTEnabled })},
	{Env: "JWT_ALGORITHM", Flag: "jwt-algorithm", Default: auth.DefaultAlgorithm,
		Usage: "the algorithm tokens must use: HS256, HS384, HS512, RS256, RS384, RS512, EdDSA, or auto (any the configured keys verify)",
		kind:  algorithm(func(c *Config) *string { return &c.server.Auth.Algorithm })},
	{Env: "JWT_SECRET", Flag: "jwt-secret", Unset: "none",
		Usage: "HMAC secret of HS* tokens (prefer the variable: flags show in ps)", secret: true,
		kind: verbatim("string", func(c *Config) *string { return &c.server.Auth.Secret })},
	{Env: "JWT_PUBLIC_KEY", Flag: "jwt-public-key", Unset: "none",
		Usage: "public key of RS*/EdDSA tokens: PEM text (\\n for newlines allowed) or the path of a PEM file",
		kind:  publicKey(func(c *Config) *string { return &c.server.Auth.PublicKey })},
	{Env: "JWT_JWKS_URL", Flag: "jwt-jwks-url", Unset: "none",
		Usage: "JWKS endpoint serving the keys of RS*/EdDSA tokens, cached by kid",
		kind:  httpURL(func(c *Config) *string { return &c.server.Auth.JWKSURL })},
	{Env: "JWT_JWKS_REFRESH_INTERVAL", Flag: "jwt-jwks-refresh-interval", Default: "3600",
		Usage: "seconds between JWKS refreshes (an unknown kid also fetches it, at most every 10 s)",
		kind:  seconds(1, func(c *Config) *time.Duration { return &c.server.Auth.JWKSRefresh })},
	{Env: "JWT_JWKS_TIMEOUT_MS", Flag: "jwt-jwks-timeout-ms", Default: "5000",
		Usage: "longest JWKS fetch in milliseconds (a request with a new kid waits at most this)",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.Auth.JWKSTimeout })},
	{Env: "JWT_JWKS_ALLOW_HTTP", Flag: "jwt-jwks-allow-http", Default: "false",
		Usage: "accept an http:// JWT_JWKS_URL (loopback included); otherwise start-up refuses it, since whoever is on the path could serve keys",
		kind:  boolean(func(c *Config) *bool { return &c.jwksAllowHTTP })},
	{Env: "JWT_REQUIRE_EXP", Flag: "jwt-require-exp", Default: "false",
		Usage: "refuse tokens without exp (401 Token has expired): a leaked token without one is valid forever",
		kind:  boolean(func(c *Config) *bool { return &c.server.Auth.RequireExp })},
	{Env: "JWT_ISSUER", Flag: "jwt-issuer", Unset: "not checked",
		Usage: "the iss tokens must carry",
		kind:  text("string", func(c *Config) *string { return &c.server.Auth.Issuer })},
	{Env: "JWT_AUDIENCE", Flag: "jwt-audience", Unset: "not checked",
		Usage: "the aud tokens must name (comma-separated: any one of them)",
		kind:  list("list", nil, func(c *Config) *[]string { return &c.server.Auth.Audience })},
	{Env: "JWT_CLOCK_SKEW", Flag: "jwt-clock-skew", Default: "30",
		Usage: "seconds of leeway for a token's exp, nbf and iat",
		kind:  offAtZero(seconds(0, clockSkew), clockSkew, -1)},
	{Env: "JWT_SKIP_PATHS", Flag: "jwt-skip-paths", Default: strings.Join(auth.DefaultSkipPaths, ","),
		Usage: "paths served without authentication: exact, or a prefix when the entry ends in / (none: no path)",
		kind:  list("paths", skipPath, func(c *Config) *[]string { return &c.server.Auth.SkipPaths })},
	{Env: "JWT_ROLES_CLAIM", Flag: "jwt-roles-claim", Default: auth.DefaultRoleClaim,
		Usage: "claim holding one role name",
		kind:  text("string", func(c *Config) *string { return &c.server.Auth.RoleClaim })},
	{Env: "JWT_ROLES_ARRAY_CLAIM", Flag: "jwt-roles-array-claim", Default: auth.DefaultRolesClaim,
		Usage: "claim holding an array of role names",
		kind:  text("string", func(c *Config) *string { return &c.server.Auth.RolesClaim })},
	{Env: "JWT_ROLE_ADMIN", Flag: "jwt-role-admin", Default: string(auth.RoleAdmin),
		Usage: "the admin role's name in tokens",
		kind:  roleName(auth.RoleAdmin)},
	{Env: "JWT_ROLE_READ_WRITE", Flag: "jwt-role-read-write", Default: string(auth.RoleReadWrite),
		Usage: "the read-write role's name in tokens",
		kind:  roleName(auth.RoleReadWrite)},
	{Env: "JWT_ROLE_READ_ONLY", Flag: "jwt-role-read-only", Default: string(auth.RoleReadOnly),
		Usage: "the read-only role's name in tokens",
		kind:  roleName(auth.RoleReadOnly)},
	{Env: "JWT_ROLE_WRITE_ONLY", Flag: "jwt-role-write-only", Default: string(auth.RoleWriteOnly),
		Usage: "the write-only role's name in tokens",
		kind:  roleName(auth.RoleWriteOnly)},
	{Env: "JWT_TENANT_CLAIM", Flag: "jwt-tenant-claim", Default: auth.DefaultTenantClaim,
		Usage: "claim holding the token's tenant (a UUID)",
		kind:  text("string", func(c *Config) *string { return &c.server.Auth.TenantClaim })},
	{Env: "QUEEN_API_TOKENS", Flag: "api-tokens", Unset: "none",
		Usage: "static bearer tokens, token:role[:tenant],… (role admin, read-write, read-only or write-only; prefer the variable: flags show in ps)",
		kind:  apiTokens(func(c *Config) *[]auth.Token { return &c.server.Auth.Tokens }), secret: true},
	{Env: "QUEEN_TENANCY_ENABLED", Flag: "tenancy-enabled", Default: "false",
		Usage: "act for the tenant of the token's tenant claim or the x-queen-tenant header; queues are per tenant",
		kind:  boolean(func(c *Config) *bool { return &c.server.TenancyEnabled })},
	{Env: "QUEEN_TLS_CERT", Flag: "tls-cert", Unset: "none (plain HTTP)",
		Usage: "PEM certificate chain; with --tls-key, serve HTTPS and HTTP/2 (reloaded on SIGHUP and when the files change)",
		kind:  text("file", func(c *Config) *string { return &c.server.TLSCertFile })},
	{Env: "QUEEN_TLS_KEY", Flag: "tls-key", Unset: "none (plain HTTP)",
		Usage: "PEM private key of --tls-cert",
		kind:  text("file", func(c *Config) *string { return &c.server.TLSKeyFile })},
	{Env: "QUEEN_ALLOWED_HOSTS", Flag: "allowed-hosts", Unset: "loopback names when binding loopback, else any",
		Usage: "Host headers served, comma-separated: names, addresses, *.example.com, or *; any other Host is refused (403), which stops DNS rebinding",
		kind:  list("hosts", allowedHost, func(c *Config) *[]string { return &c.server.AllowedHosts })},
	{Env: "CORS_ALLOW_ORIGIN", Flag: "cors-allow-origin", Unset: "off (no CORS headers)",
		Usage: "origins browsers may call from, comma-separated (https://dash.example.com), or *",
		kind:  list("origins", corsOrigin, func(c *Config) *[]string { return &c.server.CORSAllowOrigins })},

	// Queue options the broker applies: encryption at rest, retention and
	// eviction (docs/api.md, "Configure a queue").
	{Env: "QUEEN_ENCRYPTION_KEY", Flag: "encryption-key", Unset: "none (queues cannot enable encryption)",
		Usage: "AES-256 key, 64 hex characters: payloads of queues with encryptionEnabled are stored encrypted (prefer the variable: flags show in ps)",
		kind:  verbatim("hex", func(c *Config) *string { return &c.EncryptionKey }), secret: true},
	{Env: "QUEEN_ENCRYPTION_KEYS_OLD", Flag: "encryption-keys-old", Unset: "none",
		Usage: "earlier encryption keys, comma-separated: they still decrypt what they encrypted, so a key can be rotated",
		kind:  list("hex list", nil, func(c *Config) *[]string { return &c.EncryptionKeysOld }), secret: true},
	{Env: "RETENTION_INTERVAL", Flag: "retention-interval", Default: "300000",
		Usage: "milliseconds between retention runs (retentionSeconds, completedRetentionSeconds, idle partitions)",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.Sweeps.RetentionEvery })},
	{Env: "RETENTION_BATCH_SIZE", Flag: "retention-batch-size", Default: "1000",
		Usage: "messages one retention step deletes at most",
		kind:  integer("int", 1, 100000, func(c *Config) *int { return &c.server.Sweeps.RetentionBatch })},
	{Env: "PARTITION_CLEANUP_DAYS", Flag: "partition-cleanup-days", Default: "30",
		Usage: "days after which retention deletes an empty partition that saw no push and no pop",
		kind:  days(1, func(c *Config) *time.Duration { return &c.server.Sweeps.PartitionIdle })},
	{Env: "EVICTION_INTERVAL", Flag: "eviction-interval", Default: "60000",
		Usage: "milliseconds between eviction runs (maxWaitTimeSeconds)",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.Sweeps.EvictionEvery })},
	{Env: "EVICTION_BATCH_SIZE", Flag: "eviction-batch-size", Default: "1000",
		Usage: "dead letters one eviction step writes at most",
		kind:  integer("int", 1, 100000, func(c *Config) *int { return &c.server.Sweeps.EvictionBatch })},

	// Key/value state, timers, ephemeral queues and their token bucket.
	{Env: "QUEEN_KV_ENABLED", Flag: "kv-enabled", Default: "true",
		Usage: "serve the key/value routes and kv operations in transactions (false: 403)",
		kind:  negated(func(c *Config) *bool { return &c.server.KV.Disabled })},
	{Env: "QUEEN_KV_MAX_OPS", Flag: "kv-max-ops", Default: "100",
		Usage: "operations of one key/value batch at most; more is answered 413",
		kind:  integer("int", 1, 100000, func(c *Config) *int { return &c.server.KV.MaxOps })},
	{Env: "QUEEN_KV_MAX_VALUE_BYTES", Flag: "kv-max-value-bytes", Default: "65536",
		Usage: "bytes of one key/value value at most; more is answered 413",
		kind:  integer("bytes", 1, 64<<20, func(c *Config) *int { return &c.server.KV.MaxValueBytes })},
	{Env: "QUEEN_TIMERS_ENABLED", Flag: "timers-enabled", Default: "true",
		Usage: "serve the timer routes and run the timer service (false: 403)",
		kind:  negated(func(c *Config) *bool { return &c.server.Timers.Disabled })},
	{Env: "TIMER_POLL_INTERVAL_MS", Flag: "timer-poll-interval-ms", Default: "250",
		Usage: "how often a broker without the timer service tries to take it over, in milliseconds (the broker with it wakes on schedules and due times, and looks at least every 20 intervals)",
		kind:  millis(10, func(c *Config) *time.Duration { return &c.server.Timers.PollEvery })},
	{Env: "TIMER_BATCH_SIZE", Flag: "timer-batch-size", Default: "1000",
		Usage: "timers one fire step pushes at most",
		kind:  integer("int", 1, 100000, func(c *Config) *int { return &c.server.Timers.Batch })},
	{Env: "TIMER_MAX_DELAY_SECONDS", Flag: "timer-max-delay-seconds", Default: "31536000",
		Usage: "furthest ahead a timer may be scheduled, in seconds",
		kind:  seconds(1, func(c *Config) *time.Duration { return &c.server.Timers.MaxDelay })},
	{Env: "QUEEN_EPHEMERAL_ENABLED", Flag: "ephemeral-enabled", Default: "true",
		Usage: "serve the ephemeral-queue routes (false: 403)",
		kind:  negated(func(c *Config) *bool { return &c.server.Ephemeral.Disabled })},
	{Env: "QUEEN_DASHBOARD_ENABLED", Flag: "dashboard-enabled", Default: "true",
		Usage: "serve the web dashboard at / (false: / answers the JSON 404 of a route that does not exist)",
		kind:  negated(func(c *Config) *bool { return &c.server.Dashboard.Disabled })},
	// Webhook ingress.
	{Env: "QUEEN_INGRESS_ENABLED", Flag: "ingress-enabled", Default: "true",
		Usage: "serve webhook ingress (POST /ingress/v1/{queue}) and its management routes (false: 403)",
		kind:  negated(func(c *Config) *bool { return &c.server.Ingress.Disabled })},
	{Env: "QUEEN_INGRESS_SKEW_S", Flag: "ingress-skew-s", Default: "300",
		Usage: "seconds a signed request's timestamp may be off the broker's clock; nonces are kept as long",
		kind:  seconds(1, func(c *Config) *time.Duration { return &c.server.Ingress.Skew })},
	{Env: "QUEEN_INGRESS_MAX_HOPS", Flag: "ingress-max-hops", Default: "8",
		Usage: "X-Queuey-Path segments an event may carry in at most (422 max_hops_exceeded)",
		kind:  integer("int", 1, 1000, func(c *Config) *int { return &c.server.Ingress.MaxHops })},
	{Env: "QUEEN_INGRESS_MAX_BODY_BYTES", Flag: "ingress-max-body-bytes", Default: "1048576",
		Usage: "bytes of one ingress event at most; more is answered 413",
		kind:  integer("bytes", 1, 64<<20, func(c *Config) *int { return &c.server.Ingress.MaxBodyBytes })},
	{Env: "QUEEN_INGRESS_NODE", Flag: "ingress-node", Default: "queen",
		Usage: "this cell's name in X-Queuey-Path segments (brokers sharing a database share it)",
		kind:  text("string", func(c *Config) *string { return &c.server.Ingress.Node })},
	// Webhook delivery.
	{Env: "QUEEN_DELIVERY_ENABLED", Flag: "delivery-enabled", Default: "true",
		Usage: "run webhook push delivery to the delivery targets (false: none; the management routes still answer)",
		kind:  negated(func(c *Config) *bool { return &c.server.Delivery.Disabled })},
	{Env: "QUEEN_DELIVERY_ALLOW", Flag: "delivery-allow", Unset: "public addresses only",
		Usage: "addresses and CIDR ranges deliveries may reach besides public ones, comma-separated, or * for any",
		kind:  list("ranges", deliveryRange, func(c *Config) *[]string { return &c.server.Delivery.Allow })},
	{Env: "QUEEN_DELIVERY_TIMEOUT_MS", Flag: "delivery-timeout-ms", Default: "10000",
		Usage: "milliseconds one delivery POST may take (a target may set its own)",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.Delivery.Timeout })},
	{Env: "QUEEN_DELIVERY_ATTEMPTS", Flag: "delivery-attempts", Default: "3",
		Usage: "POSTs per delivery before it is nacked to the queue's retryLimit (a target may set its own)",
		kind:  integer("int", 1, 100, func(c *Config) *int { return &c.server.Delivery.Attempts })},
	{Env: "QUEEN_DELIVERY_BACKOFF_MS", Flag: "delivery-backoff-ms", Default: "500",
		Usage: "first wait before a delivery is retried, doubled per attempt, with jitter",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.Delivery.BackoffBase })},
	{Env: "QUEEN_DELIVERY_BACKOFF_MAX_MS", Flag: "delivery-backoff-max-ms", Default: "30000",
		Usage: "longest wait before a delivery is retried",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.server.Delivery.BackoffMax })},
	{Env: "QUEEN_DELIVERY_WORKERS", Flag: "delivery-workers", Default: "4",
		Usage: "partitions of one target a broker delivers at once (a target may set its own)",
		kind:  integer("int", 1, 256, func(c *Config) *int { return &c.server.Delivery.Workers })},
	{Env: "QUEEN_TENANT_RATE_PER_SEC", Flag: "tenant-rate-per-sec", Default: "1000",
		Usage: "tokens per second of each tenant's bucket on the kv, timer and ephemeral routes (429 when empty)",
		kind:  positiveFloat(func(c *Config) *float64 { return &c.server.RateLimit.Default.Rate })},
	{Env: "QUEEN_TENANT_BURST", Flag: "tenant-burst", Default: "2000",
		Usage: "tokens each tenant's bucket holds at most",
		kind:  integer("int", 1, math.MaxInt32, func(c *Config) *int { return &c.server.RateLimit.Default.Burst })},
	{Env: "QUEEN_TENANT_RATE_OVERRIDES", Flag: "tenant-rate-overrides", Unset: "none",
		Usage: "per-tenant rate and burst: tenant-uuid=rate:burst,…",
		kind:  rateOverrides(func(c *Config) *map[string]ratelimit.Limit { return &c.server.RateLimit.Overrides })},
}

// Settings returns the settings table, in the order help lists it.
func Settings() []Setting { return slices.Clone(settings) }

// AddFlags registers a flag for every setting on fs. The flags hold text;
// Load reads and validates it, so that every bad value is reported at once.
func AddFlags(fs *pflag.FlagSet) {
	for _, s := range settings {
		f := fs.VarPF(&flagValue{kind: s.kind.name}, s.Flag, "", s.help())
		if s.kind.name == "bool" {
			f.NoOptDefVal = "true" // --pg-use-ssl alone means true
		}
	}
}

// help is the flag's usage: the meaning, then where else it comes from.
func (s Setting) help() string {
	env := s.Env
	for _, a := range s.Aliases {
		env += " (or " + a + ")"
	}
	switch {
	case s.Default != "":
		return fmt.Sprintf("%s\nenv %s, default %s", s.Usage, env, s.Default)
	case s.Unset != "":
		return fmt.Sprintf("%s\nenv %s, default %s", s.Usage, env, s.Unset)
	}
	return fmt.Sprintf("%s\nenv %s", s.Usage, env)
}

// flagValue holds a flag's text until Load parses it.
type flagValue struct {
	kind string
	text string
}

func (f *flagValue) Set(v string) error { f.text = v; return nil }
func (f *flagValue) String() string     { return f.text }
func (f *flagValue) Type() string       { return f.kind }

// FromEnv is Load without flags.
func FromEnv(getenv func(string) string) (*Config, error) {
	return Load(nil, getenv)
}

// Load builds a Config. Each setting comes from its flag if set on fs (which
// may be nil), else from its environment variable read with getenv
// (os.Getenv in production), else from its default; a blank variable counts
// as unset, and a blank flag restores the default. Every value is validated;
// the error lists each bad one, naming the variable or flag it came from and
// the value. Settings this version does not implement yet stop it too.
func Load(fs *pflag.FlagSet, getenv func(string) string) (*Config, error) {
	c := &Config{}
	var errs []error
	for _, s := range settings {
		v, from := s.lookup(fs, getenv)
		if strings.TrimSpace(v) == "" {
			continue
		}
		if err := s.kind.set(c, v); err != nil {
			if s.secret {
				errs = append(errs, fmt.Errorf("%s: %w", from, err))
			} else {
				errs = append(errs, fmt.Errorf("%s=%q: %w", from, v, err))
			}
		}
	}
	errs = append(errs, refuseUnavailable(getenv)...)
	if len(errs) == 0 {
		errs = c.validate()
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if c.server.SpoolDir == "" {
		c.server.SpoolDir = filepath.Join(c.DataDir, "spool")
	}
	c.server.Encryption, _ = c.Keyring() // validated above
	if c.DatabaseURL == "" && c.PGHost != "" {
		c.DatabaseURL = c.pgURL()
	}
	return c, nil
}

// validate checks the settings that only make sense together.
func (c *Config) validate() []error {
	var errs []error
	if (c.server.TLSCertFile == "") != (c.server.TLSKeyFile == "") {
		errs = append(errs, errors.New("QUEEN_TLS_CERT and QUEEN_TLS_KEY go together: set both or neither"))
	}
	// The verifier names the JWT_* setting at fault (an algorithm without
	// its key, two roles with one name). Building it fetches nothing.
	if _, err := auth.New(c.Auth()); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.Keyring(); err != nil {
		errs = append(errs, err)
	}
	a := c.Auth()
	if a.JWTEnabled && a.Secret != "" && len(a.Secret) < minSecretBytes {
		errs = append(errs, fmt.Errorf("JWT_SECRET: %d bytes, want %d at least (a short HMAC secret is guessed offline from one token)",
			len(a.Secret), minSecretBytes))
	}
	if strings.HasPrefix(strings.ToLower(a.JWKSURL), "http://") && !c.jwksAllowHTTP {
		errs = append(errs, errors.New("JWT_JWKS_URL is http://: whoever is on the path could serve keys and mint tokens; "+
			"use https, or set JWT_JWKS_ALLOW_HTTP=true"))
	}
	if c.PprofAddr != "" && !c.pprofAllowRemote && !loopbackAddr(c.PprofAddr) {
		errs = append(errs, fmt.Errorf("QUEEN_PPROF_ADDR=%q is not a loopback address: pprof has no authentication; "+
			"use 127.0.0.1:PORT, or set QUEEN_PPROF_ALLOW_REMOTE=true", c.PprofAddr))
	}
	if c.server.MetricsAuth && !a.Enabled() {
		errs = append(errs, errors.New("QUEEN_METRICS_AUTH=true needs authentication: set JWT_ENABLED=true or QUEEN_API_TOKENS"))
	}
	return errs
}

// minSecretBytes is the shortest JWT_SECRET accepted: HS256's hash size.
const minSecretBytes = 32

// loopbackAddr reports whether addr (host:port) listens on loopback only:
// localhost or a loopback address. An empty host listens everywhere.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// lookup returns the setting's text and where it came from: "--flag", the
// variable's name, or "default".
func (s Setting) lookup(fs *pflag.FlagSet, getenv func(string) string) (value, from string) {
	if fs != nil {
		if f := fs.Lookup(s.Flag); f != nil && f.Changed {
			if v := f.Value.String(); strings.TrimSpace(v) != "" {
				return v, "--" + s.Flag
			}
			return s.Default, "default"
		}
	}
	for _, name := range append([]string{s.Env}, s.Aliases...) {
		if v := getenv(name); strings.TrimSpace(v) != "" {
			return v, name
		}
	}
	return s.Default, "default"
}

// pgURL builds a PostgreSQL URL from Queen's PG_* settings, escaping the
// user and password.
func (c *Config) pgURL() string {
	sslmode := "disable"
	if c.PGUseSSL {
		sslmode = "require"
		if c.PGSSLRejectUnauthorized {
			sslmode = "verify-full"
		}
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(c.PGUser, c.PGPassword),
		Host:     net.JoinHostPort(c.PGHost, strconv.Itoa(c.PGPort)),
		Path:     "/" + c.PGDatabase,
		RawQuery: "sslmode=" + sslmode,
	}
	return u.String()
}

func text(name string, field func(*Config) *string) kind {
	return kind{name, func(c *Config, v string) error {
		*field(c) = strings.TrimSpace(v)
		return nil
	}}
}

// verbatim keeps surrounding spaces, which may belong to a password.
func verbatim(name string, field func(*Config) *string) kind {
	return kind{name, func(c *Config, v string) error {
		*field(c) = v
		return nil
	}}
}

func integer[T ~int | ~int64](name string, min, max int64, field func(*Config) *T) kind {
	return kind{name, func(c *Config, v string) error {
		n, err := parseInt(v, min, max)
		if err != nil {
			return err
		}
		*field(c) = T(n)
		return nil
	}}
}

// millis reads one of Queen's millisecond counts into a time.Duration.
func millis(min int64, field func(*Config) *time.Duration) kind {
	return kind{"ms", func(c *Config, v string) error {
		n, err := parseInt(v, min, math.MaxInt32)
		if err != nil {
			return fmt.Errorf("%w (milliseconds)", err)
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return nil
	}}
}

// parseInt reads a decimal integer from min to max. A max of MaxInt32 or
// more means no upper bound worth mentioning.
func parseInt(v string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err == nil && n >= min && n <= max {
		return n, nil
	}
	if max >= math.MaxInt32 {
		return 0, fmt.Errorf("want an integer >= %d", min)
	}
	return 0, fmt.Errorf("want an integer from %d to %d", min, max)
}

// days reads a count of days into one time.Duration or more (a setting
// two services read).
func days(min int64, fields ...func(*Config) *time.Duration) kind {
	return kind{"days", func(c *Config, v string) error {
		n, err := parseInt(v, min, 100*365)
		if err != nil {
			return fmt.Errorf("%w (days)", err)
		}
		for _, field := range fields {
			*field(c) = time.Duration(n) * 24 * time.Hour
		}
		return nil
	}}
}

// offAtZero is k writing field, except that a value of 0 is written as
// off: for settings where 0 turns something off but the field's zero
// value means its default.
func offAtZero[T comparable](k kind, field func(*Config) *T, off T) kind {
	return kind{k.name, func(c *Config, v string) error {
		if err := k.set(c, v); err != nil {
			return err
		}
		if var0 := *new(T); *field(c) == var0 {
			*field(c) = off
		}
		return nil
	}}
}

// The fields offAtZero writes.
var (
	bodyMinRate = func(c *Config) *int64 { return &c.server.BodyMinRate }
	clockSkew   = func(c *Config) *time.Duration { return &c.server.Auth.ClockSkew }
)

// negated reads a boolean into a field that says the opposite: an
// X_ENABLED setting into a feature's Disabled.
func negated(field func(*Config) *bool) kind {
	b := boolean(field)
	return kind{b.name, func(c *Config, v string) error {
		if err := b.set(c, v); err != nil {
			return err
		}
		*field(c) = !*field(c)
		return nil
	}}
}

// roleName reads the name role has in tokens.
func roleName(role auth.Role) kind {
	return kind{"string", func(c *Config, v string) error {
		if c.server.Auth.RoleNames == nil {
			c.server.Auth.RoleNames = map[auth.Role]string{}
		}
		c.server.Auth.RoleNames[role] = strings.TrimSpace(v)
		return nil
	}}
}

// seconds reads a count of seconds into a time.Duration.
func seconds(min int64, field func(*Config) *time.Duration) kind {
	return kind{"seconds", func(c *Config, v string) error {
		n, err := parseInt(v, min, math.MaxInt32)
		if err != nil {
			return fmt.Errorf("%w (seconds)", err)
		}
		*field(c) = time.Duration(n) * time.Second
		return nil
	}}
}

// list reads comma-separated entries, trimmed, empty ones dropped; the
// single entry "none" is an empty (not unset) list. check, when set,
// vets each entry.
func list(name string, check func(string) error, field func(*Config) *[]string) kind {
	return kind{name, func(c *Config, v string) error {
		out := []string{}
		if strings.TrimSpace(v) == "none" {
			*field(c) = out
			return nil
		}
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			if check != nil {
				if err := check(e); err != nil {
					return err
				}
			}
			out = append(out, e)
		}
		*field(c) = out
		return nil
	}}
}

func skipPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is not a path (want /health,/metrics or none)", p)
	}
	return nil
}

// allowedHost accepts *, a name or address, or *.name; no port, no path.
func allowedHost(h string) error {
	if h == "*" {
		return nil
	}
	n := strings.TrimPrefix(h, "*.")
	if n == "" || strings.ContainsAny(n, "/:@*?# ") && !strings.HasPrefix(n, "[") {
		return fmt.Errorf("%q is not a host (want example.com, 10.0.0.5, [::1], *.example.com or *; no port)", h)
	}
	return nil
}

// corsOrigin accepts * or an origin as browsers send it: scheme and host,
// with a port when not the scheme's default, no path.
func deliveryRange(v string) error {
	if v == "*" {
		return nil
	}
	if _, err := netip.ParsePrefix(v); err == nil {
		return nil
	}
	if _, err := netip.ParseAddr(v); err == nil {
		return nil
	}
	return fmt.Errorf("%q is neither an address, a CIDR range nor *", v)
}

func corsOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin (want * or https://host[:port], no path)", o)
	}
	return nil
}

func algorithm(field func(*Config) *string) kind {
	return kind{"algorithm", func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if !auth.ValidAlgorithm(v) {
			return errors.New("want HS256, HS384, HS512, RS256, RS384, RS512, EdDSA or auto")
		}
		*field(c) = v
		return nil
	}}
}

// publicKey reads PEM text, or the PEM file a path names, and checks it is
// a key tokens can be verified with.
func publicKey(field func(*Config) *string) kind {
	return kind{"pem", func(c *Config, v string) error {
		text := strings.TrimSpace(v)
		if !strings.HasPrefix(text, "-----BEGIN") {
			data, err := os.ReadFile(text)
			if err != nil {
				return fmt.Errorf("neither PEM text nor a readable file: %w", err)
			}
			text = string(data)
		}
		if _, err := auth.ParsePublicKey(text); err != nil {
			return err
		}
		*field(c) = text
		return nil
	}}
}

func httpURL(field func(*Config) *string) kind {
	return kind{"url", func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("want an http or https URL")
		}
		*field(c) = v
		return nil
	}}
}

func apiTokens(field func(*Config) *[]auth.Token) kind {
	return kind{"tokens", func(c *Config, v string) error {
		t, err := auth.ParseTokens(v)
		if err != nil {
			return err
		}
		*field(c) = t
		return nil
	}}
}

func boolean(field func(*Config) *bool) kind {
	return kind{"bool", func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return errors.New("want true or false")
		}
		*field(c) = b
		return nil
	}}
}

func level(field func(*Config) *slog.Level) kind {
	return kind{"level", func(c *Config, v string) error {
		l, err := logging.ParseLevel(v)
		*field(c) = l
		return err
	}}
}

func format(field func(*Config) *logging.Format) kind {
	return kind{"format", func(c *Config, v string) error {
		f, err := logging.ParseFormat(v)
		*field(c) = f
		return err
	}}
}

// positiveFloat reads a number above 0.
func positiveFloat(field func(*Config) *float64) kind {
	return kind{"number", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return errors.New("want a number above 0")
		}
		*field(c) = f
		return nil
	}}
}

// rateOverrides reads QUEEN_TENANT_RATE_OVERRIDES with package
// ratelimit's parser.
func rateOverrides(field func(*Config) *map[string]ratelimit.Limit) kind {
	return kind{"list", func(c *Config, v string) error {
		o, err := ratelimit.ParseOverrides(v)
		if err != nil {
			return err
		}
		*field(c) = o
		return nil
	}}
}
