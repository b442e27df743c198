// Package ingress is webhook ingress: POST /ingress/v1/{queue} stores a
// producer's raw JSON body as one message and answers 202 at once. A queue
// takes ingress once an administrator opens it (PUT
// /api/v1/ingress/queues/{queue}), with its authentication (API keys,
// qak_<keyId>.<secret>, stored hashed; or HMAC-SHA256 signed requests,
// with a timestamp checked for skew and a nonce used once), an optional
// address allow-list, a pause switch and where the partition comes from.
// Idempotency-Key is the message's transactionId, so a repeated key is the
// broker's duplicate and answers the first event's id. X-Queuey-Path
// carries the relays an event went through: a cycle or a path past the hop
// budget is refused.
//
// The routes are a group of their own (Routes), plugged into the HTTP API
// through httpapi.Config.Groups, answering errors as
// {"error":{"code","message"}}.
package ingress

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Defaults of Config's zero fields.
const (
	DefaultSkew         = 5 * time.Minute
	DefaultMaxHops      = 8
	DefaultMaxBodyBytes = 1 << 20
	DefaultNode         = "queen"
	DefaultEventTTL     = 7 * 24 * time.Hour
	sweepEvery          = time.Minute
)

// Config configures the ingress.
type Config struct {
	// Disabled turns the ingress routes off (QUEEN_INGRESS_ENABLED=false).
	Disabled bool
	// Skew is how far a signed request's timestamp may be from the
	// broker's clock, either way (QUEEN_INGRESS_SKEW_S); the nonce is
	// remembered that long past the timestamp.
	Skew time.Duration
	// MaxHops is the hop budget of X-Queuey-Path (QUEEN_INGRESS_MAX_HOPS).
	MaxHops int
	// MaxBodyBytes caps an event's body (QUEEN_INGRESS_MAX_BODY_BYTES).
	MaxBodyBytes int
	// Node names this cell in X-Queuey-Path segments (QUEEN_INGRESS_NODE);
	// brokers sharing a database share it.
	Node string
	// EventTTL is how long what an event brought besides its body (its
	// path, its forwarded values) is kept for its deliveries.
	EventTTL time.Duration
	// Encryption seals signing secrets at rest; nil stores them as they
	// are.
	Encryption *crypt.Keyring
	Logger     *slog.Logger
	// Registerer receives the ingress's Prometheus families; nil: none.
	Registerer prometheus.Registerer
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Store is what the ingress keeps: its documents and nonces.
type Store interface {
	WebhookPut(ctx context.Context, p *store.WebhookPutParams) error
	WebhookGet(ctx context.Context, p *store.WebhookKey) (*store.WebhookDoc, error)
	WebhookList(ctx context.Context, p *store.WebhookListParams) ([]store.WebhookDoc, error)
	WebhookDelete(ctx context.Context, p *store.WebhookKey) error
	WebhookNonceClaim(ctx context.Context, p *store.WebhookNonceParams) (bool, error)
	WebhookNonceSweep(ctx context.Context, p *store.WebhookNonceSweepParams) (int, error)
	WebhookSweep(ctx context.Context, p *store.WebhookSweepParams) (int, error)
}

// Broker is the message plane the ingress pushes into.
type Broker interface {
	Push(ctx context.Context, c broker.Caller, items []store.PushItem) ([]broker.PushVerdict, error)
	Unable() string
}

// The kinds of the ingress's documents.
const (
	KindQueue  = "ingress"        // id: the queue
	KindAPIKey = "ingress_key"    // id: the key id
	KindSecret = "ingress_secret" // id: the key id
	KindEvent  = "ingress_event"  // id: EventKey; only events with a path or forwarded values
)

// The authentication modes of a queue.
const (
	AuthAPIKey = "api_key"
	AuthHMAC   = "hmac"
)

// Ingress serves the ingress routes and sweeps expired nonces.
type Ingress struct {
	cfg      Config
	st       Store
	b        Broker
	log      *slog.Logger
	requests *prometheus.CounterVec
	sweeper  *service.Loop
}

// New builds the ingress over st and b.
func New(st Store, b Broker, cfg Config) *Ingress {
	cfg.Skew = cmp.Or(cfg.Skew, DefaultSkew)
	cfg.MaxHops = cmp.Or(cfg.MaxHops, DefaultMaxHops)
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.Node = cmp.Or(cfg.Node, DefaultNode)
	cfg.EventTTL = cmp.Or(cfg.EventTTL, DefaultEventTTL)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := &Ingress{cfg: cfg, st: st, b: b, log: log.With("component", "ingress")}
	in.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_ingress_requests_total",
		Help: "Webhook ingress requests by answer code (accepted, replayed or the error code)."}, []string{"code"})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(in.requests)
	}
	in.sweeper = service.NewLoop("ingress-nonce-sweep", sweepEvery, in.sweep)
	return in
}

// Services returns the ingress's background services (a service.Source).
func (in *Ingress) Services() []service.Service { return []service.Service{in.sweeper} }

