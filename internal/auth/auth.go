// Package auth decides who a request is. It verifies bearer tokens, JWTs
// (signed with an HMAC secret, a static public key, or keys served by a JWKS
// endpoint) and static API tokens, and turns a valid one into an Identity: a
// subject, a set of roles and a tenant. It knows nothing of routes: package
// httpapi decides what each route needs and asks Verify who is calling.
//
// JWT parsing and signature checks are github.com/golang-jwt/jwt/v5's, and
// JWK decoding is github.com/MicahParks/jwkset's; this package only chooses
// the key, caches keys, and maps every failure to one of Queen's fixed 401
// texts.
package auth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/service"
)

// Role is a role a token carries, by its canonical name. A deployment may
// rename the roles its tokens carry (JWT_ROLE_*); Verify maps them back.
type Role string

// The four roles.
const (
	RoleAdmin     Role = "admin"
	RoleReadOnly  Role = "read-only"
	RoleReadWrite Role = "read-write"
	RoleWriteOnly Role = "write-only"
)

// allRoles is every role, in the order RoleSet.Roles lists them.
var allRoles = [...]Role{RoleAdmin, RoleReadWrite, RoleReadOnly, RoleWriteOnly}

// ParseRole returns the role named s (a canonical name).
func ParseRole(s string) (Role, bool) {
	for _, r := range allRoles {
		if string(r) == s {
			return r, true
		}
	}
	return "", false
}

// RoleSet is a set of roles, one bit each, so that checking a route's level
// against a token costs an AND.
type RoleSet uint8

// SetOf returns the set of roles; unknown roles are left out.
func SetOf(roles ...Role) RoleSet {
	var s RoleSet
	for _, r := range roles {
		s |= r.bit()
	}
	return s
}

func (r Role) bit() RoleSet {
	for i, have := range allRoles {
		if have == r {
			return 1 << i
		}
	}
	return 0
}

// Has reports whether r is in the set.
func (s RoleSet) Has(r Role) bool { return s&r.bit() != 0 }

// Roles lists the set's roles: admin, read-write, read-only, write-only.
func (s RoleSet) Roles() []Role {
	out := []Role{}
	for _, r := range allRoles {
		if s.Has(r) {
			out = append(out, r)
		}
	}
	return out
}

// Identity is who a verified token says the caller is.
type Identity struct {
	// Method is how the caller proved it: "jwt" or "api-token".
	Method string
	// Roles are the token's roles that this broker knows; others are
	// dropped.
	Roles RoleSet
	// Subject is the JWT's sub, or the API token's name (api-token:N); it is
	// stamped on pushed messages as producerSub.
	Subject string
	// Tenant is the tenant the token is bound to, as a canonical UUID; ""
	// when it names none.
	Tenant string
	// TenantInvalid is set when the token has a tenant claim that is not a
	// UUID string; Tenant is then "".
	TenantInvalid bool
	// Username is the JWT's preferred_username or username claim, else the
	// subject.
	Username string
}

// Error is a failed authentication. Its text is one of Queen's fixed 401
// messages; the detail of what failed is in the error that wraps it, for
// the log only.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Message returns the fixed text a client is told.
func (e *Error) Message() string { return e.msg }

// The 401 answers, with Queen's exact texts.
var (
	ErrMissing        = &Error{"Authentication required"}
	ErrBadHeader      = &Error{"Bad token header"}
	ErrSignature      = &Error{"Invalid token signature"}
	ErrExpired        = &Error{"Token has expired"}
	ErrNotYetValid    = &Error{"Token not yet valid"}
	ErrIssuedInFuture = &Error{"Token issued in the future"}
	ErrIssuer         = &Error{"Invalid token issuer"}
	ErrAudience       = &Error{"Invalid token audience"}
	ErrAlgorithm      = &Error{"Unsupported token algorithm"}
	ErrUnknownKID     = &Error{"Unknown key ID"}
	// ErrAPIToken answers a token that is no configured API token when JWT
	// is off (with JWT on, the JWT's own failure is answered).
	ErrAPIToken = &Error{"Invalid API token"}
)

// detailed wraps an Error with what actually failed.
type detailed struct {
	base   *Error
	detail error
}

func (d *detailed) Error() string { return d.base.msg + ": " + d.detail.Error() }
func (d *detailed) Unwrap() error { return d.base }

// with returns e carrying detail for the log.
func (e *Error) with(detail error) error {
	if detail == nil {
		return e
	}
	return &detailed{e, detail}
}

// maxTokenBytes bounds a token; a longer one is refused unparsed. JWTs with
// many claims reach a few kilobytes; 16 KiB leaves room.
const maxTokenBytes = 16 << 10

// Defaults of Config fields left zero.
const (
	DefaultAlgorithm      = "HS256"
	DefaultClockSkew      = 30 * time.Second
	DefaultJWKSRefresh    = time.Hour
	DefaultJWKSTimeout    = 5 * time.Second
	DefaultJWKSRefetchMin = 10 * time.Second
	DefaultRoleClaim      = "role"
	DefaultRolesClaim     = "roles"
	DefaultTenantClaim    = "tenant"
)

// DefaultSkipPaths is JWT_SKIP_PATHS's default: Queen's, and the OpenAPI
// document, which Queen does not have.
var DefaultSkipPaths = []string{"/health", "/metrics/prometheus", "/metrics", "/", "/api/v1/openapi.json"}

