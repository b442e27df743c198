package config

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/delivery"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/logging"
	"github.com/queen-go/queen/internal/ratelimit"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/timers"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultsSelectTheEmbeddedEngine(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine() != "sqlite" || c.Addr() != "0.0.0.0:6632" || c.DataDir != "./queen-data" ||
		c.Server().MaxBodyBytes != 64<<20 || c.Server().SpoolDir != "queen-data/spool" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestQueenPGVariablesBuildAnEscapedURL(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"PG_HOST": "db.internal", "PG_PORT": "6543", "PG_USER": "queen", "PG_PASSWORD": "p@ss/word", "PG_DB": "mq",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := "postgres://queen:p%40ss%2Fword@db.internal:6543/mq?sslmode=disable"
	if c.Engine() != "postgres" || c.DatabaseURL != want {
		t.Fatalf("DatabaseURL = %q, want %q", c.DatabaseURL, want)
	}
	c, _ = FromEnv(env(map[string]string{"PG_HOST": "h", "QUEEN_DATABASE_URL": "postgres://x@y/z"}))
	if c.DatabaseURL != "postgres://x@y/z" {
		t.Fatalf("QUEEN_DATABASE_URL must win over PG_*: got %q", c.DatabaseURL)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	_, err := FromEnv(env(map[string]string{"PORT": "http", "QUEEN_MAX_BODY_BYTES": "-1", "LOG_LEVEL": "loud"}))
	if err == nil {
		t.Fatal("no error for bad values")
	}
	for _, name := range []string{"PORT", "QUEEN_MAX_BODY_BYTES", "LOG_LEVEL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// flags returns a flag set with every setting registered, parsed from args.
func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("queen", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestFlagBeatsVariableBeatsDefault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		check func(*Config) bool
	}{
		{"default", nil, nil, func(c *Config) bool { return c.Port == 6632 }},
		{"variable", nil, map[string]string{"PORT": "7000"}, func(c *Config) bool { return c.Port == 7000 }},
		{"flag over variable", []string{"--port=8000"}, map[string]string{"PORT": "7000"}, func(c *Config) bool { return c.Port == 8000 }},
		{"flag over bad variable", []string{"--port", "8000"}, map[string]string{"PORT": "http"}, func(c *Config) bool { return c.Port == 8000 }},
		{"blank flag restores default", []string{"--port="}, map[string]string{"PORT": "7000"}, func(c *Config) bool { return c.Port == 6632 }},
		{"blank variable is unset", nil, map[string]string{"PORT": "  "}, func(c *Config) bool { return c.Port == 6632 }},
		{"HOST", nil, map[string]string{"HOST": "10.0.0.1"}, func(c *Config) bool { return c.BindAddr == "10.0.0.1" }},
		{"QUEEN_BIND_ADDR over HOST", nil, map[string]string{"HOST": "10.0.0.1", "QUEEN_BIND_ADDR": "10.0.0.2"},
			func(c *Config) bool { return c.BindAddr == "10.0.0.2" }},
		{"flag over QUEEN_BIND_ADDR", []string{"--bind-addr", "127.0.0.1"}, map[string]string{"QUEEN_BIND_ADDR": "10.0.0.2"},
			func(c *Config) bool { return c.BindAddr == "127.0.0.1" }},
		{"bare bool flag", []string{"--pg-use-ssl", "--pg-host=h"}, map[string]string{"PG_USE_SSL": "false"},
			func(c *Config) bool { return c.PGUseSSL && strings.HasSuffix(c.DatabaseURL, "sslmode=verify-full") }},
		{"bool flag false", []string{"--pg-ssl-reject-unauthorized=false", "--pg-host=h"}, map[string]string{"PG_USE_SSL": "true"},
			func(c *Config) bool { return strings.HasSuffix(c.DatabaseURL, "sslmode=require") }},
		{"ms flag", []string{"--http-write-timeout-ms=2500"}, map[string]string{"QUEEN_HTTP_WRITE_TIMEOUT_MS": "100"},
			func(c *Config) bool { return c.Server().WriteTimeout == 2500*time.Millisecond }},
		{"data dir moves the spool", []string{"--data-dir=/var/lib/queen"}, nil,
			func(c *Config) bool { return c.Server().SpoolDir == "/var/lib/queen/spool" }},
		{"database URL flag over PG_HOST", []string{"--database-url=postgres://a@b/c"}, map[string]string{"PG_HOST": "h"},
			func(c *Config) bool { return c.DatabaseURL == "postgres://a@b/c" }},
		{"log flags", []string{"--log-level=trace", "--log-format=json"}, map[string]string{"LOG_LEVEL": "error", "LOG_FORMAT": "text"},
			func(c *Config) bool { return c.LogLevel == logging.LevelTrace && c.LogFormat == logging.FormatJSON }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(flags(t, tc.args...), env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("args %q env %v: got %+v", tc.args, tc.env, c)
			}
		})
	}
}

func TestBadValueNamesItsSource(t *testing.T) {
	_, err := Load(flags(t, "--port=http", "--http-idle-timeout-ms=0"),
		env(map[string]string{"PORT": "7000", "DB_POOL_SIZE": "1", "LOG_FORMAT": "logfmt", "PG_USE_SSL": "yes please"}))
	if err == nil {
		t.Fatal("no error for bad values")
	}
	for _, want := range []string{
		`--port="http": want an integer from 0 to 65535`,
		`--http-idle-timeout-ms="0": want an integer >= 1 (milliseconds)`,
		`DB_POOL_SIZE="1": want an integer >= 2`,
		`LOG_FORMAT="logfmt": want text or json`,
		`PG_USE_SSL="yes please": want true or false`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "7000") {
		t.Errorf("error mentions the variable the flag overrode:\n%v", err)
	}
}

func TestDefaultsOfEverySetting(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		BindAddr: "0.0.0.0", Port: 6632, DataDir: "./queen-data",
		PGDatabase: "postgres", PGPassword: "postgres", PGPoolSize: 20, PGPort: 5432, PGSSLRejectUnauthorized: true,
		PGSchema: "queen", PGStatementTimeout: 30 * time.Second, PGUser: "postgres",
		LogFormat: logging.FormatText, LogLevel: slog.LevelInfo,
		server: server.Config{
			SpoolDir: "queen-data/spool", SpoolMaxBytes: 1 << 30, NameCacheSize: 50000,
			BodyMinRate: 1024, IdleTimeout: 120 * time.Second, MaxConnections: 16384, HTTP2MaxStreams: 100, MaxPollTimeout: time.Hour, MaxHeaderBytes: 65536,
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			MaxBodyBytes:          64 << 20,
			MetricsAggregateEvery: time.Minute, MetricsMaxQueues: 500, MetricsRetention: 90 * 24 * time.Hour,
			MetricsSampleEvery: time.Second,
			Auth: auth.Config{Algorithm: "HS256", ClockSkew: 30 * time.Second, JWKSRefresh: time.Hour,
				JWKSTimeout: 5 * time.Second, SkipPaths: []string{"/health", "/metrics/prometheus", "/metrics", "/", "/api/v1/openapi.json"},
				RoleClaim: "role", RolesClaim: "roles", TenantClaim: "tenant",
				RoleNames: map[auth.Role]string{auth.RoleAdmin: "admin", auth.RoleReadWrite: "read-write",
					auth.RoleReadOnly: "read-only", auth.RoleWriteOnly: "write-only"}},
			Sweeps: broker.SweepConfig{EvictionBatch: 1000, EvictionEvery: time.Minute, HistoryKeep: 90 * 24 * time.Hour,
				PartitionIdle: 30 * 24 * time.Hour, RetentionBatch: 1000, RetentionEvery: 5 * time.Minute},
			KV:      kv.Config{MaxOps: 100, MaxValueBytes: 65536},
			Ingress: ingress.Config{Skew: 300 * time.Second, MaxHops: 8, MaxBodyBytes: 1 << 20, Node: "queen"},
			Delivery: delivery.Config{Timeout: 10 * time.Second, Attempts: 3, BackoffBase: 500 * time.Millisecond,
				BackoffMax: 30 * time.Second, Workers: 4},
			RateLimit: ratelimit.Config{Default: ratelimit.Limit{Rate: 1000, Burst: 2000}},
			Timers:    timers.Config{Batch: 1000, MaxDelay: 365 * 24 * time.Hour, PollEvery: 250 * time.Millisecond},
		},
	}
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", *c, want)
	}
}

