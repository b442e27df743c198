package spool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// deadLetterName is the dead-letter file in the spool directory. Its suffix
// differs from the segments', so Replay never takes it for one.
const deadLetterName = "dead-letter.jsonl"

// deadLetter is one line of the dead-letter file.
type deadLetter struct {
	Time time.Time `json:"time"`
	// Reason is the store's refusal, or why the record could not be read.
	Reason string `json:"reason"`
	// Segment is the file the record came from, to find it in backups.
	Segment string `json:"segment"`
	// Item is the record in the version 3 format, whatever version it was
	// spooled in, so tools need to read one format only.
	Item json.RawMessage `json:"item,omitempty"`
	// Raw holds the bytes of a record that could not be decoded, instead
	// of Item.
	Raw []byte `json:"raw,omitempty"`
}

// DeadLetterPath returns the dead-letter file: JSON lines holding the
// spooled items the store refused for good and records that could not be
// read, each with the time and the reason. It exists once the first item
// has been set aside.
func (s *Spool) DeadLetterPath() string { return filepath.Join(s.dir, deadLetterName) }

// DeadLettered reports how many items the dead-letter file holds: the count
// since the file was created, across restarts.
func (s *Spool) DeadLettered() int64 { return s.deadLettered.Load() }

// deadLetterRefused sets the refused items of a batch aside.
func (s *Spool) deadLetterRefused(segment string, items []store.PushItem, refused []Refusal) error {
	now := time.Now().UTC()
	lines := make([]deadLetter, len(refused))
	for i, rf := range refused {
		item, err := encodeRecord(&items[rf.Index])
		if err != nil {
			return err // cannot happen: the item was decoded from a record
		}
		lines[i] = deadLetter{Time: now, Reason: rf.Reason, Segment: segment, Item: item}
	}
	return s.appendDeadLetters(lines)
}

// deadLetterDamaged sets aside a record that could not be decoded.
func (s *Spool) deadLetterDamaged(segment string, rec []byte, cause error) error {
	return s.appendDeadLetters([]deadLetter{{
		Time: time.Now().UTC(), Reason: cause.Error(), Segment: segment, Raw: rec,
	}})
}

// appendDeadLetters appends lines to the dead-letter file and fsyncs it:
// the items leave the spool once this returns, so it must be durable.
func (s *Spool) appendDeadLetters(lines []deadLetter) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The file is read by people and tools, not browsers.
	enc.SetEscapeHTML(false)
	for i := range lines {
		// Encode compacts Item, so a payload with newlines in its
		// whitespace cannot split a line.
		if err := enc.Encode(&lines[i]); err != nil {
			return err
		}
	}
	name := s.DeadLetterPath()
	created := false
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o640)
		created = true
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if n, err := f.Write(buf.Bytes()); err != nil {
		if n > 0 {
			// Best effort: a torn line left here is cut at the next Open.
			_ = f.Truncate(info.Size())
		}
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if created {
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	s.deadLettered.Add(int64(len(lines)))
	return nil
}

// countDeadLetters counts the lines of the dead-letter file and cuts off a
// line torn by a crash: its item was not yet out of its segment, so it will
// be set aside again, and a line appended after it would be unreadable.
func countDeadLetters(name string) (int64, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var lines, end, size int64 // end: byte after the last newline
	for {
		chunk, err := r.ReadSlice('\n')
		size += int64(len(chunk))
		if err == nil {
			lines++
			end = size
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		return 0, err
	}
	if end < size {
		if err := f.Truncate(end); err != nil {
			return 0, fmt.Errorf("cut torn line: %w", err)
		}
	}
	return lines, nil
}
