package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the embedded engine's driver
)

// LimitConfig describes a raw-insert measurement: the same payloads, in the
// same batches, written straight into the database the broker uses, with
// the same durability but none of the broker's work. Its rate is the
// ceiling the broker's push rate is reported against.
type LimitConfig struct {
	// Target is "sqlite:<dir>" (a scratch file in dir, WAL and
	// synchronous=FULL like the embedded engine) or a PostgreSQL URL
	// ("postgres://…"; a scratch table, synchronous_commit as configured on
	// the server).
	Target       string
	Batch        int           // rows per INSERT (the push batch)
	PayloadBytes int           // payload size (the -payload flag)
	Partitions   int           // partition ids the rows spread over
	Clients      int           // concurrent writers (PostgreSQL; SQLite has one writer)
	Duration     time.Duration // how long to insert
	// Mode is how rows are written: LimitInsert (one multi-row INSERT per
	// batch, the default) or LimitCopy (one COPY per batch, PostgreSQL only:
	// the fastest way into a table, and what a push could at best reach).
	Mode string
	// Table is the PostgreSQL scratch table's shape: LimitTableQueen (Queen's
	// messages table, the default) or LimitTableBroker (the PostgreSQL
	// engine's own messages table).
	Table string
}

// Limit modes and PostgreSQL table shapes.
const (
	LimitInsert      = "insert"
	LimitCopy        = "copy"
	LimitTableQueen  = "queen"
	LimitTableBroker = "broker"
)

// LimitResult is the measured ceiling.
type LimitResult struct {
	Engine     string  `json:"engine"`          // "sqlite" or "postgres"
	Mode       string  `json:"mode"`            // "insert" or "copy"
	Table      string  `json:"table,omitempty"` // PostgreSQL: "queen" or "broker"
	Target     string  `json:"target"`          // with any password removed
	Durability string  `json:"durability"`
	Batch      int     `json:"batch"`
	Clients    int     `json:"clients"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_s"`
	MBPerSec   float64 `json:"mb_per_s"`
}

// maxRowsPerStatement keeps a multi-row INSERT under both databases' bind
// parameter limits (SQLite 32766, PostgreSQL 65535); larger batches are
// several statements in one transaction.
const maxRowsPerStatement = 1000

// MeasureLimit runs the raw-insert measurement.
func MeasureLimit(ctx context.Context, cfg LimitConfig) (*LimitResult, error) {
	cfg.Batch = max(cfg.Batch, 1)
	cfg.Partitions = max(cfg.Partitions, 1)
	cfg.Clients = max(cfg.Clients, 1)
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = LimitInsert
	case LimitInsert, LimitCopy:
	default:
		return nil, fmt.Errorf("limit mode %q: want insert or copy", cfg.Mode)
	}
	if cfg.Table == "" {
		cfg.Table = LimitTableQueen
	}
	switch {
	case strings.HasPrefix(cfg.Target, "sqlite:"):
		if cfg.Mode == LimitCopy {
			return nil, errors.New("the copy limit needs PostgreSQL: SQLite has no COPY (its insert limit is its limit)")
		}
		return limitSQLite(ctx, cfg, strings.TrimPrefix(cfg.Target, "sqlite:"))
	case strings.HasPrefix(cfg.Target, "postgres://"), strings.HasPrefix(cfg.Target, "postgresql://"):
		return limitPostgres(ctx, cfg)
	default:
		return nil, fmt.Errorf("limit target %q: want sqlite:<dir> or postgres://…", cfg.Target)
	}
}

// limitRows generates the rows writers insert: the payloads producers send.
type limitRows struct {
	run        string
	size       int
	partitions int
}

func (g limitRows) row(writer int, seq int64) (partition int, txn, payload string) {
	partition = PartitionFor(writer, seq, g.partitions)
	txn = string(appendTransactionID(nil, g.run, writer, seq))
	payload = string(appendPayload(nil, g.run, writer, seq, time.Now().UnixNano(), g.size))
	return
}

// insertLoop runs clients writers, each calling insert(writer, firstSeq)
// with consecutive batches until the duration passes; it returns the rows
// written and the elapsed time.
func insertLoop(ctx context.Context, cfg LimitConfig, insert func(ctx context.Context, writer int, first int64) error) (int64, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rows atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for w := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(0); ctx.Err() == nil && time.Now().Before(deadline); seq += int64(cfg.Batch) {
				if err := insert(ctx, w, seq); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				rows.Add(int64(cfg.Batch))
			}
		}()
	}
	wg.Wait()
	return rows.Load(), time.Since(start), firstErr
}

func finishLimit(res *LimitResult, rows int64, elapsed time.Duration, payloadSize int) *LimitResult {
	res.Rows = rows
	res.Seconds = elapsed.Seconds()
	if elapsed > 0 {
		res.RowsPerSec = float64(rows) / elapsed.Seconds()
		res.MBPerSec = res.RowsPerSec * float64(payloadSize) / 1e6
	}
	return res
}

