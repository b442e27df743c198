package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/store"
)

// The auth modes of a target.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthOAuth2 = "oauth2"
)

// targetDoc is the stored form of a target; the secrets sealed with the
// broker's key when it has one (Sealed).
type targetDoc struct {
	Attempts       int               `json:"attempts,omitempty"`
	Auth           api.DeliveryAuth  `json:"auth"`
	ConsumerGroup  string            `json:"consumerGroup"`
	GroupKeyHeader string            `json:"groupKeyHeader,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Paused         bool              `json:"paused,omitempty"`
	Queue          string            `json:"queue"`
	Sealed         bool              `json:"sealed,omitempty"`
	SigningKeyID   string            `json:"signingKeyId,omitempty"`
	SigningSecret  string            `json:"signingSecret,omitempty"`
	TimeoutMs      int               `json:"timeoutMs,omitempty"`
	URL            string            `json:"url"`
	Workers        int               `json:"workers,omitempty"`
}

// target is a decoded target, secrets open, ready to deliver.
type target struct {
	id, tenant string
	doc        targetDoc // secrets open
	created    time.Time
	updated    time.Time
	tokens     oauth2.TokenSource // AuthOAuth2 only
}

var targetID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// decode opens a stored target.
func (s *Service) decode(d *store.WebhookDoc) (*target, error) {
	var doc targetDoc
	if err := json.Unmarshal(d.Doc, &doc); err != nil {
		return nil, err
	}
	if doc.Sealed {
		for _, p := range []*string{&doc.Auth.Token, &doc.Auth.Password, &doc.Auth.ClientSecret, &doc.SigningSecret} {
			if *p == "" {
				continue
			}
			if s.cfg.Encryption == nil {
				return nil, errors.New("secrets are sealed and the broker has no encryption key")
			}
			plain, ok := s.cfg.Encryption.Open([]byte(*p))
			if !ok {
				return nil, errors.New("secrets do not open with the broker's keys")
			}
			*p = string(plain)
		}
		doc.Sealed = false
	}
	t := &target{id: d.ID, tenant: store.TenantOrDefault(d.Tenant), doc: doc, created: d.CreatedAt, updated: d.UpdatedAt}
	if doc.Auth.Mode == AuthOAuth2 {
		cc := clientcredentials.Config{ClientID: doc.Auth.ClientID, ClientSecret: doc.Auth.ClientSecret,
			TokenURL: doc.Auth.TokenURL, Scopes: doc.Auth.Scopes}
		// The token endpoint is reached through the guarded client too.
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.client)
		t.tokens = oauth2.ReuseTokenSource(nil, cc.TokenSource(ctx))
	}
	return t, nil
}

// seal returns doc with its secrets sealed, when the broker has a key.
func (s *Service) seal(doc targetDoc) (targetDoc, error) {
	if s.cfg.Encryption == nil {
		return doc, nil
	}
	for _, p := range []*string{&doc.Auth.Token, &doc.Auth.Password, &doc.Auth.ClientSecret, &doc.SigningSecret} {
		if *p == "" {
			continue
		}
		sealed, err := s.cfg.Encryption.Seal([]byte(*p))
		if err != nil {
			return doc, err
		}
		*p = string(sealed)
	}
	doc.Sealed = true
	return doc, nil
}

// wire is the answer form of a target: no secrets.
func wire(t *target) api.DeliveryTarget {
	a := t.doc.Auth
	a.Token, a.Password, a.ClientSecret = "", "", ""
	out := api.DeliveryTarget{ID: t.id, Queue: t.doc.Queue, ConsumerGroup: t.doc.ConsumerGroup, URL: t.doc.URL,
		Auth: &a, Sign: t.doc.SigningKeyID != "", SigningKeyID: t.doc.SigningKeyID, GroupKeyHeader: t.doc.GroupKeyHeader,
		Headers: t.doc.Headers, Workers: t.doc.Workers, TimeoutMs: t.doc.TimeoutMs, Attempts: t.doc.Attempts,
		Paused: t.doc.Paused, CreatedAt: t.created.UTC().Format(time.RFC3339Nano),
		UpdatedAt: t.updated.UTC().Format(time.RFC3339Nano)}
	return out
}

var queueName = regexp.MustCompile(`^[^\x00-\x1f\x7f]{1,255}$`)

// check validates a target's settings (old: the stored target it
// replaces, whose secrets it keeps when in's are empty; nil on create).
func (s *Service) check(in *api.DeliveryTarget, old *targetDoc) (targetDoc, error) {
	bad := func(format string, args ...any) (targetDoc, error) {
		return targetDoc{}, api.ErrBadRequest.Withf("bad body: "+format, args...)
	}
	if !queueName.MatchString(in.Queue) {
		return bad("queue must be 1 to 255 characters without control characters")
	}
	if in.ConsumerGroup != "" && !queueName.MatchString(in.ConsumerGroup) {
		return bad("consumerGroup must be 1 to 255 characters without control characters")
	}
	if _, err := s.guard.CheckURL(in.URL); err != nil {
		return bad("%v", err)
	}
	if in.Workers < 0 || in.Workers > maxWorkers || in.Attempts < 0 || in.Attempts > 100 || in.TimeoutMs < 0 ||
		in.TimeoutMs > 300000 {
		return bad("workers (0..%d), attempts (0..100) or timeoutMs (0..300000) out of range", maxWorkers)
	}
	doc := targetDoc{Queue: in.Queue, ConsumerGroup: in.ConsumerGroup, URL: in.URL, GroupKeyHeader: in.GroupKeyHeader,
		Workers: in.Workers, Attempts: in.Attempts, TimeoutMs: in.TimeoutMs, Paused: in.Paused}
	if in.GroupKeyHeader != "" {
		if !ingress.ValidHeaderName(in.GroupKeyHeader) || ingress.NeverForward(in.GroupKeyHeader) {
			return bad("groupKeyHeader %q is not a header name that may be forwarded", in.GroupKeyHeader)
		}
	}
	if len(in.Headers) > 32 {
		return bad("headers: at most 32")
	}
	for k, v := range in.Headers {
		if !ingress.ValidHeaderName(k) || ingress.Transport(k) || strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Queuey-") {
			return bad("headers: %q may not be set (a transport header or X-Queuey-*)", k)
		}
		if strings.EqualFold(k, in.GroupKeyHeader) {
			return bad("headers: %q collides with groupKeyHeader", k)
		}
		if len(v) > 4096 || strings.ContainsAny(v, "\r\n\x00") {
			return bad("headers: the value of %q is not a header value", k)
		}
		if doc.Headers == nil {
			doc.Headers = map[string]string{}
		}
		doc.Headers[http.CanonicalHeaderKey(k)] = v
	}
	a := api.DeliveryAuth{Mode: AuthNone}
	if in.Auth != nil {
		a = *in.Auth
	}
	var prev api.DeliveryAuth
	if old != nil {
		prev = old.Auth
		doc.SigningKeyID, doc.SigningSecret = old.SigningKeyID, old.SigningSecret
	}
	keep := func(v, old string) string {
		if v == "" && prev.Mode == a.Mode {
			return old
		}
		return v
	}
	switch a.Mode {
	case "", AuthNone:
		a = api.DeliveryAuth{Mode: AuthNone}
	case AuthBearer:
		a = api.DeliveryAuth{Mode: AuthBearer, Token: keep(a.Token, prev.Token)}
		if a.Token == "" {
			return bad("auth: bearer needs a token")
		}
	case AuthBasic:
		a = api.DeliveryAuth{Mode: AuthBasic, Username: a.Username, Password: keep(a.Password, prev.Password)}
		if a.Username == "" || strings.Contains(a.Username, ":") {
			return bad("auth: basic needs a username without ':'")
		}
	case AuthOAuth2:
		a = api.DeliveryAuth{Mode: AuthOAuth2, ClientID: a.ClientID, ClientSecret: keep(a.ClientSecret, prev.ClientSecret),
			TokenURL: a.TokenURL, Scopes: a.Scopes}
		if a.ClientID == "" || a.ClientSecret == "" {
			return bad("auth: oauth2 needs clientId and clientSecret")
		}
		if _, err := s.guard.CheckURL(a.TokenURL); err != nil {
			return bad("auth: tokenUrl: %v", err)
		}
	default:
		return bad("auth: mode must be none, bearer, basic or oauth2")
	}
	if strings.ContainsAny(a.Token+a.Username+a.Password, "\r\n\x00") {
		return bad("auth: credentials may not hold line breaks")
	}
	doc.Auth = a
	return doc, nil
}

// Create stores a new target and returns it with its signing secret (when
// it signs), which is answered this once.
func (s *Service) Create(ctx context.Context, tenant string, in *api.DeliveryTarget) (*api.DeliveryTarget, error) {
	doc, err := s.check(in, nil)
	if err != nil {
		return nil, err
	}
	id := in.ID
	if id == "" {
		id = "dt_" + newID(8)
	} else if !targetID.MatchString(id) {
		return nil, api.ErrBadRequest.With("bad body: id must be 1 to 64 letters, digits, '-' or '_'")
	}
	tenant = store.TenantOrDefault(tenant)
	if _, err := s.st.WebhookGet(ctx, &store.WebhookKey{Tenant: tenant, Kind: KindTarget, ID: id}); err == nil {
		return nil, api.ErrConflict.Withf("target %s exists", id)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if doc.ConsumerGroup == "" {
		doc.ConsumerGroup = "delivery-" + id
	}
	secret := ""
	if in.Sign {
		doc.SigningKeyID, secret = "dk_"+newID(8), newID(32)
		doc.SigningSecret = secret
	}
	t, err := s.save(ctx, tenant, id, doc)
	if err != nil {
		return nil, err
	}
	out := wire(t)
	out.SigningSecret = secret
	s.log.Info("delivery target created", "target", id, "queue", doc.Queue, "url", doc.URL)
	return &out, nil
}

// Update replaces a target's settings, keeping its secrets unless new ones
// are given; its consumer group stays.
func (s *Service) Update(ctx context.Context, tenant, id string, in *api.DeliveryTarget) (*api.DeliveryTarget, error) {
	old, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	doc, err := s.check(in, &old.doc)
	if err != nil {
		return nil, err
	}
	doc.ConsumerGroup = old.doc.ConsumerGroup
	if doc.Queue != old.doc.Queue {
		return nil, api.ErrBadRequest.With("bad body: a target's queue cannot change; create another target")
	}
	if !in.Sign {
		doc.SigningKeyID, doc.SigningSecret = "", ""
	}
	secret := ""
	if in.Sign && doc.SigningKeyID == "" {
		doc.SigningKeyID, secret = "dk_"+newID(8), newID(32)
		doc.SigningSecret = secret
	}
	t, err := s.save(ctx, store.TenantOrDefault(tenant), id, doc)
	if err != nil {
		return nil, err
	}
	out := wire(t)
	out.SigningSecret = secret
	return &out, nil
}

// SetPaused pauses or resumes a target's deliveries.
func (s *Service) SetPaused(ctx context.Context, tenant, id string, paused bool) (*api.DeliveryTarget, error) {
	t, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	t.doc.Paused = paused
	if t, err = s.save(ctx, store.TenantOrDefault(tenant), id, t.doc); err != nil {
		return nil, err
	}
	out := wire(t)
	return &out, nil
}

func (s *Service) save(ctx context.Context, tenant, id string, doc targetDoc) (*target, error) {
	sealed, err := s.seal(doc)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(sealed)
	now := s.cfg.Now()
	if err := s.st.WebhookPut(ctx, &store.WebhookPutParams{WebhookKey: store.WebhookKey{Tenant: tenant, Kind: KindTarget,
		ID: id}, Queue: doc.Queue, Doc: raw, Now: now}); err != nil {
		return nil, err
	}
	s.Reload()
	return s.load(ctx, tenant, id)
}

func (s *Service) load(ctx context.Context, tenant, id string) (*target, error) {
	d, err := s.st.WebhookGet(ctx, &store.WebhookKey{Tenant: store.TenantOrDefault(tenant), Kind: KindTarget, ID: id})
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.ErrNotFound.Withf("delivery target %s not found", id)
	} else if err != nil {
		return nil, err
	}
	t, err := s.decode(d)
	if err != nil {
		return nil, fmt.Errorf("delivery target %s: %w", id, err)
	}
	return t, nil
}

// Get returns a target without its secrets.
func (s *Service) Get(ctx context.Context, tenant, id string) (*api.DeliveryTarget, error) {
	t, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	out := wire(t)
	return &out, nil
}

// List returns a tenant's targets (of one queue when queue is not "").
func (s *Service) List(ctx context.Context, tenant, queue string) ([]api.DeliveryTarget, error) {
	docs, err := s.st.WebhookList(ctx, &store.WebhookListParams{Tenant: store.TenantOrDefault(tenant), Kind: KindTarget,
		Queue: queue})
	if err != nil {
		return nil, err
	}
	out := []api.DeliveryTarget{}
	for i := range docs {
		docs[i].Tenant = store.TenantOrDefault(tenant)
		if t, err := s.decode(&docs[i]); err == nil {
			out = append(out, wire(t))
		}
	}
	return out, nil
}

// Delete deletes a target; its consumer group stays on the queue.
func (s *Service) Delete(ctx context.Context, tenant, id string) error {
	err := s.st.WebhookDelete(ctx, &store.WebhookKey{Tenant: store.TenantOrDefault(tenant), Kind: KindTarget, ID: id})
	if errors.Is(err, store.ErrNotFound) {
		return api.ErrNotFound.Withf("delivery target %s not found", id)
	}
	s.Reload()
	return err
}
