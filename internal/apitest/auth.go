package apitest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
)

// The auth topic's fixed settings.
const (
	authSecret   = "apitest-hmac-secret-0123456789abcdef"
	authIssuer   = "https://idp.apitest"
	authAudience = "queen"
	tenantA      = "0192f0a0-aaaa-7000-8000-00000000000a"
	tenantB      = "0192f0a0-bbbb-7000-8000-00000000000b"
)

// Static API tokens of the auth topic, one per role, in QUEEN_API_TOKENS
// order (their subjects are api-token:1 … api-token:4).
const (
	apiTokenAdmin     = "tok-admin-6b1f0c2e"
	apiTokenReadWrite = "tok-rw-93aa41d7"
	apiTokenReadOnly  = "tok-ro-0d5e77c1"
	apiTokenWriteOnly = "tok-wo-c4f2a9e0"
)

func apiTokens(t testing.TB, extra string) []auth.Token {
	t.Helper()
	s := apiTokenAdmin + ":admin," + apiTokenReadWrite + ":read-write," + apiTokenReadOnly + ":read-only," +
		apiTokenWriteOnly + ":write-only"
	if extra != "" {
		s += "," + extra
	}
	toks, err := auth.ParseTokens(s)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

var (
	authKeysOnce sync.Once
	rsaKey1      *rsa.PrivateKey // served by the JWKS as rs-1
	rsaKey2      *rsa.PrivateKey // rs-2, served after a rotation
	edKey        ed25519.PrivateKey
)

func authKeys() {
	authKeysOnce.Do(func() {
		var err error
		if rsaKey1, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if _, edKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

// claims are valid claims for sub with role, changed by kv: name, value
// pairs, a nil value deleting the claim.
func claims(sub, role string, kv ...any) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"sub": sub, "role": role, "iss": authIssuer, "aud": authAudience,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if sub == "" {
		delete(c, "sub")
	}
	if role == "" {
		delete(c, "role")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

// signed signs c with method and key, with a kid header unless kid is "".
func signed(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hs is an HS256 token with the topic's secret.
func hs(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	return signed(t, jwt.SigningMethodHS256, []byte(authSecret), "", c)
}

// raw builds a token from a header and claims as JSON text, with sig as the
// signature segment, no signing at all.
func raw(header, claims, sig string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims)) + "." + sig
}

func pemOf(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func bearer(token string) string { return "Bearer " + token }

// attack is one request of an attack table and its exact answer.
type attack struct {
	name   string
	method string
	path   string
	authz  string // the Authorization header; "" sends none
	header []string
	body   any
	status int
	msg    string // the exact error text of a 4xx answer
}

// run sends the request and checks the status and, for a 4xx, that the
// body is exactly {"error": msg} (plus the no_such_route code on a 404).
func (a attack) run(t *testing.T, c *client) *response {
	t.Helper()
	cc := c.with(append([]string{"Authorization", a.authz}, a.header...)...)
	if a.status == http.StatusRequestHeaderFieldsTooLarge {
		// net/http's own answer, before any handler; it then drops the
		// connection while the client may still be sending the header,
		// so only the status line is sure to arrive.
		req, _ := http.NewRequest(a.method, c.base+a.path, strings.NewReader("{}"))
		req.Header = cc.header
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", a.method, a.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != a.status {
			t.Fatalf("%s %s: status %d, want %d", a.method, a.path, resp.StatusCode, a.status)
		}
		return nil
	}
	r := cc.do(t, a.method, a.path, a.body)
	switch {
	case a.method == http.MethodHead:
		wantStatus(t, r, a.status)
	case a.status == http.StatusNotFound && a.msg == "Not Found":
		wantJSON(t, r, a.status, nil)
		if string(r.Body) != `{"error":"Not Found","code":"no_such_route"}` {
			t.Fatalf("%s: body %s, want the no_such_route 404", r.what, r.Body)
		}
	case a.status >= 400:
		if msg := wantPlainError(t, r, a.status, ""); msg != a.msg {
			t.Fatalf("%s: error %q, want %q", r.what, msg, a.msg)
		}
		if a.status == http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s: 401 without WWW-Authenticate: Bearer", r.what)
		}
	default:
		wantStatus(t, r, a.status)
	}
	return r
}

func runAttacks(t *testing.T, c *client, table []attack) {
	t.Helper()
	for _, a := range table {
		t.Run(a.name, func(t *testing.T) { a.run(t, c) })
	}
}

// testAuth covers authentication and authorisation (spec §12), static API
// tokens, tenants, CORS, the probes and the identity routes.
func (s *suite) testAuth(t *testing.T) {
	authKeys()

	t.Run("JWTAttacksAndMistakes", func(t *testing.T) {
		t.Parallel()
		s.testJWTAttacks(t)
	})
	t.Run("PublicKeysAndJWKS", func(t *testing.T) {
		t.Parallel()
		s.testJWKS(t)
	})
	t.Run("APITokensWithoutJWT", func(t *testing.T) {
		t.Parallel()
		s.testAPITokens(t)
	})
	t.Run("Tenants", func(t *testing.T) {
		t.Parallel()
		s.testTenants(t)
	})
	t.Run("TenantHeaderWithTenancyOff", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("tenancy-off")
		attack{method: "POST", path: "/api/v1/push", header: []string{"X-Queen-Tenant", "acme"},
			body: pushBody(q), status: 400, msg: "invalid x-queen-tenant header (must be a UUID)"}.run(t, c)
		// A well-formed header is ignored: everything is the default tenant's.
		c.with("X-Queen-Tenant", tenantB).push(t, item(q, 1))
		if p := c.popOK(t, queuePath(q)); len(p.Messages) != 1 {
			t.Fatalf("pop without the header: %d messages, want the one pushed with it", len(p.Messages))
		}
		// Process-wide routes never read it.
		wantStatus(t, c.with("X-Queen-Tenant", "acme").do(t, "GET", "/health", nil), http.StatusOK)
	})
	t.Run("CORS", func(t *testing.T) {
		t.Parallel()
		s.testCORS(t)
	})
	t.Run("ProbesAndIdentityWithAuthOff", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, p := range []string{"/healthz", "/live"} {
			var m map[string]any
			wantJSON(t, c.do(t, "GET", p, nil), http.StatusOK, &m)
			if m["status"] != "alive" {
				t.Fatalf("GET %s: %v", p, m)
			}
		}
		var h map[string]any
		wantJSON(t, c.do(t, "GET", "/health", nil), http.StatusOK, &h)
		if _, ok := h["auth"]; ok {
			t.Fatalf("/health on loopback says auth: %v", h)
		}
		var me map[string]any
		wantJSON(t, c.do(t, "GET", "/auth/me", nil), http.StatusOK, &me)
		if me["authenticated"] != false || me["authEnabled"] != false || me["role"] != "admin" ||
			me["tenant"] != "00000000-0000-0000-0000-000000000000" || me["sub"] != nil {
			t.Fatalf("/auth/me with auth off: %v", me)
		}
		if r := c.do(t, "GET", "/auth/login", nil); r.Status != http.StatusFound || r.Header.Get("Location") != "/" {
			t.Fatalf("/auth/login with auth off: %s, want a 302 to /", r)
		}
		wantNoContent(t, c.do(t, "POST", "/auth/logout", nil))
	})
}

func pushBody(q string, extra ...string) map[string]any {
	return map[string]any{"items": []map[string]any{item(q, map[string]any{"n": 1}, extra...)}}
}

// testJWTAttacks runs the attack table against a broker with HS256 JWTs
// (issuer and audience enforced) and the four API tokens.
func (s *suite) testJWTAttacks(t *testing.T) {
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{
		JWTEnabled: true, Secret: authSecret, Issuer: authIssuer, Audience: []string{authAudience},
		Tokens: apiTokens(t, ""),
	}})
	q := uniq("auth-push")
	empty := queuePath(uniq("auth-empty")) // never pushed to: pops answer 204
	now := time.Now()

	ro := hs(t, claims("reader", "read-only"))
	wo := hs(t, claims("producer", "write-only"))
	rw := hs(t, claims("worker", "read-write"))
	admin := hs(t, claims("root", "admin"))
	valid := wo
	parts := strings.Split(valid, ".")
	adminClaims, _ := json.Marshal(claims("producer", "admin"))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(adminClaims) + "." + parts[2]
	claimsJSON, _ := json.Marshal(claims("producer", "write-only"))
	cj := string(claimsJSON)
	push := func(name, authz string, status int, msg string) attack {
		return attack{name: name, method: "POST", path: "/api/v1/push", authz: authz, body: pushBody(q), status: status, msg: msg}
	}
	get := func(name, path, authz string, status int, msg string) attack {
		return attack{name: name, method: "GET", path: path, authz: authz, status: status, msg: msg}
	}

	runAttacks(t, c, []attack{
		// Presenting a token.
		push("no token", "", 401, "Authentication required"),
		push("Bearer and nothing", "Bearer ", 401, "Authentication required"),
		push("bare token without Bearer is accepted", valid, 201, ""),
		push("lower-case bearer", "bearer "+valid, 201, ""),
		push("Basic credentials", "Basic dXNlcjpwYXNzd29yZA==", 401, "Bad token header"),
		push("not a JWT", bearer("hello"), 401, "Bad token header"),
		push("two segments", bearer(parts[0]+"."+parts[1]), 401, "Bad token header"),
		push("four segments", bearer(valid+".x"), 401, "Bad token header"),
		push("header not base64", bearer("!!!."+parts[1]+"."+parts[2]), 401, "Bad token header"),
		push("header not JSON", bearer(raw("not json", cj, parts[2])), 401, "Bad token header"),
		push("claims not JSON", bearer(raw(`{"alg":"HS256"}`, "[1,2", parts[2])), 401, "Bad token header"),
		push("100 KB token", bearer(strings.Repeat("a", 100<<10)), 431, ""),
		push("20 KB token (under the header limit)", bearer(strings.Repeat("a", 20<<10)), 401, "Bad token header"),
		// Algorithms.
		push("alg none, no signature", bearer(raw(`{"alg":"none","typ":"JWT"}`, cj, "")), 401, "Unsupported token algorithm"),
		push("alg none, a signature", bearer(raw(`{"alg":"none"}`, cj, parts[2])), 401, "Unsupported token algorithm"),
		push("alg None", bearer(raw(`{"alg":"None"}`, cj, "")), 401, "Unsupported token algorithm"),
		push("no alg", bearer(raw(`{"typ":"JWT"}`, cj, parts[2])), 401, "Unsupported token algorithm"),
		push("unknown alg", bearer(raw(`{"alg":"HS999"}`, cj, parts[2])), 401, "Unsupported token algorithm"),
		push("HS512 when HS256 is configured", bearer(signed(t, jwt.SigningMethodHS512, []byte(authSecret), "",
			claims("producer", "write-only"))), 401, "Unsupported token algorithm"),
		push("RS256 when HS256 is configured", bearer(signed(t, jwt.SigningMethodRS256, rsaKey1, "",
			claims("producer", "write-only"))), 401, "Unsupported token algorithm"),
		// Signatures.
		push("wrong secret", bearer(signed(t, jwt.SigningMethodHS256, []byte("guessed"), "",
			claims("producer", "write-only"))), 401, "Invalid token signature"),
		push("signature truncated by one character", bearer(valid[:len(valid)-1]), 401, "Invalid token signature"),
		push("signature truncated by two characters", bearer(valid[:len(valid)-2]), 401, "Invalid token signature"),
		push("signature removed", bearer(parts[0]+"."+parts[1]+"."), 401, "Invalid token signature"),
		push("claims changed to admin, old signature", bearer(tampered), 401, "Invalid token signature"),
		// Time.
		push("expired an hour ago", bearer(hs(t, claims("producer", "write-only", "exp", now.Add(-time.Hour).Unix()))),
			401, "Token has expired"),
		push("expired 10 s ago, within the 30 s skew", bearer(hs(t, claims("producer", "write-only", "exp",
			now.Add(-10*time.Second).Unix()))), 201, ""),
		push("not valid for an hour", bearer(hs(t, claims("producer", "write-only", "nbf", now.Add(time.Hour).Unix()))),
			401, "Token not yet valid"),
		push("issued in an hour", bearer(hs(t, claims("producer", "write-only", "iat", now.Add(time.Hour).Unix()))),
			401, "Token issued in the future"),
		push("exp as text", bearer(hs(t, claims("producer", "write-only", "exp", "tomorrow"))), 401, "Bad token header"),
		push("without exp (not required)", bearer(hs(t, claims("producer", "write-only", "exp", nil))), 201, ""),
		// Issuer and audience.
		push("wrong issuer", bearer(hs(t, claims("producer", "write-only", "iss", "https://evil.example"))), 401,
			"Invalid token issuer"),
		push("no issuer", bearer(hs(t, claims("producer", "write-only", "iss", nil))), 401, "Invalid token issuer"),
		push("wrong audience", bearer(hs(t, claims("producer", "write-only", "aud", "another-api"))), 401,
			"Invalid token audience"),
		push("no audience", bearer(hs(t, claims("producer", "write-only", "aud", nil))), 401, "Invalid token audience"),
		push("audience list naming queen", bearer(hs(t, claims("producer", "write-only", "aud", []string{"x", "queen"}))),
			201, ""),
		// Roles.
		push("role claim is a number", bearer(hs(t, claims("producer", "", "role", 3))), 403, "Insufficient permissions"),
		push("roles array of unknown roles", bearer(hs(t, claims("producer", "", "roles", []string{"root", "superuser"}))),
			403, "Insufficient permissions"),
		push("roles array: unknown ones and write-only", bearer(hs(t, claims("producer", "", "roles",
			[]string{"root", "write-only"}))), 201, ""),
		push("roles claim a string, not an array", bearer(hs(t, claims("producer", "", "roles", "admin"))), 403,
			"Insufficient permissions"),
		push("role in capitals", bearer(hs(t, claims("producer", "ADMIN"))), 403, "Insufficient permissions"),
		push("no role at all", bearer(hs(t, claims("producer", ""))), 403, "Insufficient permissions"),
		// The five levels: one route each that must pass and one that must be refused.
		get("public: health without a token", "/health", "", 200, ""),
		get("public: a bad token is not even read", "/health", bearer("garbage"), 200, ""),
		get("public: metrics", "/metrics/prometheus", "", 200, ""),
		get("public: healthz", "/healthz", "", 200, ""),
		get("read: status with read-only", "/api/v1/status/buffers", bearer(ro), 200, ""),
		get("read: status with write-only", "/api/v1/status/buffers", bearer(wo), 403, "Insufficient permissions"),
		get("read: status without a token", "/api/v1/status/buffers", "", 401, "Authentication required"),
		push("write-only: push with write-only", bearer(wo), 201, ""),
		push("write-only: push with read-write", bearer(rw), 201, ""),
		push("write-only: push with read-only", bearer(ro), 403, "Insufficient permissions"),
		get("read-write: pop with read-write", empty, bearer(rw), 204, ""),
		get("read-write: pop with admin", empty, bearer(admin), 204, ""),
		get("read-write: pop with write-only", empty, bearer(wo), 403, "Insufficient permissions"),
		get("read-write: pop with read-only", empty, bearer(ro), 403, "Insufficient permissions"),
		{name: "read-write: ack with write-only", method: "POST", path: "/api/v1/ack", authz: bearer(wo),
			body: map[string]any{"transactionId": "t", "partitionId": "p"}, status: 403, msg: "Insufficient permissions"},
		get("admin: maintenance with admin", "/api/v1/system/maintenance", bearer(admin), 200, ""),
		get("admin: maintenance with read-write", "/api/v1/system/maintenance", bearer(rw), 403, "Insufficient permissions"),
		{name: "admin: delete a queue with read-write", method: "DELETE", path: "/api/v1/resources/queues/" + q,
			authz: bearer(rw), status: 403, msg: "Insufficient permissions"},
		// Paths the table does not know are read-write.
		get("unknown path without a token", "/api/v1/nope", "", 401, "Authentication required"),
		get("unknown path with write-only", "/api/v1/nope", bearer(wo), 403, "Insufficient permissions"),
		get("unknown path with read-write", "/api/v1/nope", bearer(rw), 404, "Not Found"),
		{name: "HEAD of pop with a token", method: "HEAD", path: empty, authz: bearer(rw), status: 404},
		{name: "HEAD of pop without a token", method: "HEAD", path: empty, status: 401},
		get("skip path / without a token: the dashboard", "/", "", 200, ""),
		// API tokens next to JWT.
		push("API token (write-only)", bearer(apiTokenWriteOnly), 201, ""),
		get("API token (read-only) on pop", empty, bearer(apiTokenReadOnly), 403, "Insufficient permissions"),
		push("API token with a character more", bearer(apiTokenWriteOnly+"x"), 401, "Bad token header"),
		// Identity.
		get("auth/me without a token", "/auth/me", "", 401, "Authentication required"),
		get("auth/me with a bad signature", "/auth/me", bearer(tampered), 401, "Invalid token signature"),
	})

	t.Run("producerSub is the token's sub, never the body's", func(t *testing.T) {
		q := uniq("producer-sub")
		forged := item(q, 1, "producerSub", "mallory")
		c.with("Authorization", bearer(wo)).push(t, forged)
		c.with("Authorization", bearer(apiTokenWriteOnly)).push(t, forged)
		c.with("Authorization", bearer(hs(t, claims("", "write-only")))).push(t, forged)
		tx := c.with("Authorization", bearer(rw)).do(t, "POST", "/api/v1/transaction", map[string]any{
			"operations": []map[string]any{{"type": "push", "items": []map[string]any{forged}}}})
		wantStatus(t, tx, http.StatusOK)
		p := c.with("Authorization", bearer(admin)).popOK(t, queuePath(q)+"?batch=10")
		var subs []string
		for _, m := range p.Messages {
			subs = append(subs, strp(m.ProducerSub))
		}
		if want := []string{`"producer"`, `"api-token:4"`, "null", `"worker"`}; strings.Join(subs, ",") != strings.Join(want, ",") {
			t.Fatalf("producerSub of the four pushes: %v, want %v", subs, want)
		}
	})

	t.Run("identity routes", func(t *testing.T) {
		var me map[string]any
		wantJSON(t, c.with("Authorization", bearer(rw)).do(t, "GET", "/auth/me", nil), http.StatusOK, &me)
		if me["authenticated"] != true || me["authEnabled"] != true || me["sub"] != "worker" || me["method"] != "jwt" ||
			me["role"] != "read-write" || !jsonEqual(mustJSON(me["levels"]), []byte(`["public","read","write-only","read-write"]`)) {
			t.Fatalf("/auth/me with a read-write JWT: %v", me)
		}
		wantJSON(t, c.with("Authorization", apiTokenReadOnly).do(t, "GET", "/auth/me", nil), http.StatusOK, &me)
		if me["sub"] != "api-token:3" || me["method"] != "api-token" || !jsonEqual(mustJSON(me["levels"]), []byte(`["public","read"]`)) {
			t.Fatalf("/auth/me with the read-only API token: %v", me)
		}
		var login map[string]any
		wantJSON(t, c.with("Accept", "application/json").do(t, "GET", "/auth/login", nil), http.StatusOK, &login)
		if login["authEnabled"] != true || login["login"] != "external" {
			t.Fatalf("/auth/login: %v", login)
		}
		for _, accept := range []string{"", "text/html,application/xhtml+xml,*/*;q=0.8"} {
			page := c.with("Accept", accept).do(t, "GET", "/auth/login", nil)
			if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
				!strings.Contains(string(page.Body), "identity provider") || !strings.Contains(string(page.Body), "token") {
				t.Fatalf("/auth/login (Accept %q): %s", accept, page)
			}
		}
		wantNoContent(t, c.do(t, "POST", "/auth/logout", nil))
		for _, p := range []string{"/healthz", "/live", "/ready"} {
			wantStatus(t, c.do(t, "GET", p, nil), http.StatusOK)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// jwksServer serves a JWKS the test changes, and can fail or hang.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    map[string]any // kid → public key
	mode    string         // "", "fail" or "hang"
	release chan struct{}
}

func newJWKSServer(t *testing.T, keys map[string]any) *jwksServer {
	j := &jwksServer{keys: keys, release: make(chan struct{})}
	j.Server = httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(func() {
		close(j.release)
		j.Close()
	})
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
	case "hang":
		select {
		case <-j.release:
		case <-r.Context().Done():
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}
}

// testJWKS: RS256 and EdDSA tokens whose keys a JWKS serves (JWT_ALGORITHM
// auto, no secret): algorithm confusion, unknown kids, rotation, and a
// provider that fails or hangs.
func (s *suite) testJWKS(t *testing.T) {
	jwks := newJWKSServer(t, map[string]any{"rs-1": &rsaKey1.PublicKey, "ed-1": edKey.Public()})
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{
		JWTEnabled: true, Algorithm: "auto", JWKSURL: jwks.URL, Issuer: authIssuer, Audience: []string{authAudience},
		// Every unknown kid may refetch (the default allows one per 10 s),
		// and a hanging provider is given up on quickly.
		JWKSRefetchMin: -1, JWKSTimeout: 500 * time.Millisecond,
	}})
	q := uniq("jwks")
	rs := func(key *rsa.PrivateKey, kid string) string {
		return signed(t, jwt.SigningMethodRS256, key, kid, claims("rs-"+kid, "write-only"))
	}
	push := func(name, token string, status int, msg string) attack {
		return attack{name: name, method: "POST", path: "/api/v1/push", authz: bearer(token), body: pushBody(q),
			status: status, msg: msg}
	}
	publicPEM := pemOf(t, &rsaKey1.PublicKey)
	runAttacks(t, c, []attack{
		push("RS256 with a served kid", rs(rsaKey1, "rs-1"), 201, ""),
		push("RS384 with a served kid", signed(t, jwt.SigningMethodRS384, rsaKey1, "rs-1", claims("x", "write-only")), 201, ""),
		push("EdDSA with a served kid", signed(t, jwt.SigningMethodEdDSA, edKey, "ed-1", claims("x", "write-only")), 201, ""),
		push("HS256 signed with the RSA public key as the secret", signed(t, jwt.SigningMethodHS256, []byte(publicPEM), "rs-1",
			claims("x", "admin")), 401, "Unsupported token algorithm"),
		push("HS256 signed with the public key's DER", signed(t, jwt.SigningMethodHS256,
			x509.MarshalPKCS1PublicKey(&rsaKey1.PublicKey), "rs-1", claims("x", "admin")), 401, "Unsupported token algorithm"),
		push("EdDSA naming the RSA key's kid", signed(t, jwt.SigningMethodEdDSA, edKey, "rs-1", claims("x", "write-only")),
			401, "Unsupported token algorithm"),
		push("RS256 naming the Ed25519 key's kid", rs(rsaKey1, "ed-1"), 401, "Unsupported token algorithm"),
		push("RS256 signed by another key", rs(rsaKey2, "rs-1"), 401, "Invalid token signature"),
		push("unknown kid", rs(rsaKey1, "nobody"), 401, "Unknown key ID"),
		push("no kid with two keys served", rs(rsaKey1, ""), 401, "Unknown key ID"),
	})

	t.Run("rotation", func(t *testing.T) {
		old := rs(rsaKey1, "rs-1")
		jwks.set("", map[string]any{"rs-1": &rsaKey1.PublicKey, "rs-2": &rsaKey2.PublicKey})
		push("new key, first use (the JWKS is fetched once more)", rs(rsaKey2, "rs-2"), 201, "").run(t, c)
		push("old key, still served", old, 201, "").run(t, c)
		jwks.set("", map[string]any{"rs-2": &rsaKey2.PublicKey})
		push("another unknown kid fetches the JWKS without rs-1", rs(rsaKey1, "rs-3"), 401, "Unknown key ID").run(t, c)
		push("old key once removed", old, 401, "Unknown key ID").run(t, c)
		push("new key", rs(rsaKey2, "rs-2"), 201, "").run(t, c)
	})

	t.Run("provider down or hanging", func(t *testing.T) {
		for _, mode := range []string{"fail", "hang"} {
			jwks.set(mode, nil)
			push(mode+": cached key", rs(rsaKey2, "rs-2"), 201, "").run(t, c)
			// Answered once the 500 ms fetch gives up, far within the
			// client's timeout: a 401, not a hang.
			push(mode+": new kid", rs(rsaKey1, "rs-9"), 401, "Unknown key ID").run(t, c)
		}
		jwks.set("", nil)
	})
}

