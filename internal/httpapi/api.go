// Package httpapi is Queen's HTTP/JSON API over a broker: the adapter every
// route goes through (request id, admission, body limits, the one mapping
// from errors to statuses, parked long polls), the API's route groups and
// the decoding of requests into package api's wire types. It holds no SQL
// and no message-plane rules.
//
// Every route is one row of the table (RouteInfo in routes.go): method,
// pattern, a stable name (the label of its metrics and access-log lines),
// its access level, and its group's gate and error envelope. Rows come in
// route groups (group.go), each in its own file with the handlers and the
// dependencies of its rows; other packages contribute groups through
// Config.Groups. A handler decodes into the wire types of package api,
// calls the broker and writes its answer, or returns an error and writes
// nothing; the adapter in serve.go turns every returned error into an
// *api.Error through errorStatus and writes it in the route's envelope.
package httpapi

import (
	"cmp"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/ephemeral"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/streams"
	"github.com/queen-go/queen/internal/timers"
)

// Defaults of Config fields left zero.
const (
	// DefaultMaxBodyBytes is the request body cap (QUEEN_MAX_BODY_BYTES).
	DefaultMaxBodyBytes = 64 << 20
	// DefaultReadTimeout is the longest wait for the next bytes of a body
	// (QUEEN_HTTP_READ_TIMEOUT_MS).
	DefaultReadTimeout = 10 * time.Second
	// DefaultBodyMinRate is the average rate, in bytes per second, a body
	// must keep once DefaultReadTimeout has passed (QUEEN_HTTP_BODY_MIN_RATE).
	DefaultBodyMinRate = 1024
	// DefaultWriteTimeout bounds writing an answer; a long poll gets its
	// wait on top (QUEEN_HTTP_WRITE_TIMEOUT_MS).
	DefaultWriteTimeout = 30 * time.Second
)

// Config configures the API.
type Config struct {
	// Broker serves every message-plane route.
	Broker *broker.Broker
	// Control serves the control-plane routes (queues, groups, messages,
	// DLQ, traces, status).
	Control *control.Control
	// Logger receives error logs (with the request id) and, at debug level,
	// one access-log line per request; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Metrics counts requests per route name; nil creates a private set.
	Metrics *metrics.Metrics
	// Migration serves the migration routes (internal/transfer); nil
	// answers them 503.
	Migration Migration
	// Streams serves Queen's stream routes (/streams/v1) and the stream
	// queries of the control plane.
	Streams *streams.Streams
	// Version is reported by /health.
	Version string

	// BodyMinRate is the average rate in bytes per second a body must keep
	// once ReadTimeout has passed, or it is cut off with 408: a client that
	// trickles a body cannot hold a connection open-ended. 0 means
	// DefaultBodyMinRate; negative means no minimum.
	BodyMinRate int64
	// ReadTimeout is the longest wait for the next bytes of a request body;
	// 0 means DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing an answer, counted from the request's
	// start; a long poll gets its wait on top. 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration

	// Auth verifies bearer tokens on every route that is not public; nil,
	// or a verifier that is not Enabled, leaves every route open.
	Auth *auth.Verifier
	// CORSAllowOrigins turns CORS on (CORS_ALLOW_ORIGIN): the origins
	// browsers may call from, exactly as they send them, or "*" for any.
	// Empty: no CORS headers, and OPTIONS is an unknown route.
	CORSAllowOrigins []string
	// AllowedHosts is the Host allowlist (QUEEN_ALLOWED_HOSTS): names or
	// addresses, "*.example.com" for the names under example.com, "*" for
	// any. nil means: only loopback names and addresses while Loopback
	// reports true, any Host otherwise. A request with another Host is
	// refused (403) before any route, which stops DNS rebinding.
	AllowedHosts []string
	// Loopback reports whether the broker listens on loopback only; nil
	// means never.
	Loopback func() bool
	// MaxPollTimeout bounds every long poll's wait
	// (QUEEN_MAX_POLL_TIMEOUT_MS): a longer timeout is clamped to it. 0
	// means the contract's bound, an hour.
	MaxPollTimeout time.Duration
	// MetricsAuth puts /metrics and /metrics/prometheus behind the read
	// level even where JWT_SKIP_PATHS names them (QUEEN_METRICS_AUTH). It
	// needs Auth enabled.
	MetricsAuth bool
	// Exposed reports whether the API is served without authentication on
	// an address other hosts can reach; /health then says "auth":"none".
	// nil means never.
	Exposed func() bool
	// TenancyEnabled makes every tenant-scoped route act for the request's
	// tenant (QUEEN_TENANCY_ENABLED): the token's tenant claim, else the
	// x-queen-tenant header, else 400. Off, every request acts for the
	// default tenant and the header is only checked for form.
	TenancyEnabled bool

	// Parking takes the connections of sleeping long polls off net/http
	// (see Parking); nil leaves them in their handlers. IdleTimeout is the
	// server's: how long a connection handed back after a parked poll
	// waits for its next request (0: no limit).
	Parking     Parking
	IdleTimeout time.Duration

	// Ephemeral serves the ephemeral-queue routes; nil answers them 403.
	Ephemeral *ephemeral.Ephemeral
	// KV serves the key/value routes and key/value operations in
	// transactions; nil answers them 403.
	KV *kv.KV
	// RateLimit is the per-tenant token bucket of the key/value, timer and
	// ephemeral routes; nil means no limit.
	RateLimit *ratelimit.Limiter
	// Timers serves the timer routes; nil answers them 403.
	Timers *timers.Timers

	// Groups are route groups of other packages, served after the API's
	// own (see Group).
	Groups []Group
}

