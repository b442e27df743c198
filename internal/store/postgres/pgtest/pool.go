package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Creating a schema is most of what a fresh PostgreSQL store costs a test:
// the migrations make some forty tables and their indexes, half a second
// and more on a loaded machine, and the suites open hundreds of stores. So
// the suites that only need an empty store (storetest, apitest) take their
// schema from a pool of this process instead: when the test ends, after its
// stores are closed, the schema's tables are emptied and its sequences
// restarted (the migrations' bookkeeping, schema_migrations, stays), and the
// next test opens a store on it with nothing to migrate. Main drops the
// pool's schemas when the tests are done.

var pool struct {
	sync.Mutex
	free []string // emptied schemas, ready for a test
	all  []string // every schema the pool made, for Main to drop
}

// Reused returns an empty schema from the pool, or a fresh one when the
// pool has none free (the store opened on it migrates it), and returns it
// to the pool, emptied, when tb ends. Call it before opening stores on the
// schema, so that it is emptied after they are closed. A test that needs a
// schema no store has ever opened (migrations, a foreign schema) uses
// Schema.
func Reused(tb testing.TB) string {
	tb.Helper()
	u := URL(tb)
	pool.Lock()
	var schema string
	if n := len(pool.free); n > 0 {
		schema, pool.free = pool.free[n-1], pool.free[:n-1]
	} else {
		b := make([]byte, 8)
		rand.Read(b)
		schema = "qp_" + hex.EncodeToString(b)
		pool.all = append(pool.all, schema)
	}
	pool.Unlock()
	tb.Cleanup(func() {
		if err := empty(u, schema); err != nil {
			// Left out of the pool, and dropped with it by Main.
			tb.Logf("schema %s not reused: %v", schema, err)
			return
		}
		pool.Lock()
		pool.free = append(pool.free, schema)
		pool.Unlock()
	})
	return schema
}

// empty deletes every row of schema's tables but schema_migrations and
// restarts its sequences, in one transaction. It needs a role that may set
// session_replication_role (the test cluster's superuser); where it fails,
// the schema is not reused.
func empty(u, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var tables, sequences []string
	rows, err := conn.Query(ctx, `SELECT c.relname::text, c.relkind = 'S' FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'S') AND c.relname <> 'schema_migrations'`, schema)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		var seq bool
		if err := rows.Scan(&name, &seq); err != nil {
			return err
		}
		id := pgx.Identifier{schema, name}.Sanitize()
		if seq {
			sequences = append(sequences, id)
		} else {
			tables = append(tables, id)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return fmt.Errorf("no tables: no store migrated it")
	}
	// DELETE, not TRUNCATE: a test leaves few rows, and TRUNCATE gives
	// every table and index a new file, which costs as much as creating
	// the schema again. The replica role skips the foreign keys' and the
	// broker's triggers, so that the order of the tables does not matter
	// and nothing is written back.
	var b strings.Builder
	b.WriteString("BEGIN; SET LOCAL session_replication_role = replica;")
	for _, t := range tables {
		b.WriteString("DELETE FROM " + t + ";")
	}
	for _, s := range sequences {
		b.WriteString("SELECT setval('" + strings.ReplaceAll(s, "'", "''") + "', 1, false);")
	}
	b.WriteString("COMMIT;")
	_, err = conn.Exec(ctx, b.String())
	return err
}

// Main runs the tests of a package that uses Reused and then drops the
// pool's schemas: call it from the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if u := os.Getenv("QUEEN_TEST_DATABASE_URL"); u != "" && len(pool.all) > 0 {
		if err := drop(u, pool.all); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: dropping the pooled schemas: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

func drop(u string, schemas []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range schemas {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema %s: %w", s, err)
		}
	}
	return nil
}