// testAPITokens: static tokens alone, without JWT.
func (s *suite) testAPITokens(t *testing.T) {
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", Auth: auth.Config{Tokens: apiTokens(t, "")}})
	q := uniq("api-tokens")
	empty := queuePath(uniq("api-tokens-empty"))
	push := func(name, authz string, status int, msg string) attack {
		return attack{name: name, method: "POST", path: "/api/v1/push", authz: authz, body: pushBody(q), status: status, msg: msg}
	}
	runAttacks(t, c, []attack{
		push("write-only token", bearer(apiTokenWriteOnly), 201, ""),
		push("bare write-only token", apiTokenWriteOnly, 201, ""),
		push("no token", "", 401, "Authentication required"),
		push("a prefix of a token", bearer(apiTokenWriteOnly[:len(apiTokenWriteOnly)-1]), 401, "Invalid API token"),
		push("a token with a character more", bearer(apiTokenWriteOnly+"0"), 401, "Invalid API token"),
		push("a token in capitals", bearer(strings.ToUpper(apiTokenWriteOnly)), 401, "Invalid API token"),
		push("a JWT", bearer(hs(t, claims("x", "admin"))), 401, "Invalid API token"),
		push("read-only token", bearer(apiTokenReadOnly), 403, "Insufficient permissions"),
		{name: "pop with write-only", method: "GET", path: empty, authz: bearer(apiTokenWriteOnly), status: 403,
			msg: "Insufficient permissions"},
		{name: "pop with read-write", method: "GET", path: empty, authz: bearer(apiTokenReadWrite), status: 204},
		{name: "maintenance with admin", method: "GET", path: "/api/v1/system/maintenance", authz: bearer(apiTokenAdmin),
			status: 200},
	})
	p := c.with("Authorization", bearer(apiTokenAdmin)).popOK(t, queuePath(q)+"?batch=10")
	for _, m := range p.Messages {
		if strp(m.ProducerSub) != `"api-token:4"` {
			t.Fatalf("producerSub %s, want the write-only token's name api-token:4", strp(m.ProducerSub))
		}
	}
}

