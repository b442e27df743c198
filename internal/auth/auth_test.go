package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

var (
	rsaOnce sync.Once
	rsaKeys [2]*rsa.PrivateKey
)

// rsaKey returns one of two RSA keys made once per test binary.
func rsaKey(t testing.TB, i int) *rsa.PrivateKey {
	t.Helper()
	rsaOnce.Do(func() {
		for i := range rsaKeys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			rsaKeys[i] = k
		}
	})
	return rsaKeys[i]
}

func pemOf(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func sign(t testing.TB, m jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustNew(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantErr fails unless err is the fixed answer want.
func wantErr(t testing.TB, what string, err error, want *Error) {
	t.Helper()
	var got *Error
	if !errors.As(err, &got) || got != want {
		t.Fatalf("%s: error %v, want %q", what, err, want.Message())
	}
}

func TestVerifyHMAC(t *testing.T) {
	now := time.Now()
	v := mustNew(t, Config{JWTEnabled: true, Secret: "s3cret", Issuer: "iss", Audience: []string{"queen", "other"}})
	claims := func(kv ...any) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "alice", "iss": "iss", "aud": "queen", "exp": now.Add(time.Hour).Unix(), "role": "read-write"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
			} else {
				c[kv[i].(string)] = kv[i+1]
			}
		}
		return c
	}
	hs := func(c jwt.MapClaims) string { return sign(t, jwt.SigningMethodHS256, []byte("s3cret"), "", c) }
	ok := hs(claims())
	id, err := v.Verify(context.Background(), ok)
	if err != nil || id.Subject != "alice" || id.Roles != SetOf(RoleReadWrite) || id.Method != "jwt" || id.Username != "alice" {
		t.Fatalf("valid token: %+v, %v", id, err)
	}
	for _, tc := range []struct {
		name  string
		token string
		want  *Error
	}{
		{"empty", "", ErrMissing},
		{"one segment", "abc", ErrBadHeader},
		{"four segments", ok + ".x", ErrBadHeader},
		{"too long", strings.Repeat("a", maxTokenBytes+1), ErrBadHeader},
		{"wrong secret", sign(t, jwt.SigningMethodHS256, []byte("other"), "", claims()), ErrSignature},
		{"HS384 when HS256 is set", sign(t, jwt.SigningMethodHS384, []byte("s3cret"), "", claims()), ErrAlgorithm},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims()), ErrAlgorithm},
		{"truncated signature", ok[:len(ok)-2], ErrSignature},
		{"expired", hs(claims("exp", now.Add(-time.Hour).Unix())), ErrExpired},
		{"not yet valid", hs(claims("nbf", now.Add(time.Hour).Unix())), ErrNotYetValid},
		{"issued in the future", hs(claims("iat", now.Add(time.Hour).Unix())), ErrIssuedInFuture},
		{"wrong issuer", hs(claims("iss", "evil")), ErrIssuer},
		{"no issuer", hs(claims("iss", nil)), ErrIssuer},
		{"wrong audience", hs(claims("aud", "nope")), ErrAudience},
		{"exp is text", hs(claims("exp", "tomorrow")), ErrBadHeader},
	} {
		_, err := v.Verify(context.Background(), tc.token)
		wantErr(t, tc.name, err, tc.want)
	}
	// Within the clock skew.
	if _, err := v.Verify(context.Background(), hs(claims("exp", now.Add(-10*time.Second).Unix()))); err != nil {
		t.Errorf("expired 10 s ago, within 30 s of skew: %v", err)
	}
	if _, err := v.Verify(context.Background(), hs(claims("aud", []string{"x", "other"}))); err != nil {
		t.Errorf("aud array naming an accepted audience: %v", err)
	}
}

