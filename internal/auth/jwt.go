package auth

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// jwtVerifier verifies JWTs. Everything it needs per token is built once:
// the parser, the allowed algorithms, the parsed static key, the role-name
// table; JWKS keys are parsed once per fetch.
type jwtVerifier struct {
	allowed     map[string]family
	requireExp  bool
	jwks        *jwks // nil without JWT_JWKS_URL
	parser      *jwt.Parser
	roleClaim   string
	roleNames   map[string]Role
	rolesClaim  string
	secret      []byte // nil without JWT_SECRET
	static      any    // *rsa.PublicKey or ed25519.PublicKey; nil without JWT_PUBLIC_KEY
	tenantClaim string
}

func newJWTVerifier(cfg Config) (*jwtVerifier, error) {
	v := &jwtVerifier{
		roleClaim:   cmp.Or(cfg.RoleClaim, DefaultRoleClaim),
		rolesClaim:  cmp.Or(cfg.RolesClaim, DefaultRolesClaim),
		tenantClaim: cmp.Or(cfg.TenantClaim, DefaultTenantClaim),
		roleNames:   map[string]Role{},
		allowed:     map[string]family{},
		requireExp:  cfg.RequireExp,
	}
	for _, r := range allRoles {
		name := string(r)
		if n := cfg.RoleNames[r]; n != "" {
			name = n
		}
		if other, dup := v.roleNames[name]; dup {
			return nil, fmt.Errorf("JWT_ROLE_*: roles %s and %s are both named %q", other, r, name)
		}
		v.roleNames[name] = r
	}
	if cfg.Secret != "" {
		v.secret = []byte(cfg.Secret)
	}
	if cfg.PublicKey != "" {
		k, err := ParsePublicKey(cfg.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("JWT_PUBLIC_KEY: %w", err)
		}
		v.static = k
	}
	if cfg.JWKSURL != "" {
		j, err := newJWKS(cfg)
		if err != nil {
			return nil, err
		}
		v.jwks = j
	}

	alg := cmp.Or(cfg.Algorithm, DefaultAlgorithm)
	hasPublic := v.static != nil || v.jwks != nil
	if alg == "auto" {
		for a, f := range algorithms {
			if (f == familyHMAC && v.secret != nil) || (f != familyHMAC && hasPublic) {
				v.allowed[a] = f
			}
		}
		if len(v.allowed) == 0 {
			return nil, errors.New("JWT_ALGORITHM=auto: set JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL")
		}
	} else {
		f, ok := algorithms[alg]
		switch {
		case !ok:
			return nil, fmt.Errorf("JWT_ALGORITHM=%q: want HS256, HS384, HS512, RS256, RS384, RS512, EdDSA or auto", alg)
		case f == familyHMAC && v.secret == nil:
			return nil, fmt.Errorf("JWT_ALGORITHM=%s needs JWT_SECRET", alg)
		case f != familyHMAC && !hasPublic:
			return nil, fmt.Errorf("JWT_ALGORITHM=%s needs JWT_PUBLIC_KEY or JWT_JWKS_URL", alg)
		case f != familyHMAC && v.static != nil && !f.fits(v.static):
			return nil, fmt.Errorf("JWT_ALGORITHM=%s does not match the JWT_PUBLIC_KEY's kind of key", alg)
		}
		v.allowed[alg] = f
	}

	opts := []jwt.ParserOption{jwt.WithIssuedAt()}
	if skew := cmp.Or(cfg.ClockSkew, DefaultClockSkew); skew > 0 {
		opts = append(opts, jwt.WithLeeway(skew))
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if len(cfg.Audience) > 0 {
		opts = append(opts, jwt.WithAudience(cfg.Audience...))
	}
	if cfg.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(cfg.Now))
	}
	if cfg.RequireExp {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// verify checks token and returns its identity.
func (v *jwtVerifier) verify(ctx context.Context, token string) (Identity, error) {
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) { return v.key(ctx, t) })
	if err != nil {
		if _, hasExp := claims["exp"]; v.requireExp && !hasExp && errors.Is(err, jwt.ErrTokenRequiredClaimMissing) {
			return Identity{}, ErrExpired.with(fmt.Errorf("no exp, and JWT_REQUIRE_EXP is on: %w", err))
		}
		return Identity{}, classify(token, claims, err)
	}
	id := Identity{Method: "jwt"}
	id.Subject, _ = claims["sub"].(string)
	if s, ok := claims[v.roleClaim].(string); ok {
		id.Roles |= v.role(s)
	}
	if list, ok := claims[v.rolesClaim].([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok {
				id.Roles |= v.role(s)
			}
		}
	}
	if raw, ok := claims[v.tenantClaim]; ok {
		// A claim present but null is invalid, not absent: an IdP that
		// writes null for unassigned users must not give them every
		// tenant through the x-queen-tenant header.
		s, _ := raw.(string)
		if u, err := uuid.Parse(s); err == nil {
			id.Tenant = u.String()
		} else {
			id.TenantInvalid = true
		}
	}
	for _, c := range [...]string{"preferred_username", "username"} {
		if s, ok := claims[c].(string); ok && s != "" {
			id.Username = s
			break
		}
	}
	if id.Username == "" {
		id.Username = id.Subject
	}
	return id, nil
}

