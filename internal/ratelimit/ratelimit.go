// Package ratelimit is the per-tenant token bucket of the key/value, timer
// and ephemeral routes (and of no other route: the message plane never
// answers 429). Each tenant has a bucket of Burst tokens refilled at Rate
// per second; a request costs one token, or one per item of a batch capped
// at the burst. A request the bucket cannot pay is refused and debits
// nothing, and the refusal says how long until it could be paid.
//
// The buckets live in the broker's memory: with N brokers behind a load
// balancer a tenant gets up to N times its rate (docs/decisions.md).
package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Defaults of Config (QUEEN_TENANT_RATE_PER_SEC, QUEEN_TENANT_BURST).
const (
	DefaultBurst = 2000
	DefaultRate  = 1000
)

// Limit is the rate and burst of one tenant's bucket.
type Limit struct {
	Burst int     // tokens the bucket holds at most
	Rate  float64 // tokens added per second
}

// Config configures the buckets. Zero fields take the defaults.
type Config struct {
	// Default is every tenant's limit but those in Overrides.
	Default Limit
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Overrides are per-tenant limits, by tenant id
	// (QUEEN_TENANT_RATE_OVERRIDES).
	Overrides map[string]Limit
}

// Limiter holds the buckets of every tenant seen.
type Limiter struct {
	def       Limit
	now       func() time.Time
	overrides map[string]Limit

	mu      sync.Mutex
	buckets map[string]*bucket
	pruned  time.Time // when full buckets were last dropped
}

// pruneAbove is the number of buckets above which Take drops, at most once
// a second, the buckets that have refilled completely. A full bucket is what
// a tenant's first request finds anyway, so dropping one changes nothing a
// client can see, and tenants minted by the thousand (a tenant is any UUID a
// request names) cannot grow the map without bound.
const pruneAbove = 10000

// bucket is one tenant's bucket; the Limiter's mutex guards it.
type bucket struct {
	limit  Limit
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// New returns a limiter.
func New(cfg Config) *Limiter {
	if cfg.Default.Rate <= 0 {
		cfg.Default.Rate = DefaultRate
	}
	if cfg.Default.Burst <= 0 {
		cfg.Default.Burst = DefaultBurst
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{def: cfg.Default, now: cfg.Now, overrides: cfg.Overrides, buckets: make(map[string]*bucket)}
}

// Take debits cost tokens from tenant's bucket (a cost above the burst
// costs the burst, so that a large batch is slow, never impossible). When
// the bucket holds too few it debits nothing and returns false with the
// time until it would hold enough.
func (l *Limiter) Take(tenant string, cost int) (ok bool, retryAfter time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buckets) > pruneAbove && now.Sub(l.pruned) >= time.Second {
		l.prune(now)
	}
	b := l.buckets[tenant]
	if b == nil {
		lim, found := l.overrides[tenant]
		if !found {
			lim = l.def
		}
		b = &bucket{limit: lim, tokens: float64(lim.Burst), at: now}
		l.buckets[tenant] = b
	}
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = math.Min(float64(b.limit.Burst), b.tokens+elapsed.Seconds()*b.limit.Rate)
		b.at = now
	}
	need := float64(min(max(cost, 1), b.limit.Burst))
	if b.tokens >= need {
		b.tokens -= need
		return true, 0
	}
	deficit := need - b.tokens
	return false, time.Duration(deficit / b.limit.Rate * float64(time.Second))
}

// prune drops the buckets that are full at now. l.mu is held.
func (l *Limiter) prune(now time.Time) {
	l.pruned = now
	for tenant, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*b.limit.Rate >= float64(b.limit.Burst) {
			delete(l.buckets, tenant)
		}
	}
}

// RetryAfterSeconds is the Retry-After of a refusal: whole seconds rounded
// up, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// ParseOverrides reads QUEEN_TENANT_RATE_OVERRIDES:
// "uuid=rate:burst,uuid=rate:burst" (spaces allowed around items).
func ParseOverrides(s string) (map[string]Limit, error) {
	out := make(map[string]Limit)
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		tenant, spec, ok := strings.Cut(item, "=")
		rateText, burstText, ok2 := strings.Cut(spec, ":")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%q: want tenant=rate:burst", item)
		}
		id, err := uuid.Parse(strings.TrimSpace(tenant))
		if err != nil {
			return nil, fmt.Errorf("%q: the tenant must be a UUID", item)
		}
		rate, err := strconv.ParseFloat(strings.TrimSpace(rateText), 64)
		if err != nil || rate <= 0 || math.IsInf(rate, 0) {
			return nil, fmt.Errorf("%q: the rate must be a positive number", item)
		}
		burst, err := strconv.Atoi(strings.TrimSpace(burstText))
		if err != nil || burst < 1 {
			return nil, fmt.Errorf("%q: the burst must be a positive integer", item)
		}
		out[id.String()] = Limit{Rate: rate, Burst: burst}
	}
	return out, nil
}