func TestRolesAndTenantClaims(t *testing.T) {
	v := mustNew(t, Config{JWTEnabled: true, Secret: "k", RoleNames: map[Role]string{RoleAdmin: "queen-admin"},
		TenantClaim: "org"})
	for _, tc := range []struct {
		claims jwt.MapClaims
		roles  RoleSet
		tenant string
		bad    bool
	}{
		{jwt.MapClaims{"role": "queen-admin"}, SetOf(RoleAdmin), "", false},
		{jwt.MapClaims{"role": "admin"}, 0, "", false}, // renamed: the canonical name is no longer admin
		{jwt.MapClaims{"role": 7}, 0, "", false},
		{jwt.MapClaims{"roles": []string{"root", "write-only", "read-only"}}, SetOf(RoleWriteOnly, RoleReadOnly), "", false},
		{jwt.MapClaims{"roles": "read-write"}, 0, "", false},
		{jwt.MapClaims{"roles": []any{1, true, nil}}, 0, "", false},
		{jwt.MapClaims{"role": "read-write", "roles": []string{"write-only"}}, SetOf(RoleReadWrite, RoleWriteOnly), "", false},
		{jwt.MapClaims{"org": "0192F0A0-AAAA-7000-8000-00000000000A"}, 0, "0192f0a0-aaaa-7000-8000-00000000000a", false},
		{jwt.MapClaims{"org": "acme"}, 0, "", true},
		{jwt.MapClaims{"org": 42}, 0, "", true},
	} {
		id, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodHS256, []byte("k"), "", tc.claims))
		if err != nil || id.Roles != tc.roles || id.Tenant != tc.tenant || id.TenantInvalid != tc.bad {
			t.Errorf("claims %v: %+v, %v; want roles %v tenant %q invalid %v", tc.claims, id, err, tc.roles, tc.tenant, tc.bad)
		}
	}
}

func TestStaticPublicKeys(t *testing.T) {
	rk := rsaKey(t, 0)
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	edPub := edPriv.Public()
	claims := jwt.MapClaims{"sub": "svc", "roles": []string{"admin"}}

	rs := mustNew(t, Config{JWTEnabled: true, Algorithm: "RS256", PublicKey: pemOf(t, &rk.PublicKey)})
	if _, err := rs.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, rk, "", claims)); err != nil {
		t.Fatalf("RS256: %v", err)
	}
	// Algorithm confusion: an HS256 token whose HMAC key is the RSA public
	// key's PEM, as an attacker who knows the public key would sign it.
	confused := sign(t, jwt.SigningMethodHS256, []byte(pemOf(t, &rk.PublicKey)), "", claims)
	_, err := rs.Verify(context.Background(), confused)
	wantErr(t, "HS256 signed with the public key", err, ErrAlgorithm)
	_, err = rs.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, rsaKey(t, 1), "", claims))
	wantErr(t, "RS256 signed by another key", err, ErrSignature)

	auto := mustNew(t, Config{JWTEnabled: true, Algorithm: "auto", PublicKey: pemOf(t, edPub)})
	if _, err := auto.Verify(context.Background(), sign(t, jwt.SigningMethodEdDSA, edPriv, "", claims)); err != nil {
		t.Fatalf("auto with an Ed25519 key, EdDSA token: %v", err)
	}
	_, err = auto.Verify(context.Background(), confused)
	wantErr(t, "auto without a secret, HS256 token", err, ErrAlgorithm)
	_, err = auto.Verify(context.Background(), sign(t, jwt.SigningMethodRS256, rk, "", claims))
	wantErr(t, "auto with an Ed25519 key, RS256 token", err, ErrAlgorithm)

	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{JWTEnabled: true}, "JWT_ALGORITHM=HS256 needs JWT_SECRET"},
		{Config{JWTEnabled: true, Algorithm: "RS256", Secret: "x"}, "JWT_ALGORITHM=RS256 needs JWT_PUBLIC_KEY or JWT_JWKS_URL"},
		{Config{JWTEnabled: true, Algorithm: "EdDSA", PublicKey: pemOf(t, &rk.PublicKey)}, "does not match"},
		{Config{JWTEnabled: true, Algorithm: "auto"}, "JWT_ALGORITHM=auto"},
		{Config{JWTEnabled: true, Algorithm: "RS256", PublicKey: "nope"}, "JWT_PUBLIC_KEY: no PEM block"},
		{Config{JWTEnabled: true, Algorithm: "RS256", JWKSURL: "ftp://x"}, "JWT_JWKS_URL"},
		{Config{JWTEnabled: true, Secret: "x", RoleNames: map[Role]string{RoleAdmin: "read-only"}}, "both named"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSkipPaths(t *testing.T) {
	v := mustNew(t, Config{Tokens: []Token{{Secret: "t", Role: RoleAdmin}}, SkipPaths: []string{"/", "/health", "/public/"}})
	for path, want := range map[string]bool{
		"/": true, "/health": true, "/healthz": false, "/health/x": false, "/public/": true, "/public/a/b": true,
		"/public": false, "/api/v1/push": false,
	} {
		if got := v.Skips(path); got != want {
			t.Errorf("Skips(%q) = %v, want %v", path, got, want)
		}
	}
	if !mustNew(t, Config{}).Skips("/metrics") {
		t.Error("the default skip paths leave out /metrics")
	}
}

func TestParseTokens(t *testing.T) {
	toks, err := ParseTokens(" abc:admin , d:e:f:write-only:0192F0A0-AAAA-7000-8000-00000000000A,x:read-only")
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{
		{Name: "api-token:1", Secret: "abc", Role: RoleAdmin},
		{Name: "api-token:2", Secret: "d:e:f", Role: RoleWriteOnly, Tenant: "0192f0a0-aaaa-7000-8000-00000000000a"},
		{Name: "api-token:3", Secret: "x", Role: RoleReadOnly},
	}
	for i := range want {
		if toks[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i+1, toks[i], want[i])
		}
	}
	_, err = ParseTokens("s3cretA:boss,,s3cretB,s3cretC:admin:acme,s3cretD:admin,s3cretD:read-only, :admin")
	for _, want := range []string{"entry 1: want token:role", "entry 2 is empty", "entry 3: want", "entry 4: the tenant is not a UUID",
		"entry 6 repeats the token of entry 5", "entry 7: the token is empty"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error quotes a token: %v", err)
	}
}

