// Package delivery is webhook push delivery: a target names a queue, a
// consumer group and a URL, and the delivery service POSTs each of the
// queue's messages to the URL, in partition order. Every broker runs
// workers for every target; each worker pops one partition's lane through
// the target's consumer group (the broker's own pop and ack), so the
// group's lease keeps one delivery in flight per partition across all the
// brokers sharing a database. A delivery is retried with exponential
// backoff and jitter, then nacked, and the queue's retryLimit moves it to
// its dead-letter queue; a 2xx acks it.
//
// Outbound requests carry the headers of the webhook contract (see
// docs/webhooks.md): Idempotency-Key, X-Queuey-Event-Id, X-Queuey-Path with
// this cell's segment appended, the signature headers when the target
// signs, the GroupKey and forwarded headers snapshotted at accept, and the
// target's static headers, in that precedence. They connect only to
// addresses the Guard permits, follow no redirect and read a bounded part
// of the answer.
package delivery

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Defaults of Config's zero fields.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultAttempts         = 3
	DefaultBackoffBase      = 500 * time.Millisecond
	DefaultBackoffMax       = 30 * time.Second
	DefaultWorkers          = 4
	DefaultBatch            = 10
	DefaultPollWait         = 5 * time.Second
	DefaultReloadEvery      = 5 * time.Second
	DefaultMaxResponseBytes = 64 << 10
	DefaultAttemptTTL       = 7 * 24 * time.Hour
	DefaultAttemptsKept     = 20
	DefaultNode             = "queen"
	maxWorkers              = 256
)

// Config configures the delivery service.
type Config struct {
	// Disabled runs no deliveries (QUEEN_DELIVERY_ENABLED=false); the
	// management routes still answer.
	Disabled bool
	// Allow lists the addresses and ranges deliveries may reach beyond the
	// public Internet (QUEEN_DELIVERY_ALLOW); "*" allows any.
	Allow []string
	// Node names this cell in X-Queuey-Path (the ingress's
	// QUEEN_INGRESS_NODE).
	Node string
	// Timeout bounds one attempt (QUEEN_DELIVERY_TIMEOUT_MS); a target may
	// set its own.
	Timeout time.Duration
	// Attempts is how many POSTs one delivery makes before it nacks
	// (QUEEN_DELIVERY_ATTEMPTS); a target may set its own.
	Attempts int
	// BackoffBase and BackoffMax shape the wait before a retry: base
	// doubled per attempt already made, capped, with jitter
	// (QUEEN_DELIVERY_BACKOFF_MS, QUEEN_DELIVERY_BACKOFF_MAX_MS).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Workers is how many partitions of a target one broker delivers at
	// once (QUEEN_DELIVERY_WORKERS); a target may set its own.
	Workers int
	// Batch is how many messages of a partition one pop takes.
	Batch int
	// PollWait is the long poll of a worker with nothing to deliver.
	PollWait time.Duration
	// ReloadEvery is how often the service reads the targets again (a
	// change made through this broker applies at once).
	ReloadEvery time.Duration
	// MaxResponseBytes caps how much of an answer is read.
	MaxResponseBytes int64
	// AttemptTTL is how long a message's attempts are kept;
	// AttemptsKept how many of them (the latest).
	AttemptTTL   time.Duration
	AttemptsKept int
	// Encryption seals the targets' secrets at rest; nil stores them as
	// they are.
	Encryption *crypt.Keyring
	Logger     *slog.Logger
	// Registerer receives the delivery's Prometheus families; nil: none.
	Registerer prometheus.Registerer
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Store is what delivery keeps: targets, attempts, and the events the
// ingress recorded.
type Store interface {
	WebhookPut(ctx context.Context, p *store.WebhookPutParams) error
	WebhookGet(ctx context.Context, p *store.WebhookKey) (*store.WebhookDoc, error)
	WebhookList(ctx context.Context, p *store.WebhookListParams) ([]store.WebhookDoc, error)
	WebhookDelete(ctx context.Context, p *store.WebhookKey) error
	WebhookSweep(ctx context.Context, p *store.WebhookSweepParams) (int, error)
}

// Broker is the message plane deliveries consume.
type Broker interface {
	Pop(ctx context.Context, c broker.Caller, req broker.PopRequest) (*broker.PopResponse, error)
	Ack(ctx context.Context, c broker.Caller, acks []store.Ack) ([]store.AckResult, error)
	ExtendLease(ctx context.Context, c broker.Caller, leaseID string, seconds int) (*store.LeaseExtendResult, error)
}

// The kinds of delivery's documents.
const (
	KindTarget  = "delivery_target"   // id: the target id
	KindAttempt = "delivery_attempts" // id: attemptKey(target, message)
)

// Service runs the deliveries of every target and manages the targets.
type Service struct {
	cfg    Config
	st     Store
	b      Broker
	log    *slog.Logger
	guard  *Guard
	client *http.Client
	m      *metricSet

	runner *service.Func
	sweep  *service.Loop
	kick   chan struct{}

	mu      sync.Mutex
	running map[string]*running // by tenant + "/" + target id
}

// New builds the delivery service; it fails on a bad allow list.
func New(st Store, b Broker, cfg Config) (*Service, error) {
	cfg.Node = cmp.Or(cfg.Node, DefaultNode)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.Attempts = cmp.Or(cfg.Attempts, DefaultAttempts)
	cfg.BackoffBase = cmp.Or(cfg.BackoffBase, DefaultBackoffBase)
	cfg.BackoffMax = cmp.Or(cfg.BackoffMax, DefaultBackoffMax)
	cfg.Workers = cmp.Or(cfg.Workers, DefaultWorkers)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultBatch)
	cfg.PollWait = cmp.Or(cfg.PollWait, DefaultPollWait)
	cfg.ReloadEvery = cmp.Or(cfg.ReloadEvery, DefaultReloadEvery)
	cfg.MaxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	cfg.AttemptTTL = cmp.Or(cfg.AttemptTTL, DefaultAttemptTTL)
	cfg.AttemptsKept = cmp.Or(cfg.AttemptsKept, DefaultAttemptsKept)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g, err := NewGuard(cfg.Allow)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, st: st, b: b, log: log.With("component", "delivery"), guard: g,
		kick: make(chan struct{}, 1), running: map[string]*running{}, m: newMetrics(cfg.Registerer)}
	s.client = newClient(g)
	s.runner = service.NewFunc("delivery", s.run)
	s.sweep = service.NewLoop("delivery-attempt-sweep", time.Hour, s.sweepAttempts)
	return s, nil
}

