package sqlite_test

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("sqlite.Open: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	})
}
