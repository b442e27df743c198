package httpapi

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/queen-go/queen/api"
)

// Validation at the door. Every name and id a request carries is checked
// here, the same for both engines, before anything reaches the broker: a
// value one engine would store and the other refuse (PostgreSQL refuses NUL
// in text and index rows over about 2.7 KB), a name that means something
// else in a URL path, or a number that would overflow is a 400 naming the
// field, never a database error and never a spooled push. docs/api.md lists
// these limits.

// Limits of names and ids, in bytes of UTF-8.
const (
	// MaxNameBytes bounds queue, partition, consumer group, namespace and
	// task names, and transactionIds: they are keys of unique indexes.
	MaxNameBytes = 255
	// MaxIDBytes bounds ids a client sends back (partitionId, leaseId) and
	// traceIds.
	MaxIDBytes = 255
	// MaxErrorTextBytes bounds the error text of a negative ack, stored
	// with its dead letter.
	MaxErrorTextBytes = 16 << 10
)

// Ranges of integer options and parameters.
var (
	rangeLeaseTime    = intRange{0, 30 * 24 * 3600}   // seconds
	rangeExtend       = intRange{0, 30 * 24 * 3600}   // seconds; 0 means the default (60)
	rangeRetryLimit   = intRange{0, 10000}            // attempts
	rangeRetryDelay   = intRange{0, 24 * 3600 * 1000} // milliseconds
	rangeSeconds      = intRange{0, 10 * 365 * 86400} // retention, TTL, delays, waits
	rangeMaxSize      = intRange{0, 1 << 31}          // messages; 0 = no cap
	rangePriority     = intRange{-1000000, 1000000}   // higher first
	rangePopTimeout   = intRange{0, 3600 * 1000}      // milliseconds
	rangePopBatch     = intRange{-1 << 31, 1<<31 - 1} // clamped to [1, 10000] after
	rangePopPartition = intRange{-1 << 31, 1<<31 - 1} // clamped to at least 1 after
	rangeWindowBuffer = intRange{0, 24 * 3600}        // seconds
	rangeDelayed      = intRange{0, 30 * 24 * 3600}   // seconds
)

// intRange is an inclusive range of allowed values.
type intRange struct{ min, max int }

func (r intRange) check(where func() string, n int) error {
	if n < r.min || n > r.max {
		return badRequest(fmt.Sprintf("%s: %d is out of range (%d to %d)", where(), n, r.min, r.max))
	}
	return nil
}

// nameKind says which rules a text value follows.
type nameKind uint8

const (
	// kindName: a queue, partition, group, namespace or task name, or a
	// transactionId. No control characters, not "." or "..", at most
	// MaxNameBytes.
	kindName nameKind = iota
	// kindID: an id sent back to the broker or a trace id. No control
	// characters, at most MaxIDBytes.
	kindID
	// kindText: free text (an ack's error). No NUL, at most
	// MaxErrorTextBytes; line breaks and tabs are fine.
	kindText
)

// checkText returns why s is not a valid value of kind, or "". Bodies are
// checked for UTF-8 as a whole before decoding (the decoder would silently
// replace bad bytes); query and path values are checked here.
func checkText(s string, kind nameKind) string {
	limit := MaxNameBytes
	switch kind {
	case kindID:
		limit = MaxIDBytes
	case kindText:
		limit = MaxErrorTextBytes
	}
	if len(s) > limit {
		return fmt.Sprintf("is %d bytes long, the limit is %d", len(s), limit)
	}
	if kind == kindName && (s == "." || s == "..") {
		return fmt.Sprintf("cannot be %q", s)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validRuneAt(s, i):
			return "is not valid UTF-8"
		case r == 0:
			return "contains a NUL character"
		case kind != kindText && unicode.IsControl(r):
			return fmt.Sprintf("contains the control character U+%04X", r)
		}
	}
	return ""
}

// validRuneAt reports whether the U+FFFD at s[i] was really written as such
// (three bytes) rather than decoded from an invalid byte.
func validRuneAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 3
}

// checkBodyText validates a string decoded from the body; where builds the
// field's path only when there is an error.
func checkBodyText(s string, kind nameKind, where func() string) error {
	if why := checkText(s, kind); why != "" {
		return badBody("%s %s", where(), why)
	}
	return nil
}

// checkQueryText validates a query parameter.
func checkQueryText(name, s string, kind nameKind) error {
	if why := checkText(s, kind); why != "" {
		return badQuery("%s %s", name, why)
	}
	return nil
}

// checkPathText validates a value taken from the URL path.
func checkPathText(name, s string, kind nameKind) error {
	if why := checkText(s, kind); why != "" {
		return badRequest(fmt.Sprintf("bad path: %s %s", name, why))
	}
	return nil
}

// checkUTF8 refuses a body that is not valid UTF-8: encoding/json would
// replace the bad bytes of a name with U+FFFD (sending the message to
// another queue) and store them untouched in a payload (which a pop would
// then serve as invalid JSON).
func checkUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	for i := 0; i < len(body); {
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			return badBody("not valid UTF-8 (byte %d)", i)
		}
		i += size
	}
	return badBody("not valid UTF-8")
}

// at returns a path builder for key of the object at path, for errors.
func at(path, key string) func() string {
	return func() string { return join(path, key) }
}

// checkOptions refuses queue options outside their ranges; a huge leaseTime
// would overflow the lease deadline and hand one message to two consumers.
func checkOptions(o *api.QueueOptions) error {
	for _, f := range [...]struct {
		key string
		v   int
		r   intRange
	}{
		{"leaseTime", o.LeaseTime, rangeLeaseTime},
		{"retryLimit", o.RetryLimit, rangeRetryLimit},
		{"retryDelay", o.RetryDelay, rangeRetryDelay},
		{"delayedProcessing", o.DelayedProcessing, rangeDelayed},
		{"windowBuffer", o.WindowBuffer, rangeWindowBuffer},
		{"maxSize", o.MaxSize, rangeMaxSize},
		{"priority", o.Priority, rangePriority},
		{"ttl", o.TTL, rangeSeconds},
		{"retentionSeconds", o.RetentionSeconds, rangeSeconds},
		{"completedRetentionSeconds", o.CompletedRetentionSeconds, rangeSeconds},
		{"maxWaitTimeSeconds", o.MaxWaitTimeSeconds, rangeSeconds},
	} {
		if err := f.r.check(func() string { return "bad body: options." + f.key }, f.v); err != nil {
			return err
		}
	}
	return nil
}
