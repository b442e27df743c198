package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store/storetest"
)

func TestSweepDeadLetters(t *testing.T) {
	testURL(t)
	s := newTestStore(t)
	storetest.RunSweepDeadLetters(t, s, func(t *testing.T) []storetest.DeadLetterRow {
		rows, _ := s.pool.Query(context.Background(), `SELECT consumer_group, error FROM dead_letters`)
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storetest.DeadLetterRow, error) {
			var d storetest.DeadLetterRow
			return d, r.Scan(&d.Group, &d.Error)
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
}