func TestQueenLogLevels(t *testing.T) {
	for v, want := range map[string]slog.Level{
		"trace": logging.LevelTrace, "warning": slog.LevelWarn, "critical": logging.LevelCritical, "off": logging.LevelOff,
	} {
		c, err := FromEnv(env(map[string]string{"LOG_LEVEL": v}))
		if err != nil || c.LogLevel != want {
			t.Errorf("LOG_LEVEL=%s: %v, %v", v, c, err)
		}
	}
}

func TestPGPasswordKeepsItsSpaces(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"PG_HOST": "h", "PG_PASSWORD": " pw "}))
	if err != nil {
		t.Fatal(err)
	}
	if c.PGPassword != " pw " || !strings.Contains(c.DatabaseURL, ":%20pw%20@") {
		t.Fatalf("password %q, URL %q", c.PGPassword, c.DatabaseURL)
	}
}

func TestUnavailableSettingsStopStartUp(t *testing.T) {
	for _, u := range unavailable {
		if _, err := FromEnv(env(map[string]string{u.env: "true"})); err == nil || !strings.Contains(err.Error(), "unset "+u.env) {
			t.Errorf("%s=true: error %v", u.env, err)
		}
	}
}

func TestEncryptionKeys(t *testing.T) {
	const key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	const old = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	c, err := FromEnv(env(map[string]string{"QUEEN_ENCRYPTION_KEY": key, "QUEEN_ENCRYPTION_KEYS_OLD": old + ", " + key}))
	if err != nil {
		t.Fatal(err)
	}
	if k, err := c.Keyring(); err != nil || k == nil {
		t.Fatalf("Keyring: %v %v", k, err)
	}
	if k, err := (&Config{}).Keyring(); k != nil || err != nil {
		t.Errorf("no key: %v %v, want no keyring", k, err)
	}
	for name, vars := range map[string]map[string]string{
		"short key":            {"QUEEN_ENCRYPTION_KEY": "0123abcd"},
		"not hex":              {"QUEEN_ENCRYPTION_KEY": strings.Repeat("zz", 32)},
		"bad old key":          {"QUEEN_ENCRYPTION_KEY": key, "QUEEN_ENCRYPTION_KEYS_OLD": "0123abcd"},
		"old keys without key": {"QUEEN_ENCRYPTION_KEYS_OLD": old},
	} {
		_, err := FromEnv(env(vars))
		if err == nil || !strings.Contains(err.Error(), "QUEEN_ENCRYPTION_KEY") {
			t.Errorf("%s: error %v, want one naming the variable", name, err)
			continue
		}
		for _, v := range vars {
			if strings.Contains(err.Error(), v) {
				t.Errorf("%s: the error quotes a key: %v", name, err)
			}
		}
	}
}

