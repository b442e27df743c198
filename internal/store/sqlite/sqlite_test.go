package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/store/sqlite"
)

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
