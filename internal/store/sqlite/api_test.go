package sqlite_test

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// openTB opens a fresh embedded store in a temporary folder, closed at the
// end of the test.
func openTB(tb testing.TB) store.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// TestAPI runs the black-box HTTP suite on the embedded engine.
func TestAPI(t *testing.T) {
	apitest.Run(t, func(t *testing.T) store.Store { return openTB(t) })
}

func BenchmarkPush(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run("batch="+itoa(batch), func(b *testing.B) { apitest.BenchPush(b, openTB, batch) })
	}
}

func BenchmarkPopAck(b *testing.B) {
	apitest.BenchPopAck(b, openTB)
}

func itoa(n int) string {
	switch n {
	case 1:
		return "1"
	case 10:
		return "10"
	}
	return "100"
}
