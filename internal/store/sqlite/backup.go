package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database in dir (the broker's data
// folder) to dest/queen.db while the broker may be running: SQLite's
// VACUUM INTO reads one snapshot through its own read transaction, so
// writers are not blocked and the copy is compacted. The copy is written
// under a temporary name and renamed, so dest never holds half a backup.
// It refuses to overwrite an existing dest/queen.db.
func Backup(ctx context.Context, dir, dest string) (string, error) {
	src := filepath.Join(dir, "queen.db")
	if _, err := os.Stat(src); err != nil {
		return "", fmt.Errorf("no embedded database to back up: %w", err)
	}
	if err := os.MkdirAll(dest, 0o750); err != nil {
		return "", fmt.Errorf("create backup folder %q: %w", dest, err)
	}
	out := filepath.Join(dest, "queen.db")
	if _, err := os.Stat(out); err == nil {
		return "", fmt.Errorf("%s exists; back up into an empty folder", out)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	tmp := out + ".partial"
	os.Remove(tmp) // a previous attempt that was interrupted

	db, err := sql.Open("sqlite", "file:"+src+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return "", fmt.Errorf("open %s: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return out, nil
}