// TestTokenComparison pins how API tokens are compared: a presented token
// is hashed to a fixed-length digest and compared with every configured
// digest, never stopping at a match or a mismatch, so neither the
// position of the match nor the length or prefix of a configured token
// changes the work done. Only an exact token matches.
func TestTokenComparison(t *testing.T) {
	secrets := []string{"short", "a-much-longer-token-of-forty-two-characters", "third-token"}
	var tokens []Token
	for i, s := range secrets {
		tokens = append(tokens, Token{Name: "api-token:" + string(rune('1'+i)), Secret: s, Role: RoleReadWrite})
	}
	set, err := newTokenSet(tokens)
	if err != nil {
		t.Fatal(err)
	}
	var calls, lengths []int
	constantTimeCompare = func(x, y []byte) int {
		calls = append(calls, 1)
		lengths = append(lengths, len(x), len(y))
		return subtleCompare(x, y)
	}
	t.Cleanup(func() { constantTimeCompare = subtleCompare })

	for _, tc := range []struct {
		presented string
		want      int // index of the matching entry, -1 for none
	}{
		{"short", 0},
		{"a-much-longer-token-of-forty-two-characters", 1},
		{"third-token", 2},
		{"shor", -1},
		{"shortx", -1},
		{"SHORT", -1},
		{"", -1},
		{"a-much-longer-token-of-forty-two-character", -1},
		{"third-token ", -1},
	} {
		calls, lengths = nil, nil
		got, ok := set.match(tc.presented)
		switch {
		case tc.want < 0 && ok:
			t.Errorf("%q matched %s", tc.presented, got.Name)
		case tc.want >= 0 && (!ok || got != &set.tokens[tc.want]):
			t.Errorf("%q: matched %v, want entry %d", tc.presented, ok, tc.want+1)
		}
		if len(calls) != len(secrets) {
			t.Errorf("%q: %d comparisons, want one per configured token (%d)", tc.presented, len(calls), len(secrets))
		}
		for _, n := range lengths {
			if n != sha256.Size {
				t.Errorf("%q: compared %d bytes, want digests of %d", tc.presented, n, sha256.Size)
			}
		}
	}
}

var subtleCompare = constantTimeCompare

// jwksServer serves a JWKS whose keys the test sets, and can fail or hang.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    map[string]any // kid → public key
	mode    string         // "", "fail" or "hang"
	fetches atomic.Int64
	release chan struct{}
}

func newJWKSServer(t *testing.T, keys map[string]any) *jwksServer {
	j := &jwksServer{keys: keys, release: make(chan struct{})}
	j.Server = httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(func() { close(j.release); j.Close() })
	return j
}

func (j *jwksServer) set(mode string, keys map[string]any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mode = mode
	if keys != nil {
		j.keys = keys
	}
}

func (j *jwksServer) serve(w http.ResponseWriter, r *http.Request) {
	j.fetches.Add(1)
	j.mu.Lock()
	mode := j.mode
	var set jwkset.JWKSMarshal
	for kid, k := range j.keys {
		jk, err := jwkset.NewJWKFromKey(k, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}})
		if err != nil {
			panic(err)
		}
		set.Keys = append(set.Keys, jk.Marshal())
	}
	j.mu.Unlock()
	switch mode {
	case "fail":
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	case "hang":
		select {
		case <-j.release:
		case <-r.Context().Done():
		}
		return
	}
	_ = json.NewEncoder(w).Encode(set)
}

