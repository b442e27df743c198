package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Token is one static API token (an entry of QUEEN_API_TOKENS).
type Token struct {
	// Name is the token's subject, stamped on the messages it pushes as
	// producerSub: "api-token:N", N its 1-based position in the list. The
	// secret itself is never shown.
	Name string
	// Role is the one role the token carries.
	Role Role
	// Secret is the token as clients send it.
	Secret string
	// Tenant binds the token to a tenant (a canonical UUID); "" for none.
	Tenant string
}

func (t *Token) identity() Identity {
	return Identity{Method: "api-token", Roles: t.Role.bit(), Subject: t.Name, Tenant: t.Tenant, Username: t.Name}
}

// ParseTokens reads QUEEN_API_TOKENS: comma-separated entries
// token:role[:tenant], role one of admin, read-write, read-only and
// write-only, tenant a UUID. A token may itself contain ':' (the role and
// tenant are read from the right) but not ',' or spaces. Errors name the
// entry by position and never quote a token.
func ParseTokens(s string) ([]Token, error) {
	var out []Token
	var errs []error
	seen := map[string]int{}
	for i, entry := range strings.Split(s, ",") {
		n := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			errs = append(errs, fmt.Errorf("entry %d is empty", n))
			continue
		}
		t, err := parseToken(entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d: %w", n, err))
			continue
		}
		if first, dup := seen[t.Secret]; dup {
			errs = append(errs, fmt.Errorf("entry %d repeats the token of entry %d", n, first))
			continue
		}
		seen[t.Secret] = n
		t.Name = "api-token:" + strconv.Itoa(n)
		out = append(out, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

const tokenFormat = "want token:role[:tenant], role admin, read-write, read-only or write-only, tenant a UUID"

func parseToken(entry string) (Token, error) {
	if strings.ContainsAny(entry, " \t") {
		return Token{}, errors.New("a token cannot contain spaces")
	}
	rest, last, ok := cut(entry)
	if !ok {
		return Token{}, errors.New(tokenFormat)
	}
	if role, ok := ParseRole(last); ok {
		return tokenOf(rest, role, "")
	}
	// token:role:tenant
	rest, roleText, ok := cut(rest)
	role, okRole := ParseRole(roleText)
	if !ok || !okRole {
		return Token{}, errors.New(tokenFormat)
	}
	u, err := uuid.Parse(last)
	if err != nil {
		return Token{}, errors.New("the tenant is not a UUID")
	}
	return tokenOf(rest, role, u.String())
}

// cut splits s at its last ':'.
func cut(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

func tokenOf(secret string, role Role, tenant string) (Token, error) {
	if secret == "" {
		return Token{}, errors.New("the token is empty")
	}
	return Token{Secret: secret, Role: role, Tenant: tenant}, nil
}

// tokenSet compares presented tokens with the configured ones in constant
// time: it compares SHA-256 digests, all of the same length, with every
// configured digest, never stopping early. The time taken therefore depends
// neither on how long the configured tokens are, nor on how much of one a
// guess got right, nor on which entry matched.
type tokenSet struct {
	digests [][sha256.Size]byte
	tokens  []Token
}

func newTokenSet(tokens []Token) (*tokenSet, error) {
	s := &tokenSet{tokens: tokens, digests: make([][sha256.Size]byte, len(tokens))}
	for i, t := range tokens {
		if t.Secret == "" || t.Role.bit() == 0 {
			return nil, fmt.Errorf("QUEEN_API_TOKENS: entry %d has no token or no known role", i+1)
		}
		s.digests[i] = sha256.Sum256([]byte(t.Secret))
	}
	return s, nil
}

// constantTimeCompare is subtle.ConstantTimeCompare; a test counts calls.
var constantTimeCompare = subtle.ConstantTimeCompare

// match returns the configured token equal to presented.
func (s *tokenSet) match(presented string) (*Token, bool) {
	d := sha256.Sum256([]byte(presented))
	found := -1
	for i := range s.digests {
		eq := constantTimeCompare(d[:], s.digests[i][:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil, false
	}
	return &s.tokens[found], true
}
