// Package config reads the broker's configuration from environment
// variables, using Queen's names where Queen has one. Only cmd/queen calls it
// with the real environment; everything else receives a Config.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is the broker's whole configuration.
type Config struct {
	BindAddr             string     // QUEEN_BIND_ADDR (or HOST), default 0.0.0.0
	DataDir              string     // QUEEN_DATA_DIR, default ./queen-data (embedded engine)
	DatabaseURL          string     // QUEEN_DATABASE_URL, or built from PG_* when PG_HOST is set
	LogLevel             slog.Level // LOG_LEVEL: debug, info, warn, error; default info
	MaxBodyBytes         int64      // QUEEN_MAX_BODY_BYTES, default 67108864
	Port                 int        // PORT, default 6632
	PprofAddr            string     // QUEEN_PPROF_ADDR: serve net/http/pprof there; "" = off
	PGPoolSize           int        // DB_POOL_SIZE, default 20
	PGSchema             string     // QUEEN_PG_SCHEMA, default queen
	PGStatementTimeoutMs int        // DB_STATEMENT_TIMEOUT (ms), default 30000
	SpoolDir             string     // FILE_BUFFER_DIR, default <DataDir>/spool
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

// FromEnv builds a Config from getenv (os.Getenv in production), applying
// defaults and validating every value. Errors name the variable.
func FromEnv(getenv func(string) string) (*Config, error) {
	c := &Config{
		BindAddr:             "0.0.0.0",
		DataDir:              "./queen-data",
		LogLevel:             slog.LevelInfo,
		MaxBodyBytes:         64 << 20,
		Port:                 6632,
		PGPoolSize:           20,
		PGSchema:             "queen",
		PGStatementTimeoutMs: 30000,
	}
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	integer := func(name string, min int64, set func(int64)) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			errs = append(errs, fmt.Errorf("%s=%q: want an integer >= %d", name, v, min))
			return
		}
		set(n)
	}
	str("HOST", &c.BindAddr)
	str("QUEEN_BIND_ADDR", &c.BindAddr)
	str("QUEEN_DATA_DIR", &c.DataDir)
	str("QUEEN_PPROF_ADDR", &c.PprofAddr)
	integer("PORT", 0, func(n int64) { c.Port = int(n) })
	if c.Port > 65535 {
		errs = append(errs, fmt.Errorf("PORT=%d: want a port number <= 65535", c.Port))
	}
	integer("QUEEN_MAX_BODY_BYTES", 1, func(n int64) { c.MaxBodyBytes = n })
	integer("DB_POOL_SIZE", 2, func(n int64) { c.PGPoolSize = int(n) })
	integer("DB_STATEMENT_TIMEOUT", 1, func(n int64) { c.PGStatementTimeoutMs = int(n) })
	str("QUEEN_PG_SCHEMA", &c.PGSchema)
	if v := strings.TrimSpace(getenv("LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v))
		}
	}
	c.SpoolDir = filepath.Join(c.DataDir, "spool")
	str("FILE_BUFFER_DIR", &c.SpoolDir)
	c.DatabaseURL = databaseURL(getenv)
	return c, errors.Join(errs...)
}

// databaseURL returns QUEEN_DATABASE_URL, or a URL built from Queen's PG_*
// variables when PG_HOST is set, or "" for the embedded engine.
func databaseURL(getenv func(string) string) string {
	if u := strings.TrimSpace(getenv("QUEEN_DATABASE_URL")); u != "" {
		return u
	}
	host := strings.TrimSpace(getenv("PG_HOST"))
	if host == "" {
		return ""
	}
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	sslmode := "disable"
	if or("PG_USE_SSL", "false") == "true" {
		sslmode = "require"
		if or("PG_SSL_REJECT_UNAUTHORIZED", "true") == "true" {
			sslmode = "verify-full"
		}
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(or("PG_USER", "postgres"), or("PG_PASSWORD", "postgres")),
		Host:     net.JoinHostPort(host, or("PG_PORT", "5432")),
		Path:     "/" + or("PG_DB", "postgres"),
		RawQuery: "sslmode=" + sslmode,
	}
	return u.String()
}
