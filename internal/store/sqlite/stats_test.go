package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
)

// The retention history belongs to migration 008 (the queue-options
// branch): until it is merged, create its table as 008 does, and check
// that StatsRetentionSeries reads it.
func TestRetentionSeriesReadsHistory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// A second connection to the file stands for migration 008.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "queen.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m0 := storetest.T0.Truncate(time.Minute).UnixMilli()
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS retention_history (tenant TEXT NOT NULL, queue TEXT NOT NULL, kind TEXT NOT NULL,
			minute INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (tenant, queue, kind, minute)) WITHOUT ROWID`,
		`INSERT INTO retention_history VALUES
			('00000000-0000-0000-0000-000000000000', 'a', 'retention', ?1, 5),
			('00000000-0000-0000-0000-000000000000', 'b', 'retention', ?1, 2),
			('00000000-0000-0000-0000-000000000000', 'a', 'eviction', ?1 + 60000, 1),
			('0192f0a0-aaaa-7000-8000-00000000000a', 'a', 'retention', ?1, 100)`,
	} {
		if _, err := db.ExecContext(ctx, q, m0); err != nil {
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
