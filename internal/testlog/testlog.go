// Package testlog holds what tests use to read a broker's or a child
// process's output while it is still being written.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is an output destination (a slog handler's, a child process's
// stdout) that a test reads with String while goroutines write to it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
