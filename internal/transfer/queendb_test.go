package transfer

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store/postgres/pgtest"
)

// The fixture: a database of the real Queen broker (testdata/queen-db,
// README.md there) and what that broker delivers from it.
const (
	fixtureDump     = "testdata/queen-db/queen-db.sql.gz"
	fixtureExpected = "testdata/queen-db/expected.json"
)

// queenSchemaName matches the dump's schema names where they name a schema
// (not inside the data, which is never rewritten).
var queenSchemaName = regexp.MustCompile(`\bqueen(_streams)?([.; ])`)

// restoreQueenFixture loads the fixture's plain dump into a fresh schema of
// the test database (and <schema>_streams for Queen's second schema), with
// pgx alone: statements are run as they are, and each COPY block is sent
// with the COPY protocol. It returns a connection and the schema.
func restoreQueenFixture(t *testing.T) (*pgx.Conn, string) {
	t.Helper()
	schema := pgtest.Schema(t, "queenfix_")
	streams := schema + "_streams"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{streams}.Sanitize()+" CASCADE")
		conn.Close(context.Background())
	})
	f, err := os.Open(fixtureDump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	rename := func(line string) string {
		return queenSchemaName.ReplaceAllStringFunc(line, func(m string) string {
			sub := queenSchemaName.FindStringSubmatch(m)
			if sub[1] != "" {
				return streams + sub[2]
			}
			return schema + sub[2]
		})
	}
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var stmt strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if stmt.Len() == 0 && (line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, `\`)) {
			continue // comments, blank lines, psql's \restrict and \unrestrict
		}
		stmt.WriteString(rename(line))
		stmt.WriteByte('\n')
		if !strings.HasSuffix(line, ";") {
			continue
		}
		sql := stmt.String()
		stmt.Reset()
		if strings.HasPrefix(sql, "COPY ") {
			var data strings.Builder
			for sc.Scan() && sc.Text() != `\.` {
				data.WriteString(sc.Text())
				data.WriteByte('\n')
			}
			if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(data.String()), strings.TrimSuffix(strings.TrimSpace(sql), ";")); err != nil {
				t.Fatalf("restore %s: %v", sql, err)
			}
			continue
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("restore %s: %v", sql, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return conn, schema
}

// expected is the part of expected.json the tests read.
type expected struct {
	Counts struct {
		Queues, Partitions, Messages, DeadLetters, PartitionConsumers int64
	}
	QueueMode string
	Queues    []struct {
		Name, Namespace, Task string
		Options               map[string]any
		ConsumerGroups        []string
		Partitions            []struct {
			Name     string
			Messages []struct {
				TransactionID string
				Data          json.RawMessage
				TraceID       *string
				ProducerSub   *string
				CreatedAt     time.Time
			}
			Remaining map[string][]string
		}
	}
	DeadLetters []struct {
		Queue, Partition, ConsumerGroup, TransactionID, ErrorMessage string
		RetryCount                                                   int
	}
	Encryption struct{ Key string }
}

func readExpected(t *testing.T) *expected {
	t.Helper()
	b, err := os.ReadFile(fixtureExpected)
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}