// adapter is the state the adapter serves every route with: admission,
// limits, metrics, parking. The routes themselves and what they depend on
// are the groups'.
type adapter struct {
	auth         *auth.Verifier // nil: authentication off
	cors         *cors          // nil: CORS off
	hosts        *hosts
	maxPoll      time.Duration // 0: no bound beyond the contract's
	exposed      func() bool
	fallbacks    []FallbackGroup
	idleTimeout  time.Duration
	log          *slog.Logger
	maxBody      int64
	metrics      *metrics.Metrics
	minRate      int64
	openapi      []byte // the document /api/v1/openapi.json serves
	parking      Parking
	prom         http.Handler // the registry in the Prometheus text format
	readTimeout  time.Duration
	table        []Route
	tenancy      bool
	version      string
	writeTimeout time.Duration
}

// New returns the HTTP handler of the whole API.
func New(cfg Config) http.Handler {
	return newAdapter(cfg).router()
}

func newAdapter(cfg Config) *adapter {
	a := &adapter{
		log:          cfg.Logger,
		maxBody:      cfg.MaxBodyBytes,
		metrics:      cfg.Metrics,
		tenancy:      cfg.TenancyEnabled,
		version:      cfg.Version,
		cors:         newCORS(cfg.CORSAllowOrigins),
		hosts:        newHosts(cfg.AllowedHosts, cfg.Loopback),
		maxPoll:      cfg.MaxPollTimeout,
		exposed:      cfg.Exposed,
		parking:      cfg.Parking,
		idleTimeout:  cfg.IdleTimeout,
		minRate:      cmp.Or(cfg.BodyMinRate, DefaultBodyMinRate),
		readTimeout:  cmp.Or(cfg.ReadTimeout, DefaultReadTimeout),
		writeTimeout: cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
	}
	if cfg.Auth.Enabled() {
		a.auth = cfg.Auth
	}
	if a.exposed == nil {
		a.exposed = func() bool { return false }
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBodyBytes
	}
	if a.metrics == nil {
		a.metrics = metrics.New(prometheus.NewRegistry())
	}
	a.prom = promhttp.HandlerFor(a.metrics.Gatherer(), promhttp.HandlerOpts{})
	groups := append(a.groups(cfg), cfg.Groups...)
	var fragments [][]byte
	for _, g := range groups {
		a.table = append(a.table, g.Routes()...)
		if f, ok := g.(FallbackGroup); ok {
			a.fallbacks = append(a.fallbacks, f)
		}
		if d, ok := g.(DocumentedGroup); ok {
			fragments = append(fragments, d.OpenAPI())
		}
	}
	a.closeRoutes(cfg.MetricsAuth)
	a.openapi = openapiJSON
	if len(fragments) > 0 {
		a.openapi = mustMergeOpenAPI(openapiFS, fragments...)
	}
	return a
}

// groups are the API's own route groups, in table order, each given what
// it depends on. A feature of this package adds its group (in its own
// file, with its own OpenAPI fragment in openapi/) and one line here; a
// feature of another package goes in Config.Groups instead.
func (a *adapter) groups(cfg Config) []Group {
	limit := bucket{limiter: cfg.RateLimit, authOn: a.auth != nil}
	return []Group{
		&operationRoutes{a: a, broker: cfg.Broker},
		&messageRoutes{a: a, broker: cfg.Broker, kv: cfg.KV},
		&queueRoutes{broker: cfg.Broker},
		&resourceRoutes{control: cfg.Control},
		&consumerGroupRoutes{control: cfg.Control},
		&statusRoutes{control: cfg.Control},
		&maintenanceRoutes{broker: cfg.Broker},
		&sharedStateRoutes{broker: cfg.Broker},
		&migrationRoutes{migration: cfg.Migration},
		probeRoutes{},
		&identityRoutes{a: a},
		&messageControlRoutes{control: cfg.Control},
		&streamRoutes{streams: cfg.Streams},
		newKVRoutes(cfg.KV, limit, cfg.Broker),
		newTimerRoutes(cfg.Timers, limit, cfg.Broker),
		newEphemeralRoutes(a, cfg.Ephemeral, limit, cfg.Broker),
	}
}

// caller is who the request acts for: the token's subject (stamped on pushed
// messages as producerSub, never taken from the body) and the resolved
// tenant, as the adapter admitted them. Without authentication the subject
// is ""; without tenancy, and on process-wide routes, the tenant is "" (the
// default one). It is the one place handlers learn either.
func caller(r *http.Request) broker.Caller {
	if e, ok := r.Context().Value(exchangeKey{}).(*exchange); ok {
		return e.caller
	}
	return broker.Caller{}
}

// Caller returns the caller of a request the adapter admitted: its subject
// and its tenant. A group of another package calls it as this package's
// handlers call caller.
func Caller(r *http.Request) broker.Caller { return caller(r) }
