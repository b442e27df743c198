package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/store"
)

const (
	openSuffix   = ".open"
	sealedSuffix = ".spool"
	// maxRecord bounds one record, so a corrupt length cannot make replay
	// allocate without limit. It matches the largest request body.
	maxRecord = 64 << 20
)

// ErrFull is the error of an Append that would take the spool past its
// size cap: none of its items is spooled.
var ErrFull = errors.New("spool: size cap reached")

// Spool is a directory of segment files. It is safe for concurrent use.
//
// Lock order: replayMu, then mu, then countMu or syncMu.
type Spool struct {
	dir      string
	maxBytes int64 // cap of the segments' bytes on disk; 0 is no cap

	// bytes is the size of the segments on disk: raised by Append under mu,
	// lowered by replay as it deletes a segment.
	bytes atomic.Int64
	// refusedFull counts the items Append refused for the cap.
	refusedFull atomic.Int64

	mu      sync.Mutex // guards cur, seq, size, torn, written; serialises writes and seals
	cur     *os.File
	seq     int
	size    int64 // bytes in cur
	torn    bool  // cur ends in part of a record: seal it before writing more
	written int64 // appends written so far (not necessarily synced)

	countMu sync.Mutex             // guards counts, dropped
	counts  map[PartitionKey]int64 // records not yet replayed, per partition; no zero entries
	dropped chan struct{}          // closed and replaced whenever counts drop, to wake WaitClear
	pending atomic.Int64           // all records not yet replayed, damaged ones included

	// Group fsync: an append waits until an fsync that started after its
	// write has finished, and at most one fsync runs at a time, so
	// concurrent appends share one.
	syncMu   sync.Mutex
	syncCond *sync.Cond
	syncing  bool
	synced   int64 // appends known to be on disk

	replayMu sync.Mutex // one replay at a time; guards done
	// done holds, per sealed segment, how many of its bytes this process
	// has replayed or dead-lettered, so that a replay stopped by an outage
	// resumes after them instead of pushing (and counting) them again.
	// After a crash it is empty and segments restart from their beginning.
	done map[string]int64

	deadLettered atomic.Int64 // lines in the dead-letter file
}

// Open opens (creating) the spool directory, seals segments left open by a
// previous process and counts the records waiting to be replayed. The spool
// has no size cap.
func Open(dir string) (*Spool, error) { return OpenMax(dir, 0) }

// OpenMax is Open with a cap on the bytes the segments hold on disk
// (FILE_BUFFER_MAX_BYTES; 0 or less is no cap). An Append that would pass it
// fails with ErrFull; segments already on disk when the spool opens count
// against it, and replay frees their bytes as it deletes them. The
// dead-letter file is not counted: it holds only items that came through
// the spool already.
func OpenMax(dir string, maxBytes int64) (*Spool, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", dir, err)
	}
	s := &Spool{
		dir:      dir,
		maxBytes: max(maxBytes, 0),
		counts:   make(map[PartitionKey]int64),
		done:     make(map[string]int64),
		dropped:  make(chan struct{}),
	}
	s.syncCond = sync.NewCond(&s.syncMu)
	open, err := filepath.Glob(filepath.Join(dir, "*"+openSuffix))
	if err != nil {
		return nil, err
	}
	for _, name := range open {
		if err := os.Rename(name, strings.TrimSuffix(name, openSuffix)+sealedSuffix); err != nil {
			return nil, fmt.Errorf("spool: seal %s: %w", name, err)
		}
	}
	sealed, err := s.sealed()
	if err != nil {
		return nil, err
	}
	for _, name := range sealed {
		keys, damaged, err := scanSegment(name)
		if err != nil {
			return nil, err
		}
		s.hold(keys)
		s.pending.Add(int64(damaged))
		fi, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		s.bytes.Add(fi.Size())
	}
	n, err := countDeadLetters(s.DeadLetterPath())
	if err != nil {
		return nil, fmt.Errorf("spool: dead letters: %w", err)
	}
	s.deadLettered.Store(n)
	return s, nil
}

// Pending reports how many records wait to be replayed.
func (s *Spool) Pending() int64 { return s.pending.Load() }

// Bytes reports the size of the segments on disk, which the cap bounds.
func (s *Spool) Bytes() int64 { return s.bytes.Load() }

// RefusedFull reports how many items appends refused for the size cap since
// the spool opened.
func (s *Spool) RefusedFull() int64 { return s.refusedFull.Load() }

