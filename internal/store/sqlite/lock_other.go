//go:build !unix

package sqlite

import "os"

// lockDir is a no-op where flock(2) does not exist; the data folder is then
// unprotected against a second broker.
func lockDir(dir string) (*os.File, error) { return nil, nil }