// limitSQLite inserts into a scratch copy of the embedded engine's messages
// table (same columns and indexes) with the engine's pragmas. SQLite has a
// single writer, so there is one writer here too: more would only queue on
// the write lock.
func limitSQLite(ctx context.Context, cfg LimitConfig, dir string) (*LimitResult, error) {
	if dir == "" {
		return nil, errors.New("sqlite limit: need a directory (sqlite:/path/to/dir)")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("sqlite limit: %w", err)
	}
	run := newRunID()
	path := filepath.Join(dir, "queen-bench-limit-"+run+".db")
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}()
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=busy_timeout(10000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite limit: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE messages (
		seq INTEGER PRIMARY KEY, partition_id INTEGER NOT NULL, id TEXT NOT NULL,
		transaction_id TEXT NOT NULL, trace_id TEXT, producer_sub TEXT,
		payload TEXT NOT NULL, created_at INTEGER NOT NULL);
		CREATE INDEX messages_partition ON messages (partition_id);
		CREATE UNIQUE INDEX messages_txn_partition ON messages (transaction_id, partition_id);`); err != nil {
		return nil, fmt.Errorf("sqlite limit: create table: %w", err)
	}
	var mode, syncMode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, fmt.Errorf("sqlite limit: %w", err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil {
		return nil, fmt.Errorf("sqlite limit: %w", err)
	}
	gen := limitRows{run: run, size: cfg.PayloadBytes, partitions: cfg.Partitions}
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	insertSQL := func(rows int) string {
		var b strings.Builder
		b.WriteString("INSERT INTO messages (partition_id, id, transaction_id, trace_id, producer_sub, payload, created_at) VALUES ")
		for i := range rows {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,NULL,NULL,?,?)")
		}
		return b.String()
	}
	// Prepare every statement size up front: with one connection, preparing
	// inside a transaction on db would wait for the connection forever.
	for _, n := range []int{min(cfg.Batch, maxRowsPerStatement), cfg.Batch % maxRowsPerStatement} {
		if n == 0 || stmts[n] != nil {
			continue
		}
		st, err := db.PrepareContext(ctx, insertSQL(n))
		if err != nil {
			return nil, fmt.Errorf("sqlite limit: prepare: %w", err)
		}
		stmts[n] = st
	}
	cfg.Clients = 1
	args := make([]any, 0, 5*min(cfg.Batch, maxRowsPerStatement))
	rows, elapsed, err := insertLoop(ctx, cfg, func(ctx context.Context, w int, first int64) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		now := time.Now().UnixMilli()
		for off := 0; off < cfg.Batch; off += maxRowsPerStatement {
			n := min(maxRowsPerStatement, cfg.Batch-off)
			st := stmts[n]
			args = args[:0]
			for i := range n {
				part, txn, pl := gen.row(w, first+int64(off+i))
				args = append(args, part+1, uuid.Must(uuid.NewV7()).String(), txn, pl, now)
			}
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("sqlite limit: %w", err)
	}
	res := &LimitResult{
		Engine: "sqlite", Mode: LimitInsert, Target: "sqlite:" + dir, Batch: cfg.Batch, Clients: 1,
		Durability: fmt.Sprintf("journal_mode=%s synchronous=%s", mode, sqliteSyncName(syncMode)),
	}
	return finishLimit(res, rows, elapsed, len(appendPayload(nil, run, 0, 0, time.Now().UnixNano(), cfg.PayloadBytes))), nil
}

func sqliteSyncName(v string) string {
	switch v {
	case "0":
		return "OFF"
	case "1":
		return "NORMAL"
	case "2":
		return "FULL"
	case "3":
		return "EXTRA"
	}
	return v
}

// pgLimitTable is the scratch table the PostgreSQL limit writes: its DDL
// (with %[1]s for the table name), its columns and one row's values.
type pgLimitTable struct {
	ddl     string
	columns []string
	row     func(w int, seq int64) []any
}

// pgLimitTables are the table shapes: Queen's messages table (uuid key,
// jsonb payload, unique (partition, transaction id), index (partition,
// created_at, id)), or the PostgreSQL engine's own (bigint partition and
// offset as the key, unique (partition, transaction id), bytea payload).
func pgLimitTables(cfg LimitConfig, gen limitRows) map[string]pgLimitTable {
	partIDs := make([][16]byte, cfg.Partitions)
	for i := range partIDs {
		partIDs[i] = uuid.New()
	}
	return map[string]pgLimitTable{
		LimitTableQueen: {
			ddl: `CREATE TABLE %[1]s (
				id uuid PRIMARY KEY, transaction_id varchar(255) NOT NULL, partition_id uuid NOT NULL,
				payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
				CREATE UNIQUE INDEX %[1]s_txn ON %[1]s (partition_id, transaction_id);
				CREATE INDEX %[1]s_order ON %[1]s (partition_id, created_at, id);`,
			columns: []string{"id", "transaction_id", "partition_id", "payload"},
			row: func(w int, seq int64) []any {
				part, txn, pl := gen.row(w, seq)
				// [16]byte encodes as uuid; a string goes into jsonb as is.
				return []any{[16]byte(uuid.Must(uuid.NewV7())), txn, partIDs[part], pl}
			},
		},
		LimitTableBroker: {
			ddl: `CREATE TABLE %[1]s (
				partition_id bigint NOT NULL, seq bigint NOT NULL, id text NOT NULL,
				transaction_id text COLLATE "C" NOT NULL, trace_id text, producer_sub text,
				payload bytea NOT NULL, created_at bigint NOT NULL, PRIMARY KEY (partition_id, seq));
				CREATE UNIQUE INDEX %[1]s_txn ON %[1]s (partition_id, transaction_id);`,
			columns: []string{"partition_id", "seq", "id", "transaction_id", "payload", "created_at"},
			row: func(w int, seq int64) []any {
				part, txn, pl := gen.row(w, seq)
				// Offsets unique per partition across writers.
				return []any{int64(part + 1), seq*int64(cfg.Clients) + int64(w), uuid.Must(uuid.NewV7()).String(),
					txn, []byte(pl), time.Now().UnixMilli()}
			},
		},
	}
}

// limitPostgres writes into a scratch table (Queen's shape or the broker's,
// see pgLimitTables) from Clients connections, each sending one multi-row
// INSERT (or one COPY in copy mode) per batch in its own transaction.
// synchronous_commit is left as the server has it, which is what the
// broker gets.
func limitPostgres(ctx context.Context, cfg LimitConfig) (*LimitResult, error) {
	run := newRunID()
	table := "queen_bench_limit_" + run
	gen := limitRows{run: run, size: cfg.PayloadBytes, partitions: cfg.Partitions}
	shape, ok := pgLimitTables(cfg, gen)[cfg.Table]
	if !ok {
		return nil, fmt.Errorf("limit table %q: want queen or broker", cfg.Table)
	}
	admin, err := pgx.Connect(ctx, cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("postgres limit: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, fmt.Sprintf(shape.ddl, table)); err != nil {
		return nil, fmt.Errorf("postgres limit: create table: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		admin.Exec(dctx, "DROP TABLE IF EXISTS "+table)
	}()
	var syncCommit string
	if err := admin.QueryRow(ctx, "SHOW synchronous_commit").Scan(&syncCommit); err != nil {
		return nil, fmt.Errorf("postgres limit: %w", err)
	}
	conns := make([]*pgx.Conn, cfg.Clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	for i := range conns {
		if conns[i], err = pgx.Connect(ctx, cfg.Target); err != nil {
			return nil, fmt.Errorf("postgres limit: %w", err)
		}
	}
	cols := len(shape.columns)
	insertSQL := func(rows int) string {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " (" + strings.Join(shape.columns, ", ") + ") VALUES ")
		for i := range rows {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			for c := range cols {
				if c > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "$%d", cols*i+c+1)
			}
			b.WriteByte(')')
		}
		return b.String()
	}
	sqlBySize := sync.Map{}
	sqlFor := func(n int) string {
		if s, ok := sqlBySize.Load(n); ok {
			return s.(string)
		}
		s := insertSQL(n)
		sqlBySize.Store(n, s)
		return s
	}
	rows, elapsed, err := insertLoop(ctx, cfg, func(ctx context.Context, w int, first int64) error {
		conn := conns[w]
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if cfg.Mode == LimitCopy {
			rows := make([][]any, cfg.Batch)
			for i := range rows {
				rows[i] = shape.row(w, first+int64(i))
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, shape.columns, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
		for off := 0; off < cfg.Batch; off += maxRowsPerStatement {
			n := min(maxRowsPerStatement, cfg.Batch-off)
			args := make([]any, 0, cols*n)
			for i := range n {
				args = append(args, shape.row(w, first+int64(off+i))...)
			}
			if _, err := tx.Exec(ctx, sqlFor(n), args...); err != nil {
				return err
			}
		}
		return tx.Commit(ctx)
	})
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("postgres limit: %w", err)
	}
	res := &LimitResult{
		Engine: "postgres", Mode: cfg.Mode, Table: cfg.Table, Target: redactURL(cfg.Target), Batch: cfg.Batch,
		Clients: cfg.Clients, Durability: "synchronous_commit=" + syncCommit,
	}
	return finishLimit(res, rows, elapsed, len(appendPayload(nil, run, 0, 0, time.Now().UnixNano(), cfg.PayloadBytes))), nil
}

// redactURL drops a password from a connection URL before it is printed.
func redactURL(s string) string {
	cfg, err := pgx.ParseConfig(s)
	if err != nil {
		return "postgres://…"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}
