package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// TestBackupWhileOpen copies a database the broker holds open, and the
// copy opens as a store with the same queue.
func TestBackupWhileOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.db.ExecContext(ctx, "CREATE TABLE backup_probe (v TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO backup_probe VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}

	dest := filepath.Join(t.TempDir(), "b")
	out, err := Backup(ctx, dir, dest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(ctx, dir, dest); err == nil {
		t.Fatal("a second backup into the same folder overwrote the first")
	}

	restored, err := Open(ctx, Config{Dir: filepath.Dir(out)})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer restored.Close()
	var v string
	if err := restored.reader.QueryRowContext(ctx, "SELECT v FROM backup_probe").Scan(&v); err != nil || v != "kept" {
		t.Fatalf("backup lacks the row: %q, %v", v, err)
	}
}
