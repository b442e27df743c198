// Package server composes a broker, its HTTP API, metrics and background
// services over a store and runs them on a listener with graceful shutdown.
// It is the one place that wires the pieces together, shared by cmd/queen
// and the black-box tests. New only builds; Start (or Serve) starts the
// background services.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/dashboard"
	"github.com/queen-go/queen/internal/delivery"
	"github.com/queen-go/queen/internal/ephemeral"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/streams"
	"github.com/queen-go/queen/internal/timers"
	"github.com/queen-go/queen/internal/transfer"
)

// Defaults of the HTTP limits (Config fields left zero).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConnections    = 16384
)

// Config configures a Server.
type Config struct {
	// HTTP limits; zero values take the defaults above (and httpapi's for
	// the body and write limits, which the API applies per request).
	BodyMinRate    int64 // bytes per second; negative: no minimum
	IdleTimeout    time.Duration
	MaxConnections int // near it, idle and silent connections give way (see connLimiter)
	// MaxInFlight bounds the requests handled at once beyond each
	// connection's first (HTTP/2 streams; see inFlight); 0 means
	// MaxConnections.
	MaxInFlight int
	// HTTP2MaxStreams is the streams an HTTP/2 connection may have open
	// at once; 0 means DefaultHTTP2MaxStreams.
	HTTP2MaxStreams   int
	MaxHeaderBytes    int
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration

	// Logger receives all logs; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means 64 MiB.
	MaxBodyBytes int64
	// Registry receives the broker's Prometheus collectors; the caller owns
	// it (cmd/queen creates it). nil creates a private one.
	Registry *prometheus.Registry
	// SpoolDir is the disk buffer for pushes the store cannot take
	// (FILE_BUFFER_DIR); "" disables it, and such pushes then fail.
	SpoolDir string
	// SpoolMaxBytes caps the bytes the spool holds on disk
	// (FILE_BUFFER_MAX_BYTES); past it, pushes the spool would take fail. 0
	// is no cap.
	SpoolMaxBytes int64
	// Version is reported by /health.
	Version string

	// Metrics: the sampler behind the status and analytics series, and the
	// per-queue Prometheus families. Zero values take control's defaults.
	MetricsAggregateEvery time.Duration // METRICS_AGGREGATE_INTERVAL_S
	MetricsMaxQueues      int           // QUEEN_METRICS_MAX_QUEUES
	MetricsRetention      time.Duration // METRICS_RETENTION_DAYS
	MetricsSampleEvery    time.Duration // METRICS_SAMPLE_INTERVAL_MS
	// WorkerID names this broker's metrics rows beside its hostname
	// (WORKER_ID); "" means its process id.
	WorkerID string
	// NameCacheSize bounds the broker's per-queue caches
	// (QUEEN_NAME_CACHE_SIZE); 0 means the broker's default.
	NameCacheSize int
	// Now is the broker's clock, for tests that move time instead of
	// waiting for it (lease expiry, message ages); nil means time.Now.
	Now func() time.Time

	// Access control and transport security.

	// Auth configures authentication (JWT_*, QUEEN_API_TOKENS); the zero
	// value leaves every route open.
	Auth auth.Config
	// CORSAllowOrigins turns CORS on for these origins ("*" for any).
	CORSAllowOrigins []string
	// AllowedHosts is the Host allowlist (QUEEN_ALLOWED_HOSTS); nil
	// accepts only loopback names while the listener is loopback, any Host
	// otherwise.
	AllowedHosts []string
	// MaxPollTimeout clamps every long poll's wait
	// (QUEEN_MAX_POLL_TIMEOUT_MS); 0: an hour, the contract's bound.
	MaxPollTimeout time.Duration
	// MetricsAuth puts /metrics and /metrics/prometheus behind a
	// read-level token (QUEEN_METRICS_AUTH); it needs Auth enabled.
	MetricsAuth bool
	// TenancyEnabled makes tenant-scoped routes act for the request's
	// tenant (QUEEN_TENANCY_ENABLED).
	TenancyEnabled bool
	// TLSCertFile and TLSKeyFile, both set, serve HTTPS (and HTTP/2) with
	// this PEM certificate chain and key. The pair is loaded again on
	// ReloadTLS and when either file changes.
	TLSCertFile string
	TLSKeyFile  string
	// MigrationOpen opens a target PostgreSQL for the migration routes
	// (start, validate); nil leaves them unavailable (503). It is given
	// here rather than imported because the engines' own tests serve this
	// package.
	MigrationOpen transfer.OpenFunc

	// Queue options the broker applies itself.

	// Encryption seals the payloads of queues with encryptionEnabled
	// (QUEEN_ENCRYPTION_KEY, QUEEN_ENCRYPTION_KEYS_OLD); nil: no key.
	Encryption *crypt.Keyring
	// Key/value state, timers, ephemeral queues and the per-tenant token
	// bucket of their routes; zero values take the features' defaults (all
	// on, Queen's limits).
	Ephemeral ephemeral.Config
	// Ingress configures webhook ingress (QUEEN_INGRESS_*); the zero value
	// takes its defaults, on.
	Ingress ingress.Config
	// Delivery configures webhook push delivery (QUEEN_DELIVERY_*); the
	// zero value takes its defaults, on, public addresses only.
	Delivery  delivery.Config
	KV        kv.Config
	RateLimit ratelimit.Config
	Timers    timers.Config

	// Dashboard configures the web dashboard at / (QUEEN_DASHBOARD_ENABLED).
	Dashboard dashboard.Config

	// Sweeps configures the retention and eviction services; zero fields
	// take Queen's defaults.
	Sweeps broker.SweepConfig
}