// testTenants: tenancy on, with JWT tenant claims, API tokens bound to a
// tenant, and the x-queen-tenant header.
func (s *suite) testTenants(t *testing.T) {
	c := s.serverWith(t, server.Config{Version: "0.0.0-apitest", TenancyEnabled: true, Auth: auth.Config{
		JWTEnabled: true, Secret: authSecret, Issuer: authIssuer, Audience: []string{authAudience},
		Tokens: apiTokens(t, "tok-tenant-a-81c3:admin:"+tenantA),
	}})
	adminA := bearer(hs(t, claims("alice", "admin", "tenant", tenantA)))
	adminB := bearer(hs(t, claims("bob", "admin", "tenant", tenantB)))
	operator := bearer(hs(t, claims("ops", "admin"))) // no tenant claim
	q := uniq("tenant")
	push := func(name, authz string, header []string, status int, msg string) attack {
		return attack{name: name, method: "POST", path: "/api/v1/push", authz: authz, header: header, body: pushBody(q),
			status: status, msg: msg}
	}
	runAttacks(t, c, []attack{
		push("no tenant anywhere", operator, nil, 400, "tenant required"),
		push("malformed header", operator, []string{"X-Queen-Tenant", "acme"}, 400,
			"invalid x-queen-tenant header (must be a UUID)"),
		push("header only", operator, []string{"X-Queen-Tenant", tenantA}, 201, ""),
		push("claim only", adminA, nil, 201, ""),
		push("claim and the same header", adminA, []string{"X-Queen-Tenant", tenantA}, 201, ""),
		push("claim and the same header in capitals", adminA, []string{"X-Queen-Tenant", strings.ToUpper(tenantA)}, 201, ""),
		push("claim and another header", adminA, []string{"X-Queen-Tenant", tenantB}, 403, "tenant mismatch"),
		push("claim not a UUID", bearer(hs(t, claims("eve", "admin", "tenant", "acme"))), nil, 403,
			"invalid tenant claim (must be a UUID)"),
		push("API token bound to A, header B", bearer("tok-tenant-a-81c3"), []string{"X-Queen-Tenant", tenantB}, 403,
			"tenant mismatch"),
		push("API token bound to A", bearer("tok-tenant-a-81c3"), nil, 201, ""),
		push("authentication comes first", "", []string{"X-Queen-Tenant", "acme"}, 401, "Authentication required"),
		{name: "a process-wide route needs no tenant", method: "GET", path: "/api/v1/system/maintenance", authz: operator,
			status: 200},
	})

	t.Run("isolation", func(t *testing.T) {
		a, b := c.with("Authorization", adminA), c.with("Authorization", adminB)
		// Header-only tenancy acts for the same tenant as the claim.
		viaHeader := c.with("Authorization", operator, "X-Queen-Tenant", tenantA)
		q := uniq("orders")
		pushOf := func(c *client, who string, n int) { c.push(t, item(q, map[string]any{"who": who, "n": n})) }
		pushOf(a, "A", 1)
		pushOf(viaHeader, "A", 2)
		pushOf(b, "B", 1)
		pushOf(b, "B", 2)

		whoOf := func(p *popResp) []string {
			var out []string
			for _, m := range p.Messages {
				var d struct{ Who string }
				_ = json.Unmarshal(m.Data, &d)
				out = append(out, d.Who)
			}
			return out
		}
		pb := b.popOK(t, queuePath(q)+"?batch=1")
		pa := a.popOK(t, queuePath(q)+"?batch=1")
		if got := whoOf(pb); len(got) != 1 || got[0] != "B" {
			t.Fatalf("tenant B popped %v", got)
		}
		if got := whoOf(pa); len(got) != 1 || got[0] != "A" {
			t.Fatalf("tenant A popped %v", got)
		}
		mb := pb.Messages[0]
		// A knows B's partitionId, transactionId and leaseId: still nothing.
		wantAck(t, "A acks B's message", a.ack(t, "", ackOf(mb, "completed")), false, true, "unresolvable")
		if e := a.extend(t, pb.lease(), map[string]any{"seconds": 60}); e.Renewed != 0 {
			t.Fatalf("A extended B's lease: %+v", e)
		}
		wantAck(t, "B acks its own message", b.ack(t, "", ackOf(mb, "completed")), true, false, "")

		// Configure: each tenant has its own queue of that name.
		ca := a.configure(t, q, map[string]any{"leaseTime": 99})
		cb := b.configure(t, q, map[string]any{"leaseTime": 7})
		if ca["queueId"] == cb["queueId"] {
			t.Fatalf("A and B configured the same queue %v", ca["queueId"])
		}
		// A deletes its queue; B's survives with its messages.
		var del map[string]any
		wantJSON(t, a.do(t, "DELETE", "/api/v1/resources/queues/"+q, nil), http.StatusOK, &del)
		if del["deleted"] != true {
			t.Fatalf("A deletes %s: %v", q, del)
		}
		a.popNone(t, queuePath(q))
		if got := whoOf(b.popOK(t, queuePath(q)+"?batch=10")); len(got) != 1 || got[0] != "B" {
			t.Fatalf("B pops after A deleted its own %s: %v, want B's remaining message", q, got)
		}
		// B cannot delete a queue only A has.
		onlyA := uniq("only-a")
		a.push(t, item(onlyA, 1))
		wantJSON(t, b.do(t, "DELETE", "/api/v1/resources/queues/"+onlyA, nil), http.StatusOK, &del)
		if del["deleted"] != false {
			t.Fatalf("B deleted A's queue %s: %v", onlyA, del)
		}
		a.popOK(t, queuePath(onlyA))
		// A namespace pop sees only the tenant's queues.
		ns := uniq("shop")
		b.push(t, item(ns+".items", map[string]any{"who": "B"}))
		a.push(t, item(ns+".items", map[string]any{"who": "A"}))
		if got := whoOf(a.popOK(t, "/api/v1/pop?namespace="+ns+"&batch=10")); len(got) != 1 || got[0] != "A" {
			t.Fatalf("A's namespace pop: %v", got)
		}
		// /auth/me names the tenant.
		var me map[string]any
		wantJSON(t, a.do(t, "GET", "/auth/me", nil), http.StatusOK, &me)
		if me["tenant"] != tenantA || me["tenancyEnabled"] != true {
			t.Fatalf("/auth/me of A: %v", me)
		}
	})
}

