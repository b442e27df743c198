package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupCommand runs `queen backup` as a user would: the data folder
// comes from QUEEN_DATA_DIR, a missing database is an error (exit 1, not
// "unreachable"), and a PostgreSQL configuration is refused.
func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	var out, errOut bytes.Buffer

	err := run(context.Background(), []string{"backup", filepath.Join(dir, "b")},
		env(map[string]string{"QUEEN_DATA_DIR": filepath.Join(dir, "none")}), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no embedded database") {
		t.Fatalf("backup of a missing database: %v", err)
	}
	if code := exitCode(err); code != exitError {
		t.Fatalf("a missing database exits %d, want %d", code, exitError)
	}

	err = run(context.Background(), []string{"backup", filepath.Join(dir, "b")},
		env(map[string]string{"PG_HOST": "db.example"}), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("backup with PostgreSQL configured: %v", err)
	}

	if err := run(context.Background(), []string{"backup"}, env(nil), &out, &errOut); exitCode(err) != exitUsage {
		t.Fatalf("backup without a folder: %v, exit %d", err, exitCode(err))
	}
}