func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	fs := flags(t)
	for _, s := range Settings() {
		for _, name := range append([]string{s.Env, s.Flag}, s.Aliases...) {
			if seen[name] {
				t.Errorf("%s listed twice", name)
			}
			seen[name] = true
		}
		if want := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.Env, "QUEEN_")), "_", "-"); s.Flag != want {
			t.Errorf("%s: flag --%s, want --%s", s.Env, s.Flag, want)
		}
		if s.Usage == "" || s.Type() == "" {
			t.Errorf("%s: no usage or type", s.Env)
		}
		if s.Default != "" && s.Unset != "" {
			t.Errorf("%s: both a default and an unset meaning", s.Env)
		}
		if f := fs.Lookup(s.Flag); f == nil || !strings.Contains(f.Usage, s.Env) {
			t.Errorf("--%s: not registered, or its help does not name %s", s.Flag, s.Env)
		}
		if s.Default != "" {
			if _, err := FromEnv(env(map[string]string{s.Env: s.Default})); err != nil {
				t.Errorf("%s: default %q does not validate: %v", s.Env, s.Default, err)
			}
		}
	}
	for _, u := range unavailable {
		if seen[u.env] {
			t.Errorf("%s is both a setting and unavailable", u.env)
		}
	}
}

func TestAuthSettings(t *testing.T) {
	pemFile := filepath.Join(t.TempDir(), "key.pem")
	_, edPriv, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKIXPublicKey(edPriv.Public())
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if err := os.WriteFile(pemFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := FromEnv(env(map[string]string{
		"JWT_ENABLED": "true", "JWT_ALGORITHM": "auto", "JWT_SECRET": " s3cret-of-thirty-two-bytes-at-least ", "JWT_PUBLIC_KEY": pemFile,
		"JWT_JWKS_URL": "https://idp.example.com/jwks", "JWT_JWKS_REFRESH_INTERVAL": "60", "JWT_JWKS_TIMEOUT_MS": "750",
		"JWT_ISSUER": "https://idp.example.com/", "JWT_AUDIENCE": "queen, queen-dev", "JWT_CLOCK_SKEW": "0",
		"JWT_SKIP_PATHS": "none", "JWT_ROLES_CLAIM": "r", "JWT_ROLES_ARRAY_CLAIM": "rs", "JWT_ROLE_ADMIN": "boss",
		"JWT_TENANT_CLAIM": "org", "QUEEN_TENANCY_ENABLED": "true",
		"QUEEN_API_TOKENS":  "tok-1:admin,tok-2:write-only:0192f0a0-aaaa-7000-8000-00000000000a",
		"CORS_ALLOW_ORIGIN": "https://dash.example.com, http://localhost:5173",
		"QUEEN_TLS_CERT":    "/etc/queen/cert.pem", "QUEEN_TLS_KEY": "/etc/queen/key.pem",
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Auth()
	if !a.JWTEnabled || a.Algorithm != "auto" || a.Secret != " s3cret-of-thirty-two-bytes-at-least " || a.PublicKey != string(keyPEM) ||
		a.JWKSURL != "https://idp.example.com/jwks" || a.JWKSRefresh != time.Minute || a.JWKSTimeout != 750*time.Millisecond ||
		a.Issuer != "https://idp.example.com/" || !reflect.DeepEqual(a.Audience, []string{"queen", "queen-dev"}) ||
		a.ClockSkew >= 0 || len(a.SkipPaths) != 0 || a.SkipPaths == nil || a.RoleClaim != "r" || a.RolesClaim != "rs" ||
		a.RoleNames[auth.RoleAdmin] != "boss" || a.RoleNames[auth.RoleReadOnly] != "read-only" || a.TenantClaim != "org" ||
		len(a.Tokens) != 2 || a.Tokens[1].Tenant != "0192f0a0-aaaa-7000-8000-00000000000a" {
		t.Fatalf("auth config: %+v", a)
	}
	if sc := c.Server(); !sc.TenancyEnabled ||
		!reflect.DeepEqual(sc.CORSAllowOrigins, []string{"https://dash.example.com", "http://localhost:5173"}) ||
		sc.TLSCertFile != "/etc/queen/cert.pem" || sc.TLSKeyFile != "/etc/queen/key.pem" {
		t.Fatalf("config: %+v", c)
	}
	if _, err := auth.New(a); err != nil {
		t.Fatalf("the verifier refuses the loaded settings: %v", err)
	}
}

func TestHardeningOptIns(t *testing.T) {
	for _, e := range []map[string]string{
		{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_JWKS_URL": "http://127.0.0.1:7100/jwks", "JWT_JWKS_ALLOW_HTTP": "true"},
		{"QUEEN_PPROF_ADDR": "0.0.0.0:6060", "QUEEN_PPROF_ALLOW_REMOTE": "true"},
		{"QUEEN_PPROF_ADDR": "127.0.0.1:6060"},
		{"QUEEN_PPROF_ADDR": "localhost:6060"},
		{"QUEEN_PPROF_ADDR": "[::1]:6060"},
		{"JWT_ENABLED": "true", "JWT_SECRET": strings.Repeat("k", 32), "JWT_REQUIRE_EXP": "true", "QUEEN_METRICS_AUTH": "true"},
		{"QUEEN_ALLOWED_HOSTS": "queen.example,*.corp.example,10.0.0.5,[::1]"},
	} {
		if _, err := FromEnv(env(e)); err != nil {
			t.Errorf("%v: %v", e, err)
		}
	}
}

func TestBadAuthSettingsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"JWT_ENABLED": "true"}, "JWT_ALGORITHM=HS256 needs JWT_SECRET"},
		{map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_SECRET": "x"}, "needs JWT_PUBLIC_KEY or JWT_JWKS_URL"},
		{map[string]string{"JWT_ALGORITHM": "PS256"}, `JWT_ALGORITHM="PS256": want HS256`},
		{map[string]string{"JWT_PUBLIC_KEY": "/no/such/file.pem"}, "JWT_PUBLIC_KEY="},
		{map[string]string{"JWT_PUBLIC_KEY": "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----"}, "JWT_PUBLIC_KEY="},
		{map[string]string{"JWT_JWKS_URL": "idp.example.com/jwks"}, "JWT_JWKS_URL=\"idp.example.com/jwks\": want an http or https URL"},
		{map[string]string{"JWT_SKIP_PATHS": "/health,metrics"}, `"metrics" is not a path`},
		{map[string]string{"JWT_CLOCK_SKEW": "-1"}, "JWT_CLOCK_SKEW=\"-1\": want an integer >= 0 (seconds)"},
		{map[string]string{"QUEEN_TLS_CERT": "cert.pem"}, "QUEEN_TLS_CERT and QUEEN_TLS_KEY go together"},
		{map[string]string{"CORS_ALLOW_ORIGIN": "https://dash.example.com/app"}, "is not an origin"},
		{map[string]string{"QUEEN_TENANCY_ENABLED": "maybe"}, "QUEEN_TENANCY_ENABLED=\"maybe\": want true or false"},
		{map[string]string{"JWT_ENABLED": "true", "JWT_SECRET": "x", "JWT_ROLE_ADMIN": "read-only"}, "both named"},
		// Issue 29: what start-up refuses.
		{map[string]string{"JWT_ENABLED": "true", "JWT_SECRET": "a"}, "JWT_SECRET: 1 bytes, want 32 at least"},
		{map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_JWKS_URL": "http://127.0.0.1:7100/jwks"},
			"JWT_JWKS_URL is http://"},
		{map[string]string{"QUEEN_PPROF_ADDR": "0.0.0.0:6060"}, `QUEEN_PPROF_ADDR="0.0.0.0:6060" is not a loopback address`},
		{map[string]string{"QUEEN_PPROF_ADDR": ":6060"}, "is not a loopback address"},
		{map[string]string{"QUEEN_METRICS_AUTH": "true"}, "QUEEN_METRICS_AUTH=true needs authentication"},
		{map[string]string{"QUEEN_ALLOWED_HOSTS": "queen.example:6632"}, "is not a host"},
	} {
		_, err := FromEnv(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.env, err, tc.want)
		}
	}
	_, err := FromEnv(env(map[string]string{"QUEEN_API_TOKENS": "tok-s3cret:superuser", "JWT_SECRET": "also-s3cret"}))
	if err == nil || !strings.Contains(err.Error(), "QUEEN_API_TOKENS: entry 1: want token:role") ||
		strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad QUEEN_API_TOKENS: error %v; want it named, the token never quoted", err)
	}
	if _, err := FromEnv(env(map[string]string{"CORS_ALLOW_ORIGIN": "*"})); err != nil {
		t.Fatalf("CORS_ALLOW_ORIGIN=*: %v", err)
	}
}

