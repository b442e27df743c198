package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLimitModes measures each limit briefly: rows are written in every
// mode and table shape the database supports, and COPY on SQLite, an
// unknown mode or table are refused with a message saying why.
func TestLimitModes(t *testing.T) {
	ctx := context.Background()
	base := LimitConfig{Batch: 10, PayloadBytes: 64, Partitions: 4, Clients: 2, Duration: 200 * time.Millisecond}
	run := func(target, mode, table string) (*LimitResult, error) {
		cfg := base
		cfg.Target, cfg.Mode, cfg.Table = target, mode, table
		return MeasureLimit(ctx, cfg)
	}
	sq := "sqlite:" + t.TempDir()
	if r, err := run(sq, "", ""); err != nil || r.Rows == 0 || r.Mode != LimitInsert {
		t.Fatalf("sqlite insert limit: %+v, %v", r, err)
	}
	if _, err := run(sq, LimitCopy, ""); err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("copy on SQLite: %v", err)
	}
	if _, err := run(sq, "bulk", ""); err == nil {
		t.Error("unknown mode accepted")
	}
	url := os.Getenv("QUEEN_TEST_DATABASE_URL")
	if url == "" {
		t.Log("PostgreSQL modes not run: QUEEN_TEST_DATABASE_URL is not set")
		return
	}
	for _, table := range []string{LimitTableQueen, LimitTableBroker} {
		for _, mode := range []string{LimitInsert, LimitCopy} {
			r, err := run(url, mode, table)
			if err != nil || r.Rows == 0 || r.Mode != mode || r.Table != table {
				t.Errorf("%s into the %s table: %+v, %v", mode, table, r, err)
			}
		}
	}
	if _, err := run(url, LimitInsert, "wide"); err == nil {
		t.Error("unknown table accepted")
	}
}
