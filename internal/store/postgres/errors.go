package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/internal/store"
)

// SQLSTATEs the driver reacts to.
const (
	codeDeadlock      = "40P01"
	codeSerialization = "40001"
	codeForeignKey    = "23503" // a partition created under a queue deleted meanwhile
	codeUnique        = "23505" // a message raced past the dedup check (see push.go)
	codeQueryCanceled = "57014" // statement_timeout or cancel: not an outage
	codeNoDatabase    = "3D000" // invalid_catalog_name: the database was dropped
	codeReadOnly      = "25006" // read_only_sql_transaction: a standby
)

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// retryable reports errors after which running the whole transaction again
// is correct and likely to succeed.
func retryable(err error) bool {
	return errors.Is(err, errStale) || isCode(err, codeDeadlock) || isCode(err, codeSerialization) ||
		isCode(err, codeForeignKey) || isCode(err, codeUnique)
}

// unavailable reports errors that mean the database cannot be reached or
// cannot serve us right now, as opposed to a statement that failed: every
// failure to connect (refused, reset, the database gone, a login refused),
// a connection lost or terminated, a server shutting down or recovering, a
// standby that refuses writes, too many connections.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// A connect error wraps the server's refusal (3D000 "database does not
	// exist" once the database is dropped, 28P01 for a login refused), so
	// it is looked for before the PgError it carries.
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == codeQueryCanceled:
			return false
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "53"), // insufficient resources (too many connections, disk full)
			strings.HasPrefix(pgErr.Code, "57"), // shutdown, crash recovery, database dropped (57P04)
			strings.HasPrefix(pgErr.Code, "28"), // a login refused (password changed, role dropped)
			pgErr.Code == codeNoDatabase,        // the database is gone
			pgErr.Code == codeReadOnly:          // a standby, or a primary demoted by a failover
			return true
		}
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err)
}

// refusedAtStart reports a server's refusal to let us in (a login refused,
// a database that does not exist): at start-up that is a configuration
// waiting cannot fix, so Open stops; once running, the same refusal (a
// password rotated, the database dropped) is an outage like any other.
func refusedAtStart(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "28") || pgErr.Code == codeNoDatabase)
}

// invalid reports errors that mean PostgreSQL refused a value the request
// carried: a data exception (class 22: a NUL byte or invalid UTF-8 in text,
// a value out of range) or a program limit (54000: an index row too large,
// as a name of a few kilobytes makes). Validation at the door should catch
// them first; if one slips past, it is still the client's, not an outage
// and not an internal error.
func invalid(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "54")
}

// wrapErr prefixes err with op and marks outages with store.ErrUnavailable
// and refused values with store.ErrInvalid.
func wrapErr(op string, err error) error {
	switch {
	case unavailable(err):
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	case invalid(err):
		return fmt.Errorf("%s: %w: %w", op, store.ErrInvalid, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
