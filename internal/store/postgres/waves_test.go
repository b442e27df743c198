//go:build !race

package postgres

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/testenv"
)

// TestRetentionWaves is the embedded engine's test of the same name on
// PostgreSQL: 200,000 messages through push, pop and ack in waves, deleted by
// retention. After each wave the test runs VACUUM (what autovacuum does, on
// time), and the tables and indexes retention deletes from must not grow by
// more than 20 % past their size after the third wave: the space deleted
// rows leave, in the heap and in the hot indexes, is reused. (Not the first:
// VACUUM frees an index page it empties only at its next run, once no
// transaction can still reach it, so the indexes hold two waves' pages
// before the first ones come back; the heap, emptied, is truncated. Usually
// the size is flat from the second wave on, but a VACUUM that ran while a
// page could still be reached leaves it for a wave more: 3.4, 3.9, then
// 6.4 MB flat to the tenth wave, in one CI run.)
func TestRetentionWaves(t *testing.T) {
	testenv.SkipUnlessLatencyRun(t, "a long test (200,000 messages through HTTP)")
	testURL(t)
	s := newTestStore(t)
	ctx := context.Background()
	apitest.RunRetentionWaves(t, s, apitest.Waves{
		Messages: 200_000, Waves: 10, Baseline: 3,
		Count: func(t testing.TB) int64 {
			var n int64
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
		Size: func(t testing.TB) int64 {
			var n int64
			for _, table := range []string{"messages", "lanes", "partitions", "dead_letters"} {
				if _, err := s.pool.Exec(ctx, "VACUUM "+table); err != nil {
					t.Fatal(err)
				}
			}
			err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('messages') + pg_total_relation_size('lanes') +
				pg_total_relation_size('partitions') + pg_total_relation_size('dead_letters')`).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
	})
}
