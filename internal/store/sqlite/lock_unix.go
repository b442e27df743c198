//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the data folder's lock file. SQLite itself would let two
// brokers open one database, but each broker's single writer and caches
// assume they are the only one: a second broker must not start.
const lockName = "queen.lock"

// lockDir takes an exclusive lock on dir's lock file, held until the
// returned file is closed (and by the kernel until the process dies, so a
// crashed broker leaves no stale lock behind).
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data folder %s is in use by another queen broker (it holds %s): "+
				"stop that broker, or give this one its own folder with QUEEN_DATA_DIR", dir, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The pid helps whoever looks at the folder; the lock is what counts.
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}