// testCORS: no CORS headers unless origins are configured; a preflight is
// public and answered 204 with the allowed methods and headers.
func (s *suite) testCORS(t *testing.T) {
	const dash = "https://dash.example.com"
	listed := s.serverWith(t, server.Config{Version: "0.0.0-apitest", CORSAllowOrigins: []string{dash, "http://localhost:5173"},
		Auth: auth.Config{Tokens: apiTokens(t, "")}})
	anyOrigin := s.serverWith(t, server.Config{Version: "0.0.0-apitest", CORSAllowOrigins: []string{"*"}})
	off := s.server(t)
	preflight := func(c *client, origin string) *response {
		return c.with("Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization,content-type").do(t, "OPTIONS", "/api/v1/push", nil)
	}

	r := preflight(listed, dash)
	wantNoContent(t, r)
	for k, v := range map[string]string{
		"Access-Control-Allow-Origin":  dash,
		"Access-Control-Allow-Methods": "GET, POST, PUT, DELETE, OPTIONS",
		"Access-Control-Allow-Headers": "Content-Type, Authorization, X-Queen-Tenant, X-Request-Id",
		"Access-Control-Max-Age":       "86400",
		"Vary":                         "Origin",
	} {
		if got := r.Header.Get(k); got != v {
			t.Errorf("preflight from %s: %s %q, want %q", dash, k, got, v)
		}
	}
	r = preflight(listed, "https://evil.example.com")
	wantNoContent(t, r)
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("preflight from an origin not listed: Access-Control-Allow-Origin %q", got)
	}
	// The answer itself carries the origin, a 401 included, so that the
	// browser lets the page read it.
	r = listed.with("Origin", "http://localhost:5173").do(t, "POST", "/api/v1/push", pushBody(uniq("cors")))
	if r.Status != 401 || r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		r.Header.Get("Access-Control-Expose-Headers") != "X-Request-Id" {
		t.Errorf("POST from a listed origin without a token: %d, headers %v", r.Status, r.Header)
	}

	r = preflight(anyOrigin, "https://anyone.example.com")
	wantNoContent(t, r)
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" || r.Header.Get("Vary") != "" {
		t.Errorf("preflight with CORS_ALLOW_ORIGIN=*: Allow-Origin %q, Vary %q", got, r.Header.Get("Vary"))
	}

	// Off: no layer at all; OPTIONS is a route like any other unknown one.
	r = preflight(off, dash)
	wantError(t, r, http.StatusNotFound, "Not Found")
	r2 := off.with("Origin", dash).do(t, "GET", "/health", nil)
	for _, r := range []*response{r, r2} {
		for k := range r.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s without CORS_ALLOW_ORIGIN: header %s", r.what, k)
			}
		}
	}
}
