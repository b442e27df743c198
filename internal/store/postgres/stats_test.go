package postgres

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/storetest"
)

// The retention history belongs to migration 008 (the queue-options
// branch): until it is merged, create its table as 008 does, and check
// that StatsRetentionSeries reads it.
func TestRetentionSeriesReadsHistory(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	m0 := storetest.T0.Truncate(time.Minute).UnixMilli()
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS retention_history (tenant text COLLATE "C" NOT NULL,
			queue text COLLATE "C" NOT NULL, kind text COLLATE "C" NOT NULL, minute bigint NOT NULL,
			count bigint NOT NULL, PRIMARY KEY (tenant, queue, kind, minute))`,
		`INSERT INTO retention_history VALUES
			('00000000-0000-0000-0000-000000000000', 'a', 'retention', $1, 5),
			('00000000-0000-0000-0000-000000000000', 'b', 'retention', $1, 2),
			('00000000-0000-0000-0000-000000000000', 'a', 'eviction', $1 + 60000, 1),
			('0192f0a0-aaaa-7000-8000-00000000000a', 'a', 'retention', $1, 100)`,
	} {
		args := []any{m0}
		if q[0] == 'C' {
			args = nil
		}
		if _, err := s.pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.StatsRetentionSeries(ctx, &store.StatsSeriesParams{From: time.UnixMilli(m0),
		To: time.UnixMilli(m0).Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != string(store.RetentionExpired) || got[0].Messages != 7 || got[0].Events != 2 ||
		got[1].Kind != string(store.RetentionEviction) || got[1].Messages != 1 {
		t.Errorf("history: %+v", got)
	}
	got, err = s.StatsRetentionSeries(ctx, &store.StatsSeriesParams{From: time.UnixMilli(m0),
		To: time.UnixMilli(m0).Add(time.Hour), Queues: []string{"b"}, Bucket: time.Hour})
	if err != nil || len(got) != 1 || got[0].Messages != 2 {
		t.Errorf("queue b: %+v, %v", got, err)
	}
}

// Two brokers sharing a schema each write their own rows, and the series
// add them up.
func TestStatsTwoBrokers(t *testing.T) {
	schema := newSchema(t)
	cfg := func(worker string) server.Config {
		return server.Config{Version: "0.0.0-two", WorkerID: worker, MetricsSampleEvery: 10 * time.Millisecond,
			MetricsAggregateEvery: 50 * time.Millisecond}
	}
	a := apitest.StartServer(t, openStore(t, schema, 4), cfg("a"))
	b := apitest.StartServer(t, openStore(t, schema, 4), cfg("b"))
	push := func(base string, n int) {
		t.Helper()
		body := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"queue":"shared","payload":1},`, n), ",") + `]}`
		resp, err := http.Post(base+"/api/v1/push", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("push: %d", resp.StatusCode)
		}
	}
	push(a, 2)
	push(b, 3)
	var wm struct {
		Workers []struct{ WorkerID string }
		Summary struct{ TotalPushMessages int64 }
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(a + "/api/v1/analytics/worker-metrics")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&wm)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(wm.Workers) == 2 && wm.Summary.TotalPushMessages == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker-metrics: %+v, want brokers a and b and 5 pushes", wm)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if wm.Workers[0].WorkerID != "a" || wm.Workers[1].WorkerID != "b" {
		t.Errorf("workers %+v", wm.Workers)
	}
	var st struct {
		Throughput []struct{ Ingested int64 }
	}
	resp, err := http.Get(b + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	var ingested int64
	for _, p := range st.Throughput {
		ingested += p.Ingested
	}
	if ingested != 5 {
		t.Errorf("status on broker b counts %d pushes, want both brokers' 5", ingested)
	}
}
