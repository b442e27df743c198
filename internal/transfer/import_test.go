package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/crypt"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/testbroker"
	"github.com/queen-go/queen/internal/transfer"
	"github.com/queen-go/queen/internal/transfer/endpoint"
)

// engine opens a fresh, empty store of one engine for a test.
type engine struct {
	name string
	open func(t *testing.T) store.Store
}

var engines = []engine{
	{"sqlite", func(t *testing.T) store.Store {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: filepath.Join(t.TempDir(), "data")})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"postgres", func(t *testing.T) store.Store {
		st, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.URL(t),
			Schema: pgtest.Schema(t, "transfer_"), PoolSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// popped is a message of a pop's answer.
type popped struct {
	TransactionID string          `json:"transactionId"`
	TraceID       *string         `json:"traceId"`
	ProducerSub   *string         `json:"producerSub"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     time.Time       `json:"createdAt"`
}

// popAllHTTP pops everything a group has still to read from one partition,
// acknowledging as it goes.
func popAllHTTP(t *testing.T, base, queue, partition, group string) []popped {
	t.Helper()
	var out []popped
	for {
		u := fmt.Sprintf("%s/api/v1/pop/queue/%s/partition/%s?batch=10000&autoAck=true&consumerGroup=%s",
			base, url.PathEscape(queue), url.PathEscape(partition), url.QueryEscape(group))
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusNoContent {
			return out
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("pop %s/%s %s: %d %s", queue, partition, group, res.StatusCode, body)
		}
		var r struct{ Messages []popped }
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		out = append(out, r.Messages...)
	}
}

// The fixture made by Queen's broker, imported into each engine, is served
// by this broker exactly as Queen serves it: for every queue, partition and
// group, popping delivers the messages expected.json lists as remaining, in
// its order, with their fields and payloads (the sealed ones opened with the
// same key); the DLQ holds the six entries with their errors and retry
// counts; the options are Queen's.
func TestImportQueenFixture(t *testing.T) {
	conn, schema := transfer.RestoreQueenFixture(t)
	want := transfer.ReadExpected(t)
	keys, err := crypt.New(want.Encryption.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			st := e.open(t)
			var calls int
			rep, err := transfer.CopyQueen(ctx, &transfer.QueenReader{DB: conn, Schema: schema}, st.(store.TransferStore),
				transfer.Options{Batch: 7, Progress: func(transfer.Progress) { calls++ }})
			if err != nil {
				st.Close()
				t.Fatal(err)
			}
			if !rep.Match() || rep[2].Source != want.Counts.Messages || rep[0].Source != want.Counts.Queues ||
				rep[1].Source != want.Counts.Partitions || rep[4].Source != want.Counts.DeadLetters {
				t.Fatalf("report %+v, want every count matched and %+v", rep, want.Counts)
			}
			if calls == 0 {
				t.Error("no progress was reported")
			}
			// A second copy into the same target is refused.
			if _, err := transfer.CopyQueen(ctx, &transfer.QueenReader{DB: conn, Schema: schema}, st.(store.TransferStore), transfer.Options{}); err == nil {
				t.Fatal("a copy into a target holding queues succeeded")
			}
			base := testbroker.Serve(t, server.Config{Encryption: keys}, st)

			var poppedN, wantN int
			for _, q := range want.Queues {
				d, err := st.QueueGet(ctx, &store.QueueGetParams{Name: q.Name, Limit: 1})
				if err != nil {
					t.Fatal(err)
				}
				got := d.Options
				for k, v := range map[string]int{"leaseTime": got.LeaseTime, "retryLimit": got.RetryLimit,
					"retryDelay": got.RetryDelay, "priority": got.Priority, "maxSize": got.MaxSize, "ttl": got.TTL} {
					if w, ok := q.Options[k].(float64); ok && int(w) != v {
						t.Errorf("queue %s: %s %d, want %v", q.Name, k, v, w)
					}
				}
				for _, p := range q.Partitions {
					byTxn := map[string]int{}
					for i, m := range p.Messages {
						byTxn[m.TransactionID] = i
					}
					for _, g := range q.ConsumerGroups {
						ms := popAllHTTP(t, base, q.Name, p.Name, g)
						poppedN, wantN = poppedN+len(ms), wantN+len(p.Remaining[g])
						txns := make([]string, len(ms))
						for i, m := range ms {
							txns[i] = m.TransactionID
							wm := p.Messages[byTxn[m.TransactionID]]
							if !transfer.SameJSON(m.Data, wm.Data) || transfer.Deref(m.TraceID) != transfer.Deref(wm.TraceID) ||
								transfer.Deref(m.ProducerSub) != transfer.Deref(wm.ProducerSub) ||
								!m.CreatedAt.Equal(wm.CreatedAt.Truncate(time.Millisecond)) {
								t.Fatalf("%s/%s %s: %+v, want %+v", q.Name, p.Name, m.TransactionID, m, wm)
							}
						}
						if fmt.Sprint(txns) != fmt.Sprint(p.Remaining[g]) && !(len(txns) == 0 && len(p.Remaining[g]) == 0) {
							t.Errorf("%s/%s group %s: popped %v, want %v", q.Name, p.Name, g, txns, p.Remaining[g])
						}
					}
				}
			}

			if poppedN != wantN || wantN == 0 {
				t.Fatalf("popped %d messages in all, want %d", poppedN, wantN)
			}
			t.Logf("popped %d messages as Queen would", poppedN)
			res, err := http.Get(base + "/api/v1/dlq?limit=100")
			if err != nil {
				t.Fatal(err)
			}
			var dlq struct {
				Messages []struct {
					Queue, Partition, ConsumerGroup, TransactionID, ErrorMessage string
					RetryCount                                                   int
				}
			}
			err = json.NewDecoder(res.Body).Decode(&dlq)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			wantDead := map[string]bool{}
			for _, d := range want.DeadLetters {
				wantDead[fmt.Sprintf("%s/%s/%s/%s/%s/%d", d.Queue, d.Partition, d.ConsumerGroup, d.TransactionID, d.ErrorMessage, d.RetryCount)] = true
			}
			if len(dlq.Messages) != len(wantDead) {
				t.Fatalf("DLQ %+v, want %v", dlq.Messages, wantDead)
			}
			for _, d := range dlq.Messages {
				if k := fmt.Sprintf("%s/%s/%s/%s/%s/%d", d.Queue, d.Partition, d.ConsumerGroup, d.TransactionID, d.ErrorMessage, d.RetryCount); !wantDead[k] {
					t.Errorf("dead letter %s not expected", k)
				}
			}
		})
	}
}

// The command's path: a PostgreSQL source holding Queen's tables is
// recognised and read as Queen's, into a folder that does not exist yet.
func TestMigrateRecognisesQueen(t *testing.T) {
	_, schema := transfer.RestoreQueenFixture(t)
	dir := filepath.Join(t.TempDir(), "new")
	rep, err := endpoint.Migrate(context.Background(), endpoint.Parse(pgtest.URL(t), schema),
		endpoint.Parse(dir, ""), transfer.Options{})
	if err != nil || !rep.Match() || rep[2].Target != 2060 {
		t.Fatalf("Migrate = %+v, %v", rep, err)
	}
	// Queen's schema is not a target.
	if _, err := endpoint.Migrate(context.Background(), endpoint.Parse(dir, ""),
		endpoint.Parse(pgtest.URL(t), schema), transfer.Options{}); !errors.Is(err, transfer.ErrTargetNotEmpty) {
		t.Fatalf("Migrate into Queen's schema: %v, want a refusal", err)
	}
}