// errMetricsAuth refuses QUEEN_METRICS_AUTH without authentication: no
// token could ever open the metrics.
var errMetricsAuth = errors.New("QUEEN_METRICS_AUTH=true needs authentication: set JWT_ENABLED=true or QUEEN_API_TOKENS")

// Server is a broker served over HTTP.
type Server struct {
	authOn   bool // authentication is configured
	broker   *broker.Broker
	certs    *certReloader // nil without TLS
	exposed  atomic.Bool   // served without authentication beyond loopback
	loopback atomic.Bool   // the listener accepts connections from this host only
	http     *http.Server
	log      *slog.Logger
	lot      *parkLot // connections of parked long polls
	conns    *connLimiter
	sampler  *control.Sampler
	services *service.Supervisor
	spool    *spool.Spool

	startOnce sync.Once
	startErr  error
}

// New builds a broker and its HTTP API over st. The caller keeps ownership
// of st and closes it after Shutdown.
func New(cfg Config, st store.Store) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	// Settings that can be wrong first, before anything is opened.
	acfg := cfg.Auth
	if acfg.Logger == nil {
		acfg.Logger = log
	}
	verifier, err := auth.New(acfg)
	if err != nil {
		return nil, err
	}
	if cfg.MetricsAuth && !verifier.Enabled() {
		return nil, errMetricsAuth
	}
	var certs *certReloader
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" {
		if certs, err = newCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile, log); err != nil {
			return nil, err
		}
	}
	s := &Server{authOn: verifier.Enabled(), certs: certs, lot: newParkLot()}
	idleTimeout := cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)

	m := metrics.New(reg)
	bcfg := broker.Config{Logger: log, Metrics: m, Encryption: cfg.Encryption, Sweeps: cfg.Sweeps,
		NameCacheSize: cfg.NameCacheSize, Now: cfg.Now}
	var sp *spool.Spool
	if cfg.SpoolDir != "" {
		if sp, err = spool.OpenMax(cfg.SpoolDir, cfg.SpoolMaxBytes); err != nil {
			return nil, err
		}
		if n := sp.Pending(); n > 0 {
			log.Info("spooled pushes waiting for replay", "messages", n, "dir", cfg.SpoolDir)
		}
		if n := sp.DeadLettered(); n > 0 {
			log.Warn("spooled pushes the database refused are set aside", "items", n, "file", sp.DeadLetterPath())
		}
		bcfg.Spool = sp
		m.WatchSpool(sp)
	}

	b := broker.New(st, bcfg)
	ctl := control.New(st, control.Config{Logger: log, Wake: b.Notify})
	s.sampler = newSampler(cfg, st, m, sp, log)
	watchStore(cfg, m, st, ctl, sp)
	sx := streams.New(st, streams.Config{Logger: log, Metrics: m, Seal: b.SealItems, Wake: b.Notify})
	kvCfg, timerCfg, ephCfg := cfg.KV, cfg.Timers, cfg.Ephemeral
	kvCfg.Logger, timerCfg.Logger, ephCfg.Logger = log, log, log
	kvs := kv.New(st, kvCfg)
	tms := timers.New(st, b, timerCfg)
	eph := ephemeral.New(st, b, ephCfg)
	inCfg := cfg.Ingress
	inCfg.Logger, inCfg.Registerer, inCfg.Encryption = log, reg, cfg.Encryption
	hooks := ingress.New(st, b, inCfg)
	dlCfg := cfg.Delivery
	dlCfg.Logger, dlCfg.Registerer, dlCfg.Encryption = log, reg, cfg.Encryption
	dlCfg.Node = cmp.Or(dlCfg.Node, inCfg.Node)
	pushes, err := delivery.New(st, b, dlCfg)
	if err != nil {
		return nil, err
	}
	handler := httpapi.New(httpapi.Config{
		KV: kvs, Timers: tms, Ephemeral: eph, RateLimit: ratelimit.New(cfg.RateLimit),
		Broker: b, Control: ctl, Logger: log.With("component", "http"), MaxBodyBytes: cfg.MaxBodyBytes,
		Metrics: m, Streams: sx, Version: cfg.Version, Migration: migrationService(cfg, st, b, log),
		BodyMinRate: cfg.BodyMinRate, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
		Auth: verifier, CORSAllowOrigins: cfg.CORSAllowOrigins, TenancyEnabled: cfg.TenancyEnabled,
		MetricsAuth: cfg.MetricsAuth, MaxPollTimeout: cfg.MaxPollTimeout, AllowedHosts: cfg.AllowedHosts, Loopback: s.loopback.Load,
		Exposed: s.exposed.Load, Parking: s.lot, IdleTimeout: idleTimeout,
		Groups: []httpapi.Group{hooks, pushes, dashboard.New(cfg.Dashboard)},
	})
	// Wake-ups from pushes made by other brokers sharing the database.
	listener := service.NewFunc("wake-listener", func(ctx context.Context) {
		if err := st.Listen(ctx, b.Wake); err != nil && ctx.Err() == nil {
			log.Error("notification listener stopped", "err", err)
		}
	})
	s.broker = b
	s.log = log
	s.spool = sp
	// Every source of background work, in start order (stopped in
	// reverse).
	sources := []service.Source{verifier, b, ctl, sx, service.List{listener, s.sampler}, kvs, tms, eph, hooks, pushes}
	s.services = service.NewSupervisor(log, service.Collect(sources...)...)
	maxConns := cmp.Or(cfg.MaxConnections, DefaultMaxConnections)
	readHeaderTimeout := cmp.Or(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	s.conns = newConnLimiter(maxConns, readHeaderTimeout, log.With("component", "http"), reg)
	s.lot.limiter = s.conns
	s.http = &http.Server{
		Handler:           newInFlight(cmp.Or(cfg.MaxInFlight, maxConns), handler, reg),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    cmp.Or(cfg.MaxHeaderBytes, DefaultMaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState:         s.conns.connState,
		ConnContext:       connContext,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: cmp.Or(cfg.HTTP2MaxStreams, DefaultHTTP2MaxStreams)},
	}
	if certs != nil {
		// Offering h2 here is what makes Serve set HTTP/2 up (ALPN), as
		// ServeTLS would; Serve is used so that the TLS layer is below the
		// listener that hands parked connections back (see Serve).
		s.http.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.getCertificate,
			NextProtos: []string{"h2", "http/1.1"}}
	}
	return s, nil
}