func TestJWKSRotationAndOutage(t *testing.T) {
	k1, k2 := rsaKey(t, 0), rsaKey(t, 1)
	srv := newJWKSServer(t, map[string]any{"k1": &k1.PublicKey})
	v := mustNew(t, Config{JWTEnabled: true, Algorithm: "RS256", JWKSURL: srv.URL, JWKSRefetchMin: -1,
		JWKSTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	tok := func(k *rsa.PrivateKey, kid string) string {
		return sign(t, jwt.SigningMethodRS256, k, kid, jwt.MapClaims{"sub": kid})
	}
	if _, err := v.Verify(ctx, tok(k1, "k1")); err != nil {
		t.Fatalf("k1 (first use fetches the JWKS): %v", err)
	}
	// Without a kid, the only key there is.
	if _, err := v.Verify(ctx, tok(k1, "")); err != nil {
		t.Fatalf("no kid, one key: %v", err)
	}
	srv.set("", map[string]any{"k1": &k1.PublicKey, "k2": &k2.PublicKey})
	if _, err := v.Verify(ctx, tok(k2, "k2")); err != nil {
		t.Fatalf("k2 after rotation (refetched once): %v", err)
	}
	if _, err := v.Verify(ctx, tok(k1, "k1")); err != nil {
		t.Fatalf("k1 still served: %v", err)
	}
	_, err := v.Verify(ctx, tok(k1, ""))
	wantErr(t, "no kid, two keys", err, ErrUnknownKID)
	srv.set("", map[string]any{"k2": &k2.PublicKey})
	_, err = v.Verify(ctx, tok(k1, "k3")) // an unknown kid refetches: k1 is gone
	wantErr(t, "k3", err, ErrUnknownKID)
	_, err = v.Verify(ctx, tok(k1, "k1"))
	wantErr(t, "k1 after its removal", err, ErrUnknownKID)

	// The provider fails, then hangs: cached keys keep working, a new kid
	// is refused once the fetch gives up.
	for _, mode := range []string{"fail", "hang"} {
		srv.set(mode, nil)
		if _, err := v.Verify(ctx, tok(k2, "k2")); err != nil {
			t.Fatalf("%s: cached k2: %v", mode, err)
		}
		_, err = v.Verify(ctx, tok(k2, "k9"))
		wantErr(t, mode+": new kid", err, ErrUnknownKID)
	}
}

func TestJWKSRefetchIsRateLimited(t *testing.T) {
	k1 := rsaKey(t, 0)
	srv := newJWKSServer(t, map[string]any{"k1": &k1.PublicKey})
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	v := mustNew(t, Config{JWTEnabled: true, Algorithm: "RS256", JWKSURL: srv.URL, JWKSRefetchMin: time.Minute,
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	ctx := context.Background()
	unknown := sign(t, jwt.SigningMethodRS256, k1, "nope", jwt.MapClaims{})
	for range 5 {
		_, err := v.Verify(ctx, unknown)
		wantErr(t, "unknown kid", err, ErrUnknownKID)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for 5 unknown kids within a minute, want 1", n)
	}
	now.Add(int64(time.Minute))
	_, err := v.Verify(ctx, unknown)
	wantErr(t, "unknown kid a minute later", err, ErrUnknownKID)
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after a minute, want 2", n)
	}
	// Known kids never fetch.
	known := sign(t, jwt.SigningMethodRS256, k1, "k1", jwt.MapClaims{})
	for range 5 {
		if _, err := v.Verify(ctx, known); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after known kids, want still 2", n)
	}
}

func TestJWKSRefreshService(t *testing.T) {
	k1, k2 := rsaKey(t, 0), rsaKey(t, 1)
	srv := newJWKSServer(t, map[string]any{"k1": &k1.PublicKey})
	v := mustNew(t, Config{JWTEnabled: true, Algorithm: "RS256", JWKSURL: srv.URL, JWKSRefresh: 50 * time.Millisecond,
		JWKSRefetchMin: time.Hour})
	svcs := v.Services()
	if len(svcs) != 1 {
		t.Fatalf("%d services, want the JWKS refresh", len(svcs))
	}
	if err := svcs[0].Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svcs[0].Stop)
	srv.set("", map[string]any{"k2": &k2.PublicKey})
	tok := sign(t, jwt.SigningMethodRS256, k2, "k2", jwt.MapClaims{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := v.Verify(context.Background(), tok)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("k2 never picked up by the refresh: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if (&Verifier{}).Services() != nil || mustNew(t, Config{JWTEnabled: true, Secret: "x"}).Services() != nil {
		t.Error("services without a JWKS URL")
	}
}

func TestAPITokensAlone(t *testing.T) {
	toks, _ := ParseTokens("tok-a:write-only:0192f0a0-aaaa-7000-8000-00000000000a")
	v := mustNew(t, Config{Tokens: toks})
	id, err := v.Verify(context.Background(), "tok-a")
	if err != nil || id.Subject != "api-token:1" || id.Roles != SetOf(RoleWriteOnly) || id.Method != "api-token" ||
		id.Tenant != "0192f0a0-aaaa-7000-8000-00000000000a" {
		t.Fatalf("tok-a: %+v, %v", id, err)
	}
	_, err = v.Verify(context.Background(), "tok-b")
	wantErr(t, "unknown API token", err, ErrAPIToken)
	if !v.Enabled() || v.JWT() {
		t.Error("API tokens alone: want Enabled and not JWT")
	}
	if mustNew(t, Config{}).Enabled() {
		t.Error("the zero Config is enabled")
	}
}

func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	claims := jwt.MapClaims{"sub": "producer-1", "role": "write-only", "exp": time.Now().Add(time.Hour).Unix()}
	rk := rsaKey(b, 0)
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	toks, _ := ParseTokens("a-static-api-token-of-some-length:write-only")
	for _, bc := range []struct {
		name  string
		cfg   Config
		token string
	}{
		{"HS256", Config{JWTEnabled: true, Secret: "s"}, sign(b, jwt.SigningMethodHS256, []byte("s"), "", claims)},
		{"RS256", Config{JWTEnabled: true, Algorithm: "RS256", PublicKey: pemOf(b, &rk.PublicKey)},
			sign(b, jwt.SigningMethodRS256, rk, "", claims)},
		{"EdDSA", Config{JWTEnabled: true, Algorithm: "EdDSA", PublicKey: pemOf(b, edPriv.Public())},
			sign(b, jwt.SigningMethodEdDSA, edPriv, "", claims)},
		{"api-token", Config{Tokens: toks}, "a-static-api-token-of-some-length"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v := mustNew(b, bc.cfg)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, bc.token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJWKSRedirects: the JWKS fetch follows a redirect on the same host
// only, never to another host (whose keys would then sign admin tokens).
func TestJWKSRedirects(t *testing.T) {
	keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/jwks", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"keys":[]}`))
	}))
	defer keys.Close()
	// 127.0.0.1 and localhost are different hosts to the redirect policy.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(keys.URL, "127.0.0.1", "localhost", 1)+"/jwks", http.StatusFound)
	}))
	defer evil.Close()
	for _, tc := range []struct {
		url  string
		want string // "" fetches
	}{
		{keys.URL + "/moved", ""},
		{evil.URL + "/jwks", "redirect to another host"},
	} {
		j, err := newJWKS(Config{JWKSURL: tc.url})
		if err != nil {
			t.Fatal(err)
		}
		err = j.fetch(context.Background())
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("fetch %s: %v, want %q", tc.url, err, tc.want)
		}
	}
	req := func(u string) *http.Request { r, _ := http.NewRequest("GET", u, nil); return r }
	if err := jwksRedirect(req("http://idp.example/jwks"), []*http.Request{req("https://idp.example/jwks")}); err == nil ||
		!strings.Contains(err.Error(), "https to http") {
		t.Errorf("https to http: %v", err)
	}
}