// role maps a role name from a token to its role; unknown names give none.
func (v *jwtVerifier) role(name string) RoleSet {
	return v.roleNames[name].bit()
}

// key chooses the key that verifies t. The algorithm is checked first, and
// decides where the key comes from: HMAC tokens are checked with the secret
// only, never with a public key (the algorithm-confusion attack signs an
// HS256 token with the RSA public key as the secret); RSA and EdDSA tokens
// with the static key or the JWKS, and the key's kind must match.
func (v *jwtVerifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	f, ok := v.allowed[alg]
	if !ok {
		return nil, ErrAlgorithm.with(fmt.Errorf("alg %q", alg))
	}
	if f == familyHMAC {
		return v.secret, nil
	}
	kid, hasKID := t.Header["kid"].(string)
	key, keyAlg := v.static, ""
	if v.jwks != nil && (hasKID || v.static == nil) {
		k, err := v.jwks.lookup(ctx, kid)
		if err != nil {
			return nil, err
		}
		key, keyAlg = k.key, k.alg
	}
	if (keyAlg != "" && keyAlg != alg) || !f.fits(key) {
		return nil, ErrAlgorithm.with(fmt.Errorf("alg %q with a key for %q (%T)", alg, keyAlg, key))
	}
	return key, nil
}

// classify maps a parse failure to its fixed answer, keeping the library's
// text as the detail.
func classify(token string, claims jwt.MapClaims, err error) error {
	var own *Error
	switch {
	case errors.As(err, &own):
		return own.with(err)
	case errors.Is(err, jwt.ErrTokenMalformed):
		if badSignatureSegment(token) {
			return ErrSignature.with(err)
		}
		return ErrBadHeader.with(err)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		// alg names no algorithm the library has, or is missing.
		return ErrAlgorithm.with(err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrSignature.with(err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired.with(err)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return ErrNotYetValid.with(err)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return ErrIssuedInFuture.with(err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// Only iss and aud are required, and only when configured.
		if _, ok := claims["iss"]; !ok {
			return ErrIssuer.with(err)
		}
		return ErrAudience.with(err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ErrIssuer.with(err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ErrAudience.with(err)
	}
	// A registered claim of the wrong type (exp as a string, …).
	return ErrBadHeader.with(err)
}

// badSignatureSegment reports whether token has a header and claims that
// decode and a signature that does not: a truncated or mangled signature is
// a bad signature, not a bad header.
func badSignatureSegment(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	dec := base64.RawURLEncoding
	for _, p := range parts[:2] {
		if _, err := dec.DecodeString(p); err != nil {
			return false
		}
	}
	_, err := dec.DecodeString(parts[2])
	return err != nil
}