// Start starts the background services. Serve calls it if the caller has
// not; calling it again does nothing.
func (s *Server) Start(ctx context.Context) error {
	s.startOnce.Do(func() { s.startErr = s.services.Start(context.WithoutCancel(ctx)) })
	return s.startErr
}

// Broker returns the server's broker, for drivers that deliver wake-ups.
func (s *Server) Broker() *broker.Broker { return s.broker }

// TLS reports whether the server serves HTTPS.
func (s *Server) TLS() bool { return s.certs != nil }

// ReloadTLS loads the certificate and key files again (cmd/queen calls it
// on SIGHUP); on failure the server keeps the pair it has. Without TLS it
// does nothing.
func (s *Server) ReloadTLS() error {
	if s.certs == nil {
		return nil
	}
	return s.certs.reload()
}

// Serve answers requests on ln until Shutdown, over TLS when configured. It
// returns nil after a graceful shutdown. Without authentication it logs a
// warning that every route is open, and when ln is reachable from other
// hosts /health says so too ("auth":"none").
func (s *Server) Serve(ln net.Listener) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		s.sampler.SetPort(tcp.Port)
	}
	if err := s.Start(context.Background()); err != nil {
		return err
	}
	s.loopback.Store(isLoopback(ln.Addr()))
	if !s.authOn {
		exposed := !isLoopback(ln.Addr())
		s.exposed.Store(exposed)
		s.log.Warn("authentication is off: every route is open to anyone who can connect; "+
			"set JWT_ENABLED or QUEEN_API_TOKENS", "addr", ln.Addr().String(), "beyondLoopback", exposed)
	}
	// At the cap, further connections wait in the listen backlog, instead
	// of costing a goroutine and a descriptor each, until one closes or an
	// idle one is closed for them (see connLimiter). Below TLS: a slot is
	// taken before the handshake.
	ln = s.conns.listener(ln)
	if s.certs != nil {
		ln = tls.NewListener(ln, s.http.TLSConfig.Clone())
	} else {
		// Plain HTTP only: net/http serves TLS from a *tls.Conn itself.
		ln = lingerListener{ln}
	}
	// Above TLS: a connection handed back after a parked long poll is
	// served again without a second handshake.
	err := s.http.Serve(s.lot.listener(ln))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// isLoopback reports whether addr accepts connections from this host only.
// An unspecified address (0.0.0.0, ::) listens on every interface.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Shutdown stops accepting connections, answers waiting long-polls with 204,
// and waits for in-flight requests until ctx ends. It does not close the
// store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.broker.Stop()
	// The parked polls answer (the broker stopping woke them) while
	// net/http drains its own requests.
	parked := make(chan error, 1)
	go func() { parked <- s.lot.shutdown(ctx) }()
	err := s.http.Shutdown(ctx)
	err = errors.Join(err, <-parked)
	s.services.Stop()
	if s.spool != nil {
		err = errors.Join(err, s.spool.Close())
	}
	return err
}

// migrationService wires the migration routes to this broker's store and
// push maintenance.
func migrationService(cfg Config, st store.Store, b *broker.Broker, log *slog.Logger) transfer.Service {
	src, _ := st.(store.TransferStore)
	return transfer.NewService(transfer.ServiceConfig{
		Source: src, Open: cfg.MigrationOpen, SetMaintenance: b.SetMaintenance,
		MaintenanceOn: func() bool { return b.Maintenance().Maintenance },
		Logger:        log.With("component", "migration"),
	})
}
