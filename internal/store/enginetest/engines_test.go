package enginetest_test

import (
	"testing"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/store/enginetest"
	"github.com/queen-go/queen/internal/store/storetest"
)

// TestStore runs the driver conformance suite on every engine.
func TestStore(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		storetest.Run(t, e.Stores(enginetest.Options{}))
	})
}

// TestStoreSmallCache runs what goes through the name → id caches with
// caches of two entries: dropped entries are read again, never guessed.
func TestStoreSmallCache(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		storetest.RunSmallCache(t, e.Stores(enginetest.Options{NameCacheSize: storetest.SmallNameCache}))
	})
}

// TestAPI runs the black-box HTTP suite on every engine.
func TestAPI(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		apitest.Run(t, e.Stores(enginetest.Options{}))
	})
}

// TestSweepDeadLetters: retention's sweep of the dead-letter queue, read
// back from the engine's own table.
func TestSweepDeadLetters(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, e enginetest.Engine) {
		h := e.Open(t, enginetest.Options{})
		storetest.RunSweepDeadLetters(t, h.Store, func(t *testing.T) []storetest.DeadLetterRow {
			rows, err := h.SQL.Query(`SELECT consumer_group, error FROM dead_letters`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []storetest.DeadLetterRow
			for rows.Next() {
				var r storetest.DeadLetterRow
				if err := rows.Scan(&r.Group, &r.Error); err != nil {
					t.Fatal(err)
				}
				out = append(out, r)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		})
	})
}
