package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
)

// openTestStore opens an embedded store in a fresh folder, closed with the test.
func openTestStore(t *testing.T, cfg sqlite.Config) store.Store {
	t.Helper()
	cfg.Dir = t.TempDir()
	s, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTestStore(t, sqlite.Config{}) })
}

// TestStoreSmallCache runs what goes through the name → id caches with
// caches of two entries: dropped entries are read again, never guessed.
func TestStoreSmallCache(t *testing.T) {
	storetest.RunSmallCache(t, func(t *testing.T) store.Store {
		return openTestStore(t, sqlite.Config{NameCacheSize: storetest.SmallNameCache})
	})
}

// TestSecondOpenRefused: a second broker on the same data folder must not
// start; once the first closes, the folder is free again.
func TestSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "in use by another queen broker") ||
		!strings.Contains(err.Error(), "QUEEN_DATA_DIR") {
		t.Fatalf("second Open: %v, want a refusal naming the folder and QUEEN_DATA_DIR", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	again.Close()
}
