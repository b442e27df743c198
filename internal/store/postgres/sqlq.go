package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// pgxRunner is a transaction or the pool.
type pgxRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgq runs the shared statements of sqlq on a transaction or the pool.
type pgq struct {
	ctx context.Context
	db  pgxRunner
}

// q returns the shared statement runner of t.
func (t *txn) q() sqlq.Q { return pgq{t.ctx, t.tx} }

// poolQ returns the shared statement runner of the pool.
func (s *Store) poolQ(ctx context.Context) sqlq.Q { return pgq{ctx, s.pool} }

func (q pgq) Row(query string, args ...any) sqlq.Row {
	return pgRow{q.db.QueryRow(q.ctx, query, args...)}
}

func (q pgq) Each(query string, args []any, fn func(sqlq.Row) error) error {
	rows, err := q.db.Query(q.ctx, query, args...)
	if err != nil {
		return err
	}
	return eachRow(rows, fn)
}

// eachRow calls fn for each of rows, and closes them.
func eachRow(rows pgx.Rows, fn func(sqlq.Row) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (q pgq) Exec(query string, args ...any) (int64, error) {
	tag, err := q.db.Exec(q.ctx, query, args...)
	return tag.RowsAffected(), err
}

// pgRow reports no row as store.ErrNotFound.
type pgRow struct{ row pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// readErr classifies a failed read (wrapErr), and leaves a not-found answer
// as it is.
func readErr(op string, err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return err
	}
	return wrapErr(op, err)
}
