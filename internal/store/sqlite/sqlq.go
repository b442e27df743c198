package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlq"
)

// liteq runs the shared statements of sqlq on a writer transaction or the
// read-only connections.
type liteq struct {
	ctx context.Context
	db  querier
}

// readQ returns the shared statement runner of the read-only connections.
func (s *Store) readQ(ctx context.Context) sqlq.Q { return liteq{ctx, s.reader} }

// txQ returns the shared statement runner of a writer transaction.
func txQ(ctx context.Context, tx *sql.Tx) sqlq.Q { return liteq{ctx, tx} }

// q returns the shared statement runner of the job's transaction, which
// runs the statements prepared on the writer connection as prepared.
func (t *txn) q() sqlq.Q { return liteq{t.ctx, preparedOr{t}} }

// preparedOr runs a statement prepared on the writer as prepared, any other
// on the transaction.
type preparedOr struct{ t *txn }

func (p preparedOr) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if _, ok := p.t.st.all[q]; ok {
		return p.t.stmt(q).ExecContext(ctx, args...)
	}
	return p.t.tx.ExecContext(ctx, q, args...)
}

func (p preparedOr) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if _, ok := p.t.st.all[q]; ok {
		return p.t.stmt(q).QueryContext(ctx, args...)
	}
	return p.t.tx.QueryContext(ctx, q, args...)
}

func (p preparedOr) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if _, ok := p.t.st.all[q]; ok {
		return p.t.stmt(q).QueryRowContext(ctx, args...)
	}
	return p.t.tx.QueryRowContext(ctx, q, args...)
}

func (q liteq) Row(query string, args ...any) sqlq.Row {
	return liteRow{q.db.QueryRowContext(q.ctx, sqlq.SQLite(query), args...)}
}

func (q liteq) Each(query string, args []any, fn func(sqlq.Row) error) error {
	rows, err := q.db.QueryContext(q.ctx, sqlq.SQLite(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (q liteq) Exec(query string, args ...any) (int64, error) {
	res, err := q.db.ExecContext(q.ctx, sqlq.SQLite(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// liteRow reports no row as store.ErrNotFound.
type liteRow struct{ row *sql.Row }

func (r liteRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// unavailable marks a failed read of the read-only connections as an
// outage, and leaves a not-found answer as it is.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
