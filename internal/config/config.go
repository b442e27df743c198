// Package config holds the broker's settings. One table lists every setting
// once: its environment variable (Queen's name where Queen has one), its
// command-line flag, its default and its meaning. Load fills a Config from
// the flags, then the environment, then the defaults, and validates every
// value. Only cmd/queen calls it with the real command line and environment;
// everything else receives a Config, so tests build one in code.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/queen-go/queen/internal/logging"
)

// Config is the broker's whole configuration. Each field is filled by one
// row of the settings table (see Settings), named in its comment; the table
// holds the defaults.
type Config struct {
	// Listening.
	BindAddr string // QUEEN_BIND_ADDR (or HOST): address the HTTP API binds to
	Port     int    // PORT: TCP port of the HTTP API; 0 picks a free one

	// Storage.
	DataDir     string // QUEEN_DATA_DIR: folder of the embedded engine's database
	DatabaseURL string // QUEEN_DATABASE_URL, else built from the PG* fields when PGHost is set; "" = embedded engine
	SpoolDir    string // FILE_BUFFER_DIR: disk spool for pushes the database cannot take; unset = DataDir/spool

	// PostgreSQL, used to build DatabaseURL when QUEEN_DATABASE_URL is unset.
	PGDatabase              string        // PG_DB
	PGHost                  string        // PG_HOST; selects PostgreSQL
	PGPassword              string        // PG_PASSWORD
	PGPoolSize              int           // DB_POOL_SIZE: connections per broker
	PGPort                  int           // PG_PORT
	PGSSLRejectUnauthorized bool          // PG_SSL_REJECT_UNAUTHORIZED: verify the server's certificate
	PGSchema                string        // QUEEN_PG_SCHEMA: schema holding the broker's tables
	PGStatementTimeout      time.Duration // DB_STATEMENT_TIMEOUT (milliseconds)
	PGUseSSL                bool          // PG_USE_SSL
	PGUser                  string        // PG_USER

	// HTTP limits.
	HTTPBodyMinRate       int64         // QUEEN_HTTP_BODY_MIN_RATE: bytes/s a body must average after HTTPReadTimeout; 0 = no minimum
	HTTPIdleTimeout       time.Duration // QUEEN_HTTP_IDLE_TIMEOUT_MS: keep-alive idle timeout
	HTTPMaxConnections    int           // QUEEN_HTTP_MAX_CONNECTIONS: concurrent connections accepted at most
	HTTPMaxHeaderBytes    int           // QUEEN_HTTP_MAX_HEADER_BYTES: largest request header block
	HTTPReadHeaderTimeout time.Duration // QUEEN_HTTP_READ_HEADER_TIMEOUT_MS: time to read the request headers
	HTTPReadTimeout       time.Duration // QUEEN_HTTP_READ_TIMEOUT_MS: longest wait for the next bytes of a body
	HTTPWriteTimeout      time.Duration // QUEEN_HTTP_WRITE_TIMEOUT_MS: time to write a response; long polls add their wait
	MaxBodyBytes          int64         // QUEEN_MAX_BODY_BYTES: request body cap (413 above it)

	// Logging and debugging.
	LogFormat logging.Format // LOG_FORMAT: text or json
	LogLevel  slog.Level     // LOG_LEVEL: trace, debug, info, warn, error, critical or off
	PprofAddr string         // QUEEN_PPROF_ADDR: serve net/http/pprof there; "" = off
}

// Engine names the storage engine this configuration selects.
func (c *Config) Engine() string {
	if c.DatabaseURL != "" {
		return "postgres"
	}
	return "sqlite"
}

// Addr is the listen address.
func (c *Config) Addr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Port))
}

// Setting is one row of the settings table: one thing an operator can set,
// by flag or by environment variable.
type Setting struct {
	// Env is the environment variable, Queen's name where Queen has one.
	Env string
	// Aliases are further variables read when Env is unset, in order.
	Aliases []string
	// Flag is the command-line flag without its dashes: Env in lower case
	// with dashes for underscores and the QUEEN_ prefix dropped.
	Flag string
	// Default is the value used when neither the flag nor a variable is
	// set; "" leaves the setting unset.
	Default string
	// Unset says, for help, what an unset setting without Default means.
	Unset string
	// Usage is the setting's meaning in one line.
	Usage string

	kind kind
}

