package transfer_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/transfer"
)

// gatedSource holds the copy's first count of the source until released.
type gatedSource struct {
	store.TransferStore
	once    sync.Once
	release chan struct{}
}

func (g *gatedSource) TransferCounts(ctx context.Context) (store.TransferCounts, error) {
	g.once.Do(func() { <-g.release })
	return g.TransferStore.TransferCounts(ctx)
}

// gatedTarget holds the copy's first write until released.
type gatedTarget struct {
	store.TransferStore
	once    sync.Once
	release chan struct{}
}

func (g *gatedTarget) ImportQueue(ctx context.Context, q store.TransferQueue) error {
	g.once.Do(func() { <-g.release })
	return g.TransferStore.ImportQueue(ctx, q)
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// waitStatus polls the service until its status is want.
func waitStatus(t *testing.T, s transfer.Service, want string) api.MigrationStatus {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		st := s.Status()
		if st.Status == want {
			return st
		}
		if st.Status == "error" || time.Now().After(deadline) {
			t.Fatalf("status %+v, want %s", st, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServicePhases: a copy started by the routes shows Queen's phases,
// "dumping" while it prepares (the source not yet counted, nothing
// written), then "restoring" while it writes, then "complete"; another
// start and a reset are refused in both phases.
func TestServicePhases(t *testing.T) {
	src := openSQLite(t)
	now := time.Now()
	storetest.PushItems(t, src, now, storetest.Item("phases", "p", 1), storetest.Item("phases", "p", 2))
	gs := &gatedSource{TransferStore: src.(store.TransferStore), release: make(chan struct{})}
	gt := &gatedTarget{TransferStore: openSQLite(t).(store.TransferStore), release: make(chan struct{})}
	s := transfer.NewService(transfer.ServiceConfig{Source: gs,
		Open: func(context.Context, string, string) (store.TransferStore, func(), error) { return gt, func() {}, nil }})
	target := api.MigrationStart{MigrationTarget: api.MigrationTarget{Host: "db", Database: "d", User: "u", Password: "pw"}}

	if st := s.Status(); st.Status != "idle" {
		t.Fatalf("status before: %+v", st)
	}
	if err := s.Start(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	refused := func(phase string) {
		t.Helper()
		if err := s.Start(context.Background(), target); !errors.Is(err, transfer.ErrRunning) {
			t.Fatalf("start while %s: %v", phase, err)
		}
		if err := s.Reset(); !errors.Is(err, transfer.ErrResetRunning) {
			t.Fatalf("reset while %s: %v", phase, err)
		}
	}
	if st := s.Status(); st.Status != "dumping" || st.TotalMessages != 0 {
		t.Fatalf("status while the source is counted: %+v, want dumping", st)
	}
	refused("dumping")
	close(gs.release)
	if st := waitStatus(t, s, "restoring"); st.TotalMessages != 2 {
		t.Fatalf("status while writing: %+v, want 2 messages to copy", st)
	}
	refused("restoring")
	close(gt.release)
	if st := waitStatus(t, s, "complete"); st.Messages != 2 || st.Error != "" {
		t.Fatalf("status at the end: %+v", st)
	}
	if err := s.Reset(); err != nil || s.Status().Status != "idle" {
		t.Fatalf("reset: %v, %+v", err, s.Status())
	}
}
