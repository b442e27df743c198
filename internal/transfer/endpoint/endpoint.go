// Package endpoint opens the two ends of a copy (package transfer): a
// PostgreSQL database or an embedded engine's data folder, either holding
// this broker's data or, as a source, Queen's. It is apart from package
// transfer so that the broker's server, which serves the migration routes
// through transfer, does not import the engines.
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/transfer"
)

// DefaultSchema is the schema both brokers use by default.
const DefaultSchema = transfer.DefaultSchema

// Endpoint is one end of a copy: a PostgreSQL database (URL, Schema) or the
// data folder of an embedded engine (Dir).
type Endpoint struct {
	URL    string
	Schema string
	Dir    string
}

// Parse reads a --from or --to value: a postgres:// or
// postgresql:// URL, else a folder.
func Parse(s, schema string) Endpoint {
	if schema == "" {
		schema = DefaultSchema
	}
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return Endpoint{URL: s, Schema: schema}
	}
	return Endpoint{Dir: s}
}

// String names the endpoint without its password.
func (e Endpoint) String() string {
	if e.URL == "" {
		return e.Dir
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return "postgres (unparsable URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String() + " schema " + e.Schema
}

// same reports whether two endpoints name the same database.
func (e Endpoint) same(o Endpoint) bool {
	if e.URL != "" || o.URL != "" {
		return e.URL == o.URL && e.Schema == o.Schema
	}
	a, _ := filepath.Abs(e.Dir)
	b, _ := filepath.Abs(o.Dir)
	return a == b
}

// tablesIn counts the tables of schema, and whether they are Queen's.
func tablesIn(ctx context.Context, pool *pgxpool.Pool, schema string) (n int, queen bool, err error) {
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&n); err != nil {
		return 0, false, fmt.Errorf("list the tables of schema %s: %w", schema, err)
	}
	if n == 0 {
		return 0, false, nil
	}
	queen, err = transfer.IsQueen(ctx, pool, schema)
	return n, queen, err
}

// ourSchema reports whether schema holds this broker's tables.
func ourSchema(ctx context.Context, pool *pgxpool.Pool, schema string) (bool, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = ANY($2::text[])`, schema,
		[]string{"schema_migrations", "lanes", "queues", "messages"}).Scan(&n)
	return n == 4, err
}

func connect(ctx context.Context, e Endpoint) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, e.URL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", e, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", e, err)
	}
	return pool, nil
}

// Source is an opened source: a Queen database or an engine of this broker.
type Source struct {
	Queen  *transfer.QueenReader // set for a database of Queen's broker
	Engine store.TransferStore   // set for this broker's engines
	close  func()
}

// Close releases the source.
func (s *Source) Close() { s.close() }

// Kind says what the source is.
func (s *Source) Kind() string {
	if s.Queen != nil {
		return "a database of Queen's broker"
	}
	return "a database of queen-go (" + s.Engine.(store.EngineStore).Engine() + ")"
}

// OpenSource opens the source of a copy; it never creates or changes it.
func OpenSource(ctx context.Context, e Endpoint) (*Source, error) {
	if e.URL == "" {
		if _, err := os.Stat(filepath.Join(e.Dir, "queen.db")); err != nil {
			return nil, fmt.Errorf("source %s: no embedded database there (%w)", e, err)
		}
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: e.Dir})
		if err != nil {
			return nil, fmt.Errorf("open source %s: %w", e, err)
		}
		return &Source{Engine: st, close: func() { st.Close() }}, nil
	}
	pool, err := connect(ctx, e)
	if err != nil {
		return nil, err
	}
	if ok, err := transfer.IsQueen(ctx, pool, e.Schema); err != nil || ok {
		if err != nil {
			pool.Close()
			return nil, err
		}
		return &Source{Queen: &transfer.QueenReader{DB: pool, Schema: e.Schema}, close: pool.Close}, nil
	}
	ok, err := ourSchema(ctx, pool, e.Schema)
	pool.Close()
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", e, err)
	}
	if !ok {
		return nil, fmt.Errorf("source %s holds neither Queen's tables nor queen-go's", e)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: e.URL, Schema: e.Schema, PoolSize: 4})
	if err != nil {
		return nil, fmt.Errorf("open source %s: %w", e, err)
	}
	return &Source{Engine: st, close: func() { st.Close() }}, nil
}

// OpenTarget opens (creating when needed) the target of a copy. A
// PostgreSQL schema holding Queen's tables, or tables of something else,
// is refused before anything is written to it.
func OpenTarget(ctx context.Context, e Endpoint) (store.TransferStore, func(), error) {
	if e.URL == "" {
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: e.Dir})
		if err != nil {
			return nil, nil, fmt.Errorf("open target %s: %w", e, err)
		}
		return st, func() { st.Close() }, nil
	}
	pool, err := connect(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	n, queen, err := tablesIn(ctx, pool, e.Schema)
	ours := false
	if err == nil && n > 0 && !queen {
		ours, err = ourSchema(ctx, pool, e.Schema)
	}
	pool.Close()
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("target %s: %w", e, err)
	case queen:
		return nil, nil, fmt.Errorf("target %s: %w (Queen's broker's database)", e, transfer.ErrTargetNotEmpty)
	case n > 0 && !ours:
		return nil, nil, fmt.Errorf("target %s: %w (%d tables that are not queen-go's)", e, transfer.ErrTargetNotEmpty, n)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: e.URL, Schema: e.Schema, PoolSize: 8})
	if err != nil {
		return nil, nil, fmt.Errorf("open target %s: %w", e, err)
	}
	return st, func() { st.Close() }, nil
}

// Migrate copies from into to: the command's whole run.
func Migrate(ctx context.Context, from, to Endpoint, o transfer.Options) (transfer.Report, error) {
	if from.same(to) {
		return nil, errors.New("--from and --to name the same database")
	}
	src, err := OpenSource(ctx, from)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, closeDst, err := OpenTarget(ctx, to)
	if err != nil {
		return nil, err
	}
	defer closeDst()
	if src.Queen != nil {
		return transfer.CopyQueen(ctx, src.Queen, dst, o)
	}
	return transfer.CopyEngine(ctx, src.Engine, dst, o)
}

// OpenPostgres is a transfer.OpenFunc: the target of the migration routes.
func OpenPostgres(ctx context.Context, url, schema string) (store.TransferStore, func(), error) {
	return OpenTarget(ctx, Endpoint{URL: url, Schema: schema})
}
