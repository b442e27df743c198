package transfer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/api"
)

// connectTimeout bounds a connection to a migration's target.
const connectTimeout = 10 * time.Second

// TargetConfig is the connection to a migration's target PostgreSQL. The
// password goes into the configuration only, never into a URL that a log
// or an error could show.
func TargetConfig(t api.MigrationTarget) (*pgx.ConnConfig, error) {
	port := string(t.Port)
	if port == "" {
		port = "5432"
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("port %q is not a TCP port", port)
	}
	mode := "disable"
	if t.SSL {
		mode = "require"
	}
	u := url.URL{Scheme: "postgres", User: url.User(t.User), Host: net.JoinHostPort(t.Host, port),
		Path: "/" + t.Database, RawQuery: "sslmode=" + mode}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	cfg.Password = t.Password
	cfg.ConnectTimeout = connectTimeout
	return cfg, nil
}

// TestConnection connects to the target and returns its version.
func (Service) TestConnection(ctx context.Context, t api.MigrationTarget) (string, error) {
	cfg, err := TargetConfig(t)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", redacted(err, t.Password)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return "", redacted(err, t.Password)
	}
	return version, nil
}

// redacted is err with every occurrence of the password replaced.
func redacted(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "********"))
}
