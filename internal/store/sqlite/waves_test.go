//go:build !race

package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/testenv"
)

// TestRetentionWaves takes 200,000 messages through push, pop and ack in
// waves on a queue whose consumed messages retention deletes after a
// second: the database ends empty and no more than 20 % larger than after
// the first wave (freed pages are reused). A long test, built without the
// race detector and run in CI's latency step.
func TestRetentionWaves(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a long test (200,000 messages through HTTP)")
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	db := readOnly(t, dir)
	apitest.RunRetentionWaves(t, st, apitest.Waves{
		Messages: 200_000, Waves: 10,
		Count: func(t testing.TB) int64 {
			var n int64
			if err := db.QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
		// The database file and its write-ahead log: both are disk the
		// broker holds.
		Size: func(t testing.TB) int64 {
			var total int64
			for _, name := range []string{"queen.db", "queen.db-wal"} {
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
					total += fi.Size()
				}
			}
			return total
		},
	})
}
