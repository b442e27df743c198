package api

import (
	"errors"
	"time"
)

// TimeLayout is Queen's time format: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time is a point in time as the wire carries it: TimeLayout in answers;
// any RFC 3339 time when read.
type Time struct {
	time.Time
}

// TimeOf returns t as a wire Time.
func TimeOf(t time.Time) Time { return Time{t} }

// TimeOrNil returns t as a wire Time, or nil (JSON null) for the zero time.
func TimeOrNil(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}

// String formats t in TimeLayout.
func (t Time) String() string { return t.UTC().Format(TimeLayout) }

// AppendText appends t in TimeLayout.
func (t Time) AppendText(b []byte) ([]byte, error) {
	return t.UTC().AppendFormat(b, TimeLayout), nil
}

// MarshalText formats t in TimeLayout.
func (t Time) MarshalText() ([]byte, error) {
	return t.AppendText(make([]byte, 0, len(TimeLayout)))
}

// MarshalJSON writes t as a JSON string in TimeLayout.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeLayout)+2)
	b = append(b, '"')
	b, _ = t.AppendText(b)
	return append(b, '"'), nil
}

// UnmarshalText reads an RFC 3339 time.
func (t *Time) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// UnmarshalJSON reads an RFC 3339 time from a JSON string; null leaves t
// as it is.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("api: a time must be a JSON string")
	}
	return t.UnmarshalText(b[1 : len(b)-1])
}