// newClient is the outbound client: connections only to permitted
// addresses, no proxy, no redirects.
func newClient(g *Guard) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// Guard returns the service's address guard.
func (s *Service) Guard() *Guard { return s.guard }

// Services returns the delivery's background services (a service.Source).
func (s *Service) Services() []service.Service {
	if s.cfg.Disabled {
		return []service.Service{s.sweep}
	}
	return []service.Service{s.runner, s.sweep}
}

// Reload has the targets read again now.
func (s *Service) Reload() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// run keeps one set of workers per target until the service stops.
func (s *Service) run(ctx context.Context) {
	tick := time.NewTicker(s.cfg.ReloadEvery)
	defer tick.Stop()
	for {
		s.reconcile(ctx)
		select {
		case <-ctx.Done():
			s.stopAll()
			return
		case <-tick.C:
		case <-s.kick:
		}
	}
}

// reconcile starts the workers of new and changed targets and stops those
// of removed, paused and changed ones.
func (s *Service) reconcile(ctx context.Context) {
	docs, err := s.st.WebhookList(ctx, &store.WebhookListParams{Kind: KindTarget, AllTenants: true})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("delivery targets not read", "err", err)
		}
		return
	}
	want := map[string]*target{}
	for _, d := range docs {
		t, err := s.decode(&d)
		if err != nil {
			s.log.Warn("delivery target unreadable", "target", d.ID, "err", err)
			continue
		}
		if !t.doc.Paused {
			want[d.Tenant+"/"+d.ID] = t
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.running {
		if t, ok := want[k]; !ok || !t.updated.Equal(r.t.updated) {
			r.stop()
			delete(s.running, k)
		}
	}
	for k, t := range want {
		if _, ok := s.running[k]; !ok {
			s.running[k] = s.start(ctx, t)
		}
	}
}

func (s *Service) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.running {
		r.stop()
		delete(s.running, k)
	}
}

// running is the workers of one target.
type running struct {
	t      *target
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (r *running) stop() {
	r.cancel()
	r.wg.Wait()
}

func (s *Service) start(ctx context.Context, t *target) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{t: t, cancel: cancel}
	n := min(cmp.Or(t.doc.Workers, s.cfg.Workers), maxWorkers)
	for range n {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			// A panic (a message the delivery path chokes on) stops this
			// worker for a backoff, not the broker; the message's lease
			// expires and it comes back.
			service.Supervise(ctx, s.log, "delivery worker "+t.id, func(ctx context.Context) { s.work(ctx, t) })
		}()
	}
	s.log.Debug("delivery target started", "target", t.id, "queue", t.doc.Queue, "workers", n)
	return r
}

func (s *Service) sweepAttempts(ctx context.Context) {
	n, err := s.st.WebhookSweep(ctx, &store.WebhookSweepParams{Kind: KindAttempt,
		Before: s.cfg.Now().Add(-s.cfg.AttemptTTL)})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("delivery attempts sweep failed", "err", err)
	} else if n > 0 {
		s.log.Debug("delivery attempts swept", "messages", n)
	}
}

// newID returns n random bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