// Type names the kind of value the setting takes, for help: int, ms, bytes,
// bool, level, format or a kind of string (addr, dir, url…).
func (s Setting) Type() string { return s.kind.name }

// kind is how a setting's text becomes a Config field.
type kind struct {
	name string                          // shown in help after the flag
	set  func(c *Config, v string) error // v is non-blank; the error says what is wanted
}

// settings is the table. Its order is the order of --help and README.md.
var settings = []Setting{
	{Env: "PORT", Flag: "port", Default: "6632",
		Usage: "TCP port of the HTTP API (0: any free port)",
		kind:  integer("int", 0, 65535, func(c *Config) *int { return &c.Port })},
	{Env: "QUEEN_BIND_ADDR", Aliases: []string{"HOST"}, Flag: "bind-addr", Default: "0.0.0.0",
		Usage: "address the HTTP API binds to",
		kind:  text("addr", func(c *Config) *string { return &c.BindAddr })},
	{Env: "QUEEN_DATA_DIR", Flag: "data-dir", Default: "./queen-data",
		Usage: "folder of the embedded engine's database",
		kind:  text("dir", func(c *Config) *string { return &c.DataDir })},
	{Env: "QUEEN_DATABASE_URL", Flag: "database-url", Unset: "none (embedded engine)",
		Usage: "PostgreSQL URL; selects the PostgreSQL engine and wins over the PG_* settings",
		kind:  text("url", func(c *Config) *string { return &c.DatabaseURL })},
	{Env: "FILE_BUFFER_DIR", Flag: "file-buffer-dir", Unset: "<data-dir>/spool",
		Usage: "disk spool for pushes the database cannot take (outage, push maintenance)",
		kind:  text("dir", func(c *Config) *string { return &c.SpoolDir })},
	{Env: "PG_HOST", Flag: "pg-host", Unset: "none (embedded engine)",
		Usage: "PostgreSQL host; selects the PostgreSQL engine unless a database URL is set",
		kind:  text("host", func(c *Config) *string { return &c.PGHost })},
	{Env: "PG_PORT", Flag: "pg-port", Default: "5432",
		Usage: "PostgreSQL port",
		kind:  integer("int", 1, 65535, func(c *Config) *int { return &c.PGPort })},
	{Env: "PG_USER", Flag: "pg-user", Default: "postgres",
		Usage: "PostgreSQL user",
		kind:  text("string", func(c *Config) *string { return &c.PGUser })},
	{Env: "PG_PASSWORD", Flag: "pg-password", Default: "postgres",
		Usage: "PostgreSQL password (the variable keeps it out of ps)",
		kind:  verbatim("string", func(c *Config) *string { return &c.PGPassword })},
	{Env: "PG_DB", Flag: "pg-db", Default: "postgres",
		Usage: "PostgreSQL database",
		kind:  text("string", func(c *Config) *string { return &c.PGDatabase })},
	{Env: "PG_USE_SSL", Flag: "pg-use-ssl", Default: "false",
		Usage: "connect to PostgreSQL over TLS",
		kind:  boolean(func(c *Config) *bool { return &c.PGUseSSL })},
	{Env: "PG_SSL_REJECT_UNAUTHORIZED", Flag: "pg-ssl-reject-unauthorized", Default: "true",
		Usage: "with PG_USE_SSL, verify the server's certificate and host name",
		kind:  boolean(func(c *Config) *bool { return &c.PGSSLRejectUnauthorized })},
	{Env: "QUEEN_PG_SCHEMA", Flag: "pg-schema", Default: "queen",
		Usage: "PostgreSQL schema holding the broker's tables (created and migrated at start-up)",
		kind:  text("string", func(c *Config) *string { return &c.PGSchema })},
	// Two connections at least: a LISTEN connection is held for wake-ups.
	{Env: "DB_POOL_SIZE", Flag: "db-pool-size", Default: "20",
		Usage: "PostgreSQL connections per broker (2 at least)",
		kind:  integer("int", 2, math.MaxInt32, func(c *Config) *int { return &c.PGPoolSize })},
	{Env: "DB_STATEMENT_TIMEOUT", Flag: "db-statement-timeout", Default: "30000",
		Usage: "PostgreSQL statement timeout in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.PGStatementTimeout })},
	{Env: "QUEEN_MAX_BODY_BYTES", Flag: "max-body-bytes", Default: "67108864",
		Usage: "largest request body; a larger one is answered 413",
		kind:  integer("bytes", 1, math.MaxInt64, func(c *Config) *int64 { return &c.MaxBodyBytes })},
	{Env: "QUEEN_HTTP_READ_HEADER_TIMEOUT_MS", Flag: "http-read-header-timeout-ms", Default: "10000",
		Usage: "time a client has to send the request headers, in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.HTTPReadHeaderTimeout })},
	{Env: "QUEEN_HTTP_READ_TIMEOUT_MS", Flag: "http-read-timeout-ms", Default: "10000",
		Usage: "longest wait for the next bytes of a request body, in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.HTTPReadTimeout })},
	{Env: "QUEEN_HTTP_BODY_MIN_RATE", Flag: "http-body-min-rate", Default: "1024",
		Usage: "bytes per second a body must average once the read timeout has passed, or it is cut off (0: no minimum)",
		kind:  integer("int", 0, math.MaxInt64, func(c *Config) *int64 { return &c.HTTPBodyMinRate })},
	{Env: "QUEEN_HTTP_WRITE_TIMEOUT_MS", Flag: "http-write-timeout-ms", Default: "30000",
		Usage: "time to write a response, in milliseconds; a long poll gets its wait on top",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.HTTPWriteTimeout })},
	{Env: "QUEEN_HTTP_IDLE_TIMEOUT_MS", Flag: "http-idle-timeout-ms", Default: "120000",
		Usage: "how long an idle keep-alive connection stays open, in milliseconds",
		kind:  millis(1, func(c *Config) *time.Duration { return &c.HTTPIdleTimeout })},
	// Below 1 KiB ordinary requests with a token or a few cookies fail.
	{Env: "QUEEN_HTTP_MAX_HEADER_BYTES", Flag: "http-max-header-bytes", Default: "65536",
		Usage: "largest request header block (1024 at least)",
		kind:  integer("bytes", 1024, math.MaxInt32, func(c *Config) *int { return &c.HTTPMaxHeaderBytes })},
	{Env: "QUEEN_HTTP_MAX_CONNECTIONS", Flag: "http-max-connections", Default: "16384",
		Usage: "concurrent connections accepted at most",
		kind:  integer("int", 1, math.MaxInt32, func(c *Config) *int { return &c.HTTPMaxConnections })},
	{Env: "LOG_LEVEL", Flag: "log-level", Default: "info",
		Usage: "trace, debug, info, warn, error, critical or off",
		kind:  level(func(c *Config) *slog.Level { return &c.LogLevel })},
	{Env: "LOG_FORMAT", Flag: "log-format", Default: "text",
		Usage: "text or json",
		kind:  format(func(c *Config) *logging.Format { return &c.LogFormat })},
	{Env: "QUEEN_PPROF_ADDR", Flag: "pprof-addr", Unset: "off",
		Usage: "serve net/http/pprof on this address, e.g. 127.0.0.1:6060",
		kind:  text("addr", func(c *Config) *string { return &c.PprofAddr })},
}

// Settings returns the settings table, in the order help lists it.
func Settings() []Setting { return slices.Clone(settings) }

// AddFlags registers a flag for every setting on fs. The flags hold text;
// Load reads and validates it, so that every bad value is reported at once.
func AddFlags(fs *pflag.FlagSet) {
	for _, s := range settings {
		f := fs.VarPF(&flagValue{kind: s.kind.name}, s.Flag, "", s.help())
		if s.kind.name == "bool" {
			f.NoOptDefVal = "true" // --pg-use-ssl alone means true
		}
	}
}

// help is the flag's usage: the meaning, then where else it comes from.
func (s Setting) help() string {
	env := s.Env
	for _, a := range s.Aliases {
		env += " (or " + a + ")"
	}
	switch {
	case s.Default != "":
		return fmt.Sprintf("%s\nenv %s, default %s", s.Usage, env, s.Default)
	case s.Unset != "":
		return fmt.Sprintf("%s\nenv %s, default %s", s.Usage, env, s.Unset)
	}
	return fmt.Sprintf("%s\nenv %s", s.Usage, env)
}

// flagValue holds a flag's text until Load parses it.
type flagValue struct {
	kind string
	text string
}

func (f *flagValue) Set(v string) error { f.text = v; return nil }
func (f *flagValue) String() string     { return f.text }
func (f *flagValue) Type() string       { return f.kind }

// FromEnv is Load without flags.
func FromEnv(getenv func(string) string) (*Config, error) {
	return Load(nil, getenv)
}

// Load builds a Config. Each setting comes from its flag if set on fs (which
// may be nil), else from its environment variable read with getenv
// (os.Getenv in production), else from its default; a blank variable counts
// as unset, and a blank flag restores the default. Every value is validated;
// the error lists each bad one, naming the variable or flag it came from and
// the value. Settings this version does not implement yet stop it too.
func Load(fs *pflag.FlagSet, getenv func(string) string) (*Config, error) {
	c := &Config{}
	var errs []error
	for _, s := range settings {
		v, from := s.lookup(fs, getenv)
		if strings.TrimSpace(v) == "" {
			continue
		}
		if err := s.kind.set(c, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", from, v, err))
		}
	}
	errs = append(errs, refuseUnavailable(getenv)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if c.SpoolDir == "" {
		c.SpoolDir = filepath.Join(c.DataDir, "spool")
	}
	if c.DatabaseURL == "" && c.PGHost != "" {
		c.DatabaseURL = c.pgURL()
	}
	return c, nil
}

// lookup returns the setting's text and where it came from: "--flag", the
// variable's name, or "default".
func (s Setting) lookup(fs *pflag.FlagSet, getenv func(string) string) (value, from string) {
	if fs != nil {
		if f := fs.Lookup(s.Flag); f != nil && f.Changed {
			if v := f.Value.String(); strings.TrimSpace(v) != "" {
				return v, "--" + s.Flag
			}
			return s.Default, "default"
		}
	}
	for _, name := range append([]string{s.Env}, s.Aliases...) {
		if v := getenv(name); strings.TrimSpace(v) != "" {
			return v, name
		}
	}
	return s.Default, "default"
}

// pgURL builds a PostgreSQL URL from Queen's PG_* settings, escaping the
// user and password.
func (c *Config) pgURL() string {
	sslmode := "disable"
	if c.PGUseSSL {
		sslmode = "require"
		if c.PGSSLRejectUnauthorized {
			sslmode = "verify-full"
		}
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(c.PGUser, c.PGPassword),
		Host:     net.JoinHostPort(c.PGHost, strconv.Itoa(c.PGPort)),
		Path:     "/" + c.PGDatabase,
		RawQuery: "sslmode=" + sslmode,
	}
	return u.String()
}

func text(name string, field func(*Config) *string) kind {
	return kind{name, func(c *Config, v string) error {
		*field(c) = strings.TrimSpace(v)
		return nil
	}}
}

// verbatim keeps surrounding spaces, which may belong to a password.
func verbatim(name string, field func(*Config) *string) kind {
	return kind{name, func(c *Config, v string) error {
		*field(c) = v
		return nil
	}}
}

func integer[T ~int | ~int64](name string, min, max int64, field func(*Config) *T) kind {
	return kind{name, func(c *Config, v string) error {
		n, err := parseInt(v, min, max)
		if err != nil {
			return err
		}
		*field(c) = T(n)
		return nil
	}}
}

// millis reads one of Queen's millisecond counts into a time.Duration.
func millis(min int64, field func(*Config) *time.Duration) kind {
	return kind{"ms", func(c *Config, v string) error {
		n, err := parseInt(v, min, math.MaxInt32)
		if err != nil {
			return fmt.Errorf("%w (milliseconds)", err)
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return nil
	}}
}

// parseInt reads a decimal integer from min to max. A max of MaxInt32 or
// more means no upper bound worth mentioning.
func parseInt(v string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err == nil && n >= min && n <= max {
		return n, nil
	}
	if max >= math.MaxInt32 {
		return 0, fmt.Errorf("want an integer >= %d", min)
	}
	return 0, fmt.Errorf("want an integer from %d to %d", min, max)
}

func boolean(field func(*Config) *bool) kind {
	return kind{"bool", func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return errors.New("want true or false")
		}
		*field(c) = b
		return nil
	}}
}

func level(field func(*Config) *slog.Level) kind {
	return kind{"level", func(c *Config, v string) error {
		l, err := logging.ParseLevel(v)
		*field(c) = l
		return err
	}}
}

func format(field func(*Config) *logging.Format) kind {
	return kind{"format", func(c *Config, v string) error {
		f, err := logging.ParseFormat(v)
		*field(c) = f
		return err
	}}
}