// TestRowsWriteTheServerConfig: the settings land in the feature configs
// the server takes, turned into their terms (an X_ENABLED=false is the
// feature's Disabled, a 0 that turns a limit off is its "none").
func TestRowsWriteTheServerConfig(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"QUEEN_KV_ENABLED": "false", "QUEEN_TIMERS_ENABLED": "false", "QUEEN_EPHEMERAL_ENABLED": "true",
		"QUEEN_HTTP_BODY_MIN_RATE": "00", "METRICS_RETENTION_DAYS": "7", "QUEEN_KV_MAX_OPS": "7",
		"QUEEN_TENANT_RATE_OVERRIDES": "0192f0a0-aaaa-7000-8000-00000000000a=5:10", "TIMER_BATCH_SIZE": "12",
		"QUEEN_ENCRYPTION_KEY": strings.Repeat("ab", 32),
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Server()
	week := 7 * 24 * time.Hour
	if !s.KV.Disabled || !s.Timers.Disabled || s.Ephemeral.Disabled || s.BodyMinRate != -1 ||
		s.MetricsRetention != week || s.Sweeps.HistoryKeep != week || s.KV.MaxOps != 7 || s.Timers.Batch != 12 ||
		s.RateLimit.Overrides["0192f0a0-aaaa-7000-8000-00000000000a"] != (ratelimit.Limit{Rate: 5, Burst: 10}) ||
		s.Encryption == nil {
		t.Fatalf("server config: %+v", s)
	}
}
