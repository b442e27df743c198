package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// beginRelaxedStmts open a transaction whose commit does not wait for its
// WAL flush (see relaxed). lazyTx sends them in the same pipeline as the
// transaction's first statement.
var beginRelaxedStmts = []string{"BEGIN", "SET LOCAL synchronous_commit = off"}

// lazyTx is a pgx.Tx that saves the round trip of BEGIN: the statements
// opening the transaction go out in one pipeline with its first statement,
// and commitWith sends the transaction's last writes in one pipeline with
// COMMIT. A pop is thus two round trips: BEGIN + claim and read, then lane
// writes + COMMIT.
type lazyTx struct {
	conn    *pgxpool.Conn
	begin   []string
	started bool // the begin statements were sent
	closed  bool
}

var _ pgx.Tx = (*lazyTx)(nil)

func newLazyTx(conn *pgxpool.Conn, begin []string) *lazyTx {
	return &lazyTx{conn: conn, begin: begin}
}

// start opens the transaction on its own, for the methods that cannot
// carry it in a pipeline.
func (t *lazyTx) start(ctx context.Context) error {
	if t.started {
		return nil
	}
	t.started = true
	b := &pgx.Batch{}
	for _, s := range t.begin {
		b.Queue(s)
	}
	return t.conn.SendBatch(ctx, b).Close()
}

// Begin is not supported: no caller nests transactions.
func (t *lazyTx) Begin(context.Context) (pgx.Tx, error) {
	return nil, errors.New("postgres: nested transactions are not supported")
}

// SendBatch sends b, preceded by the begin statements if not sent yet.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.started {
		return t.conn.SendBatch(ctx, b)
	}
	t.started = true
	nb := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.begin)+b.Len())}
	for _, s := range t.begin {
		nb.Queue(s)
	}
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	return &skipResults{br: t.conn.SendBatch(ctx, nb), skip: len(t.begin), tx: t}
}

// Query runs sql, in one pipeline with the begin statements if not sent yet.
func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.started {
		return t.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return errRows{err}, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is Query for one row.
func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.started {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	rows, _ := t.Query(ctx, sql, args...)
	return oneRow{rows}
}

// Exec runs sql, in one pipeline with the begin statements if not sent yet.
func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.started {
		return t.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// CopyFrom opens the transaction first.
func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.start(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, cols, src)
}

// Prepare opens the transaction first.
func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	return t.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is not supported.
func (t *lazyTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Conn returns the underlying connection.
func (t *lazyTx) Conn() *pgx.Conn { return t.conn.Conn() }

// Commit commits and releases the connection (a connection left inside a
// transaction by an error is destroyed by the pool).
func (t *lazyTx) Commit(ctx context.Context) error {
	return t.commitWith(ctx, nil)
}

// commitWith sends the statements of b (if any) and COMMIT in one pipeline.
// If a statement fails, the transaction is rolled back.
func (t *lazyTx) commitWith(ctx context.Context, b *pgx.Batch) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	if !t.started && (b == nil || b.Len() == 0) {
		t.closed = true
		t.conn.Release()
		return nil
	}
	nb := &pgx.Batch{}
	if b != nil {
		nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	}
	nb.Queue("COMMIT")
	br := t.SendBatch(ctx, nb)
	var tag pgconn.CommandTag
	var err error
	for range nb.Len() {
		if tag, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, t.Rollback(context.WithoutCancel(ctx)))
	}
	t.closed = true
	t.conn.Release()
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback rolls back (if anything was sent) and releases the connection.
func (t *lazyTx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	defer t.conn.Release()
	if !t.started || t.conn.Conn().IsClosed() || t.conn.Conn().PgConn().TxStatus() == 'I' {
		return nil
	}
	_, err := t.conn.Exec(ctx, "ROLLBACK")
	return err
}

// skipResults hides the results of the begin statements sent ahead of a
// batch.
type skipResults struct {
	tx   *lazyTx
	br   pgx.BatchResults
	skip int
	err  error
}

func (r *skipResults) consume() error {
	for ; r.skip > 0 && r.err == nil; r.skip-- {
		if _, err := r.br.Exec(); err != nil {
			r.err = err
		}
	}
	return r.err
}

func (r *skipResults) Exec() (pgconn.CommandTag, error) {
	if err := r.consume(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.br.Exec()
}

func (r *skipResults) Query() (pgx.Rows, error) {
	if err := r.consume(); err != nil {
		return errRows{err}, err
	}
	return r.br.Query()
}

func (r *skipResults) QueryRow() pgx.Row {
	if err := r.consume(); err != nil {
		return oneRow{errRows{err}}
	}
	return r.br.QueryRow()
}

func (r *skipResults) Tx() pgx.Tx { return r.tx }

func (r *skipResults) Close() error {
	err := r.consume()
	if cerr := r.br.Close(); cerr != nil {
		return cerr
	}
	return err
}

// batchRows are the rows of a one-statement batch; closing them closes the
// batch, whose error they then report.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	err    error
	closed bool
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// oneRow is a pgx.Row over rows.
type oneRow struct{ rows pgx.Rows }

func (r oneRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// errRows are rows that failed before the first one.
type errRows struct{ err error }

func (e errRows) Close()                                       {}
func (e errRows) Err() error                                   { return e.err }
func (e errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (e errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (e errRows) Next() bool                                   { return false }
func (e errRows) Scan(...any) error                            { return e.err }
func (e errRows) Values() ([]any, error)                       { return nil, e.err }
func (e errRows) RawValues() [][]byte                          { return nil }
func (e errRows) Conn() *pgx.Conn                              { return nil }
func (e errRows) TypeMap() *pgtype.Map                         { return nil }
