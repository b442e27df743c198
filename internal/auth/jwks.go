package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/queen-go/queen/internal/service"
)

// maxJWKSBytes bounds a JWKS document; real ones are a few kilobytes.
const maxJWKSBytes = 1 << 20

// jwks is a cache of the keys a JWKS endpoint serves, by kid.
//
// Reads never wait and never lock: a token whose kid is cached is checked
// against a key parsed when it was fetched. The cache is refreshed every
// refresh interval; a failed fetch keeps the keys it has (a provider that is
// down or slow does not log anybody out) and is retried sooner, backing off
// from one second up to the refresh interval. A token naming a kid the
// cache lacks causes one fetch, shared by every request that needs it and
// bounded by the fetch timeout, and at most one per refetchMin: when the
// provider is slow a request with a new kid waits at most the timeout, and
// within refetchMin of the last such fetch it is answered 401 Unknown key ID
// at once.
type jwks struct {
	client     *http.Client
	log        *slog.Logger
	now        func() time.Time
	refetchMin time.Duration
	refresh    time.Duration
	timeout    time.Duration
	url        string

	keys atomic.Pointer[map[string]jwk] // nil until the first fetch succeeds

	mu          sync.Mutex
	inflight    chan struct{} // closed when the fetch in progress ends; nil when none runs
	lastErr     error         // the last fetch's failure; nil after a success
	lastRefetch time.Time     // start of the last fetch an unknown kid caused
}

// maxJWKSRedirects is how many redirects a JWKS fetch follows.
const maxJWKSRedirects = 3

// jwksRedirect is the JWKS client's redirect policy: a redirect is followed
// only to the same host and never from https down to http, so that whoever
// answers the configured URL cannot send the broker to keys served
// elsewhere, or over a connection a man in the middle can rewrite.
func jwksRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) > maxJWKSRedirects:
		return fmt.Errorf("JWT_JWKS_URL: more than %d redirects", maxJWKSRedirects)
	case !strings.EqualFold(req.URL.Host, first.Host):
		return fmt.Errorf("JWT_JWKS_URL: redirect to another host (%s) refused", req.URL.Host)
	case first.Scheme == "https" && req.URL.Scheme != "https":
		return errors.New("JWT_JWKS_URL: redirect from https to http refused")
	}
	return nil
}

// jwk is one cached key.
type jwk struct {
	alg string // the JWK's alg, "" if it names none
	key any    // *rsa.PublicKey or ed25519.PublicKey
}

func newJWKS(cfg Config) (*jwks, error) {
	u, err := url.Parse(cfg.JWKSURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("JWT_JWKS_URL: want an http or https URL")
	}
	j := &jwks{
		client:     cfg.HTTPClient,
		log:        cfg.Logger,
		now:        cfg.Now,
		refetchMin: cmp.Or(cfg.JWKSRefetchMin, DefaultJWKSRefetchMin),
		refresh:    cmp.Or(cfg.JWKSRefresh, DefaultJWKSRefresh),
		timeout:    cmp.Or(cfg.JWKSTimeout, DefaultJWKSTimeout),
		url:        cfg.JWKSURL,
	}
	if j.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		j.client = &http.Client{Transport: tr, CheckRedirect: jwksRedirect}
	}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	j.log = j.log.With("component", "jwks")
	if j.now == nil {
		j.now = time.Now
	}
	return j, nil
}

// lookup returns the key of kid, fetching the JWKS once if it is unknown.
func (j *jwks) lookup(ctx context.Context, kid string) (jwk, error) {
	if k, ok := j.cached(kid); ok {
		return k, nil
	}
	if err := j.refetch(ctx); err != nil {
		return jwk{}, ErrUnknownKID.with(fmt.Errorf("kid %q: %w", kid, err))
	}
	if k, ok := j.cached(kid); ok {
		return k, nil
	}
	return jwk{}, ErrUnknownKID.with(fmt.Errorf("kid %q is not in the JWKS", kid))
}

func (j *jwks) cached(kid string) (jwk, bool) {
	if m := j.keys.Load(); m != nil {
		k, ok := (*m)[kid]
		return k, ok
	}
	return jwk{}, false
}

var errRefetchTooSoon = errors.New("the JWKS was fetched for an unknown kid moments ago")

// refetch fetches the JWKS for an unknown kid: it joins a fetch in
// progress, or starts one unless one was started within refetchMin.
func (j *jwks) refetch(ctx context.Context) error {
	j.mu.Lock()
	done := j.inflight
	if done == nil {
		now := j.now()
		if j.refetchMin > 0 && !j.lastRefetch.IsZero() && now.Sub(j.lastRefetch) < j.refetchMin {
			j.mu.Unlock()
			return errRefetchTooSoon
		}
		j.lastRefetch = now
		done = j.startLocked()
	}
	j.mu.Unlock()
	return j.wait(ctx, done)
}

// fetchShared fetches the JWKS, or waits for the fetch in progress.
func (j *jwks) fetchShared(ctx context.Context) error {
	j.mu.Lock()
	done := j.inflight
	if done == nil {
		done = j.startLocked()
	}
	j.mu.Unlock()
	return j.wait(ctx, done)
}

// startLocked starts a fetch. The fetch is not tied to the request that
// caused it, so a client that goes away does not cancel it for the others
// waiting; its own timeout bounds it. j.mu must be held.
func (j *jwks) startLocked() chan struct{} {
	done := make(chan struct{})
	j.inflight = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		var err error
		// A panic fails this fetch (and the requests waiting for it), not
		// the broker; the next one is tried as after any failed fetch.
		if service.Protect(j.log, "jwks-fetch", func() { err = j.fetch(ctx) }) {
			err = errors.New("JWKS fetch failed (a panic; the broker's log has its stack)")
		}
		cancel()
		j.mu.Lock()
		j.inflight, j.lastErr = nil, err
		j.mu.Unlock()
		close(done)
	}()
	return done
}

func (j *jwks) wait(ctx context.Context, done chan struct{}) error {
	select {
	case <-done:
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.lastErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetch downloads and parses the JWKS and replaces the cache. Keys this
// broker cannot use (not RSA of 2048 bits or more, not Ed25519, or meant for
// encryption) are left out.
func (j *jwks) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch JWKS: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("read JWKS: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("JWKS larger than %d bytes", maxJWKSBytes)
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("decode JWKS: %w", err)
	}
	keys := make(map[string]jwk, len(set.Keys))
	var skipped int
	for _, m := range set.Keys {
		k, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil || (m.USE != "" && m.USE != jwkset.UseSig) {
			skipped++
			continue
		}
		key := k.Key()
		if checkKey(key) != nil {
			skipped++
			continue
		}
		keys[m.KID] = jwk{alg: string(m.ALG), key: key}
	}
	if len(keys) == 1 {
		// A token without a kid may use the only key there is.
		for _, k := range keys {
			keys[""] = k
		}
	}
	if skipped > 0 {
		j.log.WarnContext(ctx, "JWKS keys left out", "skipped", skipped, "kept", len(keys))
	}
	j.keys.Store(&keys)
	return nil
}

// run refreshes the cache until ctx ends: at once, then every refresh
// interval, sooner after a failure.
func (j *jwks) run(ctx context.Context) {
	const firstRetry = time.Second
	retry := firstRetry
	for {
		wait := j.refresh
		if err := j.fetchShared(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			j.log.WarnContext(ctx, "JWKS refresh failed; keeping the cached keys", "url", j.url, "retry", retry, "err", err)
			wait = min(retry, j.refresh)
			retry = min(2*retry, j.refresh)
		} else {
			retry = firstRetry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
