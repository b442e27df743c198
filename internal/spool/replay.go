package spool

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/queen-go/queen/internal/store"
)

// Refusal is an item of a replayed batch that the store refused for good:
// retrying cannot succeed (as opposed to an outage, which push reports as
// its error). Replay moves it to the dead-letter file and goes on.
type Refusal struct {
	// Index is the position of the item in the batch handed to push.
	Index int
	// Reason is why it was refused, as written to the dead-letter file.
	Reason string
}

// Replay seals the open segment and hands every spooled record, in order and
// in batches of at most batch items, to push, which must not keep the slice.
//
// push reports items the store refused for good as refusals: they are
// appended to the dead-letter file and replay goes on, so that one bad item
// cannot hold up every item behind it. An error from push means the store
// cannot take the batch now (its refusals are ignored): Replay stops and
// returns it, and the next Replay resumes with that batch. A segment is
// deleted once all of its records were stored or dead-lettered. After a
// crash a segment restarts from its beginning, so push must be idempotent
// (the store answers a transactionId it already has as a duplicate).
//
// Replay returns how many records were stored, which excludes those
// dead-lettered.
func (s *Spool) Replay(ctx context.Context, batch int, push func(ctx context.Context, items []store.PushItem) (refused []Refusal, err error)) (int, error) {
	batch = max(batch, 1)
	s.replayMu.Lock()
	defer s.replayMu.Unlock()
	if err := s.seal(); err != nil {
		return 0, fmt.Errorf("spool: seal: %w", err)
	}
	names, err := s.sealed()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, name := range names {
		n, err := s.replaySegment(ctx, name, batch, push)
		total += n
		if err != nil {
			return total, err
		}
		fi, err := os.Stat(name)
		if err != nil {
			return total, fmt.Errorf("spool: %w", err)
		}
		if err := os.Remove(name); err != nil {
			return total, fmt.Errorf("spool: remove %s: %w", name, err)
		}
		s.bytes.Add(-fi.Size())
		delete(s.done, name)
	}
	return total, nil
}

// replaySegment replays the records of one sealed segment that this process
// has not yet replayed. s.replayMu must be held.
func (s *Spool) replaySegment(ctx context.Context, name string, batch int, push func(context.Context, []store.PushItem) ([]Refusal, error)) (int, error) {
	base := filepath.Base(name)
	f, err := os.Open(name)
	if err != nil {
		return 0, fmt.Errorf("spool: open %s: %w", name, err)
	}
	defer f.Close()
	off := s.done[name]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, fmt.Errorf("spool: %s: %w", base, err)
	}
	r := bufio.NewReader(f)
	items := make([]store.PushItem, 0, batch)
	keys := make([]PartitionKey, 0, batch) // of items, taken before push sees them
	stored := 0
	// flush pushes items, which end at byte upTo of the segment.
	flush := func(upTo int64) error {
		if len(items) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		refused, err := push(ctx, items)
		if err != nil {
			return err
		}
		if err := checkRefusals(refused, len(items)); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		if len(refused) > 0 {
			if err := s.deadLetterRefused(base, items, refused); err != nil {
				return fmt.Errorf("spool: dead letter: %w", err)
			}
		}
		s.done[name] = upTo
		s.release(keys, len(keys))
		stored += len(items) - len(refused)
		items, keys = items[:0], keys[:0]
		return nil
	}
	for {
		start := off
		rec, err := readRecord(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stored, fmt.Errorf("spool: %s: %w", base, err)
		}
		off += 4 + int64(len(rec))
		it, err := decodeRecord(rec)
		if errors.Is(err, ErrUnknownVersion) {
			return stored, fmt.Errorf("spool: %s at byte %d: %w", base, start, err)
		}
		if err != nil {
			// Damaged on disk: set it aside like a refused item, keeping
			// the items before it in order ahead of it.
			if err := flush(start); err != nil {
				return stored, err
			}
			if err := s.deadLetterDamaged(base, rec, err); err != nil {
				return stored, fmt.Errorf("spool: dead letter: %w", err)
			}
			s.done[name] = off
			s.release(nil, 1)
			continue
		}
		items = append(items, it)
		keys = append(keys, keyOf(&it))
		if len(items) == batch {
			if err := flush(off); err != nil {
				return stored, err
			}
		}
	}
	return stored, flush(off)
}

// checkRefusals rejects refusals that do not name distinct items of the
// batch: dead-lettering the wrong item would lose one and store another.
func checkRefusals(refused []Refusal, n int) error {
	if len(refused) == 0 {
		return nil
	}
	seen := make([]bool, n)
	for _, rf := range refused {
		if rf.Index < 0 || rf.Index >= n || seen[rf.Index] {
			return fmt.Errorf("push refused item %d of a batch of %d, which is out of range or refused twice", rf.Index, n)
		}
		seen[rf.Index] = true
	}
	return nil
}

// readRecord reads one record. A record cut short by a crash during its
// write (the client never got 201 for it) reads as the end of the file, and
// so does a zero length: no record is empty, but a file system may leave
// the unwritten tail of a file as zeros after a crash.
func readRecord(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, io.EOF
	}
	if n > maxRecord {
		return nil, fmt.Errorf("record of %d bytes exceeds the %d byte limit", n, maxRecord)
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(r, rec); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	return rec, nil
}

// scanSegment returns the partition of every record of a sealed segment,
// and how many records are too damaged to tell. A record too new for this
// build fails it, so that Open refuses a spool it could not replay.
func scanSegment(name string) (keys []PartitionKey, damaged int, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		rec, err := readRecord(r)
		if errors.Is(err, io.EOF) {
			return keys, damaged, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("spool: %s: %w", filepath.Base(name), err)
		}
		it, err := decodeRecord(rec)
		switch {
		case errors.Is(err, ErrUnknownVersion):
			return nil, 0, fmt.Errorf("spool: %s: %w", filepath.Base(name), err)
		case err != nil:
			damaged++
		default:
			keys = append(keys, keyOf(&it))
		}
	}
}