func (in *Ingress) sweep(ctx context.Context) {
	n, err := in.st.WebhookNonceSweep(ctx, &store.WebhookNonceSweepParams{Now: in.cfg.Now()})
	if err != nil && ctx.Err() == nil {
		in.log.Warn("nonce sweep failed", "err", err)
	} else if n > 0 {
		in.log.Debug("nonces swept", "nonces", n)
	}
	n, err = in.st.WebhookSweep(ctx, &store.WebhookSweepParams{Kind: KindEvent, Before: in.cfg.Now().Add(-in.cfg.EventTTL)})
	if err != nil && ctx.Err() == nil {
		in.log.Warn("event sweep failed", "err", err)
	} else if n > 0 {
		in.log.Debug("events swept", "events", n)
	}
}

// queueDoc is the stored form of a queue's ingress settings.
type queueDoc struct {
	Auth            string               `json:"auth"`
	AllowIPs        []string             `json:"allowIps,omitempty"`
	PartitionHeader string               `json:"partitionHeader,omitempty"`
	PartitionField  string               `json:"partitionField,omitempty"`
	Paused          bool                 `json:"paused,omitempty"`
	Forward         []api.IngressForward `json:"forward,omitempty"`
}

// keyDoc is the stored form of an API key: the SHA-256 of its secret.
type keyDoc struct {
	SecretSHA256 string `json:"secretSha256"`
}

// secretDoc is the stored form of a signing secret: sealed with the
// broker's key when it has one (Sealed), else as it is.
type secretDoc struct {
	Secret string `json:"secret"`
	Sealed bool   `json:"sealed,omitempty"`
}

// Event is what an event brought besides its body that delivery needs,
// written before the message is pushed (so a delivery never misses it):
// the X-Queuey-Path it came with and the forwarded values, header name to
// value.
type Event struct {
	Headers map[string]string `json:"headers,omitempty"`
	Path    []string          `json:"path,omitempty"`
}

// EventReader reads the events' documents.
type EventReader interface {
	WebhookGet(ctx context.Context, p *store.WebhookKey) (*store.WebhookDoc, error)
}

// EventKey is the document id of the event of queue's partition with
// transaction id txn: the message id is minted only by the push.
func EventKey(queue, partition, txn string) string {
	return BodySHA([]byte(queue + "\x00" + partition + "\x00" + txn))
}

// LoadEvent reads what an event of queue brought besides its body; nil
// when it brought nothing (or came through another route).
func LoadEvent(ctx context.Context, st EventReader, tenant, queue, partition, txn string) (*Event, error) {
	d, err := st.WebhookGet(ctx, &store.WebhookKey{Tenant: store.TenantOrDefault(tenant), Kind: KindEvent,
		ID: EventKey(queue, partition, txn)})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var e Event
	if err := json.Unmarshal(d.Doc, &e); err != nil {
		return nil, fmt.Errorf("event of %s: %w", queue, err)
	}
	return &e, nil
}

func (in *Ingress) queueConfig(ctx context.Context, tenant, queue string) (*queueDoc, error) {
	d, err := in.st.WebhookGet(ctx, &store.WebhookKey{Tenant: tenant, Kind: KindQueue, ID: queue})
	if err != nil {
		return nil, err
	}
	var q queueDoc
	if err := json.Unmarshal(d.Doc, &q); err != nil {
		return nil, fmt.Errorf("ingress settings of %q: %w", queue, err)
	}
	return &q, nil
}

// secret returns the signing secret keyID of queue, or false.
func (in *Ingress) secret(ctx context.Context, tenant, queue, keyID string) (string, bool, error) {
	d, err := in.st.WebhookGet(ctx, &store.WebhookKey{Tenant: tenant, Kind: KindSecret, ID: keyID})
	if err != nil || d.Queue != queue {
		if err == store.ErrNotFound || err == nil {
			return "", false, nil
		}
		return "", false, err
	}
	var s secretDoc
	if err := json.Unmarshal(d.Doc, &s); err != nil {
		return "", false, fmt.Errorf("signing secret %q: %w", keyID, err)
	}
	if !s.Sealed {
		return s.Secret, true, nil
	}
	if in.cfg.Encryption == nil {
		return "", false, fmt.Errorf("signing secret %q is sealed and the broker has no encryption key", keyID)
	}
	plain, ok := in.cfg.Encryption.Open([]byte(s.Secret))
	if !ok {
		return "", false, fmt.Errorf("signing secret %q does not open with the broker's keys", keyID)
	}
	return string(plain), true, nil
}

// Secret returns the signing secret keyID of queue in tenant, opened: for
// delivery, which signs with the queue's secrets.
func (in *Ingress) Secret(ctx context.Context, tenant, queue, keyID string) (string, bool, error) {
	return in.secret(ctx, store.TenantOrDefault(tenant), queue, keyID)
}

// newID returns n random bytes in hex.
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