// Append writes items as one durable write: when it returns nil, the items
// survive a crash. Concurrent appends share fsyncs. When it returns an
// error, none of the items is spooled, except after a failed write that
// could not be undone, whose complete records may still be replayed. Items
// that would take the spool past its cap are refused whole with ErrFull:
// one push is spooled entirely or not at all.
func (s *Spool) Append(items []store.PushItem) error {
	var buf []byte
	keys := make([]PartitionKey, len(items))
	for i := range items {
		var err error
		if buf, err = appendRecord(buf, &items[i]); err != nil {
			return fmt.Errorf("spool: encode: %w", err)
		}
		keys[i] = keyOf(&items[i])
	}
	s.mu.Lock()
	// Checked and raised under s.mu, so concurrent appends cannot pass the
	// cap together; replay only lowers it.
	if s.maxBytes > 0 && s.bytes.Load()+int64(len(buf)) > s.maxBytes {
		s.mu.Unlock()
		s.refusedFull.Add(int64(len(items)))
		return fmt.Errorf("%w: %d bytes on disk, %d more asked, cap %d", ErrFull, s.bytes.Load(), len(buf), s.maxBytes)
	}
	if s.torn {
		if err := s.sealLocked(); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("spool: seal torn segment: %w", err)
		}
	}
	if s.cur == nil {
		if err := s.createLocked(); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("spool: create segment: %w", err)
		}
	}
	if n, err := s.cur.Write(buf); err != nil {
		if s.undoWriteLocked(n) {
			// The complete records before the torn one stay and will be
			// replayed, so they must be counted.
			s.hold(keys[:completeRecords(buf[:n])])
			s.bytes.Add(int64(n))
		}
		s.mu.Unlock()
		return fmt.Errorf("spool: write: %w", err)
	}
	s.size += int64(len(buf))
	s.bytes.Add(int64(len(buf)))
	s.written++
	mine := s.written
	// Counted before s.mu is released, so before replay can see the
	// records: PendingIn is true from now on, and replay's decrement
	// cannot come first.
	s.hold(keys)
	s.mu.Unlock()
	if err := s.syncThrough(mine); err != nil {
		return fmt.Errorf("spool: sync: %w", err)
	}
	return nil
}

// createLocked starts a new open segment. s.mu must be held.
func (s *Spool) createLocked() error {
	s.seq++
	name := filepath.Join(s.dir, fmt.Sprintf("%020d-%06d%s", time.Now().UnixNano(), s.seq, openSuffix))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	// fsyncing the file does not make its directory entry durable: without
	// this, a crash could lose a whole segment of acknowledged pushes.
	if err := syncDir(s.dir); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	s.cur, s.size = f, 0
	return nil
}

// undoWriteLocked cuts a write that failed after n bytes (a full disk during
// a long outage) back off the segment: a torn record followed by later ones
// would misframe everything after it. If the cut fails, the segment is
// marked torn so that the next append seals it first; a torn record at the
// end of a segment reads as its end. It reports whether the n bytes stay.
// s.mu must be held.
func (s *Spool) undoWriteLocked(n int) (kept bool) {
	if n == 0 {
		return false
	}
	if s.cur.Truncate(s.size) == nil {
		return false
	}
	s.size += int64(n)
	s.torn = true
	return true
}

// completeRecords counts the whole records at the start of buf.
func completeRecords(buf []byte) int {
	n := 0
	for len(buf) >= 4 {
		end := 4 + int(binary.BigEndian.Uint32(buf))
		if end > len(buf) {
			break
		}
		buf = buf[end:]
		n++
	}
	return n
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// syncThrough returns once append number n is on disk, running an fsync
// itself unless one that covers n is already under way.
func (s *Spool) syncThrough(n int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for s.synced < n {
		if s.syncing {
			s.syncCond.Wait()
			continue
		}
		s.syncing = true
		s.syncMu.Unlock()
		s.mu.Lock()
		f, upTo := s.cur, s.written
		s.mu.Unlock()
		// A segment leaves s.cur by seal or Close, which raise s.synced when
		// their own fsync succeeds; finding none with n still unsynced means
		// that fsync failed.
		err := errors.New("segment closed before its fsync")
		if f != nil {
			err = f.Sync()
		}
		s.syncMu.Lock()
		s.syncing = false
		s.syncCond.Broadcast()
		if err != nil {
			if s.synced >= n {
				return nil // a seal synced and closed the file meanwhile
			}
			return err
		}
		if upTo > s.synced {
			s.synced = upTo
		}
	}
	return nil
}

// seal closes the open segment so that Replay can take it.
func (s *Spool) seal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sealLocked()
}

// sealLocked closes the open segment and renames it sealed. s.mu must be
// held.
func (s *Spool) sealLocked() error {
	if s.cur == nil {
		return nil
	}
	name := s.cur.Name()
	// Appends written to this segment may still be waiting for their fsync;
	// sync here so that closing the file cannot leave them unsynced.
	if err := s.cur.Sync(); err != nil {
		return err
	}
	s.syncMu.Lock()
	s.synced = max(s.synced, s.written)
	s.syncCond.Broadcast()
	s.syncMu.Unlock()
	if err := s.cur.Close(); err != nil {
		return err
	}
	s.cur, s.torn = nil, false
	return os.Rename(name, strings.TrimSuffix(name, openSuffix)+sealedSuffix)
}

// sealed lists sealed segments in write order.
func (s *Spool) sealed() ([]string, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*"+sealedSuffix))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// Close closes the open segment, leaving it to be sealed by the next Open.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	// An append racing with Close may still wait for its fsync, which finds
	// no open segment afterwards and counts as done: sync for it here.
	err := s.cur.Sync()
	if err == nil {
		s.syncMu.Lock()
		s.synced = max(s.synced, s.written)
		s.syncCond.Broadcast()
		s.syncMu.Unlock()
	}
	err = errors.Join(err, s.cur.Close())
	s.cur = nil
	return err
}