// Config configures a Verifier. The zero value turns authentication off.
type Config struct {
	// Tokens are the static API tokens (QUEEN_API_TOKENS), accepted with
	// or without JWT.
	Tokens []Token

	// JWTEnabled turns JWT verification on (JWT_ENABLED).
	JWTEnabled bool
	// Algorithm is the one algorithm tokens may use (JWT_ALGORITHM): HS256,
	// HS384, HS512, RS256, RS384, RS512, EdDSA, or "auto" for any of those
	// the configured keys can verify. "" means DefaultAlgorithm.
	Algorithm string
	// Secret is the HMAC secret (JWT_SECRET).
	Secret string
	// PublicKey is a PEM public key, RSA or Ed25519 (JWT_PUBLIC_KEY).
	PublicKey string
	// JWKSURL is a JWKS endpoint (JWT_JWKS_URL). Its keys are cached by
	// kid, refreshed every JWKSRefresh, and fetched again once when a token
	// names a kid the cache lacks (at most once per JWKSRefetchMin).
	JWKSURL string
	// JWKSRefresh is the refresh interval; 0 means DefaultJWKSRefresh.
	JWKSRefresh time.Duration
	// JWKSTimeout bounds one fetch; 0 means DefaultJWKSTimeout.
	JWKSTimeout time.Duration
	// JWKSRefetchMin is the least time between two fetches caused by
	// unknown kids; 0 means DefaultJWKSRefetchMin, negative means none.
	JWKSRefetchMin time.Duration
	// Issuer, when set, must be the token's iss (JWT_ISSUER).
	Issuer string
	// Audience, when set, lists the audiences a token's aud must name one
	// of (JWT_AUDIENCE, comma-separated).
	Audience []string
	// ClockSkew is the leeway for exp, nbf and iat (JWT_CLOCK_SKEW); 0
	// means DefaultClockSkew, negative means none.
	ClockSkew time.Duration
	// RoleClaim names the single-role claim (JWT_ROLES_CLAIM); "" means
	// DefaultRoleClaim.
	RoleClaim string
	// RolesClaim names the role-array claim (JWT_ROLES_ARRAY_CLAIM); ""
	// means DefaultRolesClaim.
	RolesClaim string
	// RoleNames renames the roles tokens carry (JWT_ROLE_*); a role left
	// out keeps its canonical name.
	RoleNames map[Role]string
	// TenantClaim names the tenant claim (JWT_TENANT_CLAIM); "" means
	// DefaultTenantClaim.
	TenantClaim string
	// RequireExp refuses tokens without exp (JWT_REQUIRE_EXP) with the
	// 401 of an expired token: such a token would never expire.
	RequireExp bool

	// SkipPaths are paths served without authentication (JWT_SKIP_PATHS):
	// an entry matches a path exactly, or as a prefix when it ends in "/"
	// and is longer than "/". nil means DefaultSkipPaths.
	SkipPaths []string

	// HTTPClient fetches the JWKS; nil means a client without cookies that
	// honours the proxy environment variables.
	HTTPClient *http.Client
	// Logger receives the JWKS cache's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock tokens are checked against; nil means time.Now.
	Now func() time.Time
}

// Enabled reports whether the configuration asks for authentication.
func (c *Config) Enabled() bool { return c.JWTEnabled || len(c.Tokens) > 0 }

// Verifier verifies bearer tokens. It is safe for concurrent use.
type Verifier struct {
	jwt    *jwtVerifier // nil without JWT
	tokens *tokenSet    // nil without API tokens
	skip   []string
}

// New builds a Verifier. Its errors name the setting at fault. A Verifier
// of a configuration that is not Enabled accepts nothing; callers check
// Enabled and leave routes open instead.
func New(cfg Config) (*Verifier, error) {
	v := &Verifier{skip: cfg.SkipPaths}
	if v.skip == nil {
		v.skip = DefaultSkipPaths
	}
	for _, p := range v.skip {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("JWT_SKIP_PATHS: %q is not a path", p)
		}
	}
	if len(cfg.Tokens) > 0 {
		ts, err := newTokenSet(cfg.Tokens)
		if err != nil {
			return nil, err
		}
		v.tokens = ts
	}
	if cfg.JWTEnabled {
		j, err := newJWTVerifier(cfg)
		if err != nil {
			return nil, err
		}
		v.jwt = j
	}
	return v, nil
}

// Enabled reports whether any token is required at all.
func (v *Verifier) Enabled() bool { return v != nil && (v.jwt != nil || v.tokens != nil) }

// JWT reports whether JWT verification is on.
func (v *Verifier) JWT() bool { return v != nil && v.jwt != nil }

// Skips reports whether path is served without authentication
// (JWT_SKIP_PATHS).
func (v *Verifier) Skips(path string) bool {
	for _, p := range v.skip {
		if path == p || (len(p) > 1 && p[len(p)-1] == '/' && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// Verify returns who token says the caller is, or an error wrapping one of
// the *Error values. ctx bounds a JWKS fetch for an unknown kid.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	switch {
	case token == "":
		return Identity{}, ErrMissing
	case len(token) > maxTokenBytes:
		return Identity{}, ErrBadHeader.with(fmt.Errorf("token of %d bytes, more than %d", len(token), maxTokenBytes))
	}
	if v.tokens != nil {
		if t, ok := v.tokens.match(token); ok {
			return t.identity(), nil
		}
	}
	if v.jwt == nil {
		return Identity{}, ErrAPIToken
	}
	return v.jwt.verify(ctx, token)
}

// Services returns the background work the verifier needs: the JWKS
// refresh, when a JWKS URL is set. Without it started, keys are fetched
// when the first token needs them.
func (v *Verifier) Services() []service.Service {
	if v == nil || v.jwt == nil || v.jwt.jwks == nil {
		return nil
	}
	return []service.Service{service.NewFunc("jwks-refresh", v.jwt.jwks.run)}
}