// TestRequireExpAndNullTenant: JWT_REQUIRE_EXP refuses a token without exp
// as an expired one; a tenant claim that is null is invalid, not absent.
func TestRequireExpAndNullTenant(t *testing.T) {
	secret := strings.Repeat("k", 32)
	sign := func(c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	strict := mustNew(t, Config{JWTEnabled: true, Secret: secret, RequireExp: true})
	lax := mustNew(t, Config{JWTEnabled: true, Secret: secret})
	noExp := sign(jwt.MapClaims{"sub": "a", "role": "admin"})
	if _, err := strict.Verify(context.Background(), noExp); !errors.Is(err, ErrExpired) {
		t.Fatalf("JWT_REQUIRE_EXP, no exp: %v, want %v", err, ErrExpired)
	}
	if _, err := lax.Verify(context.Background(), noExp); err != nil {
		t.Fatalf("no exp, not required: %v", err)
	}
	withExp := sign(jwt.MapClaims{"sub": "a", "role": "admin", "exp": time.Now().Add(time.Hour).Unix()})
	if _, err := strict.Verify(context.Background(), withExp); err != nil {
		t.Fatalf("JWT_REQUIRE_EXP, with exp: %v", err)
	}
	id, err := lax.Verify(context.Background(), sign(jwt.MapClaims{"sub": "a", "role": "admin", "tenant": nil}))
	if err != nil || !id.TenantInvalid || id.Tenant != "" {
		t.Fatalf("tenant null: %+v %v, want TenantInvalid", id, err)
	}
}
