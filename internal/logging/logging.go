// Package logging builds the broker's one *slog.Logger from Queen's LOG_LEVEL
// and LOG_FORMAT values. Queen has two levels slog lacks, trace (below debug)
// and critical (above error), plus off; this package names them so that logs
// print TRACE and CRITICAL rather than slog's DEBUG-4 and ERROR+4.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
)

// Queen's levels that slog does not define. The gaps of four match slog's
// own spacing, leaving room for levels in between.
const (
	// LevelTrace is below slog.LevelDebug: per-message detail.
	LevelTrace = slog.LevelDebug - 4
	// LevelCritical is above slog.LevelError: the broker cannot go on as
	// configured.
	LevelCritical = slog.LevelError + 4
	// LevelOff discards every record, critical ones included.
	LevelOff = slog.Level(math.MaxInt32)
)

// Format is how records are written: FormatText or FormatJSON.
type Format string

// The formats LOG_FORMAT accepts.
const (
	// FormatJSON writes one JSON object per record (slog.JSONHandler).
	FormatJSON Format = "json"
	// FormatText writes key=value lines (slog.TextHandler).
	FormatText Format = "text"
)

// levels maps every name ParseLevel accepts to its level.
var levels = map[string]slog.Level{
	"trace":    LevelTrace,
	"debug":    slog.LevelDebug,
	"info":     slog.LevelInfo,
	"warn":     slog.LevelWarn,
	"warning":  slog.LevelWarn,
	"error":    slog.LevelError,
	"critical": LevelCritical,
	"off":      LevelOff,
}

// ParseLevel reads one of Queen's level names, in any case: trace, debug,
// info, warn (or warning), error, critical or off.
func ParseLevel(s string) (slog.Level, error) {
	if l, ok := levels[strings.ToLower(strings.TrimSpace(s))]; ok {
		return l, nil
	}
	return 0, fmt.Errorf("want trace, debug, info, warn, error, critical or off")
}

// ParseFormat reads text or json, in any case.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case FormatJSON, FormatText:
		return f, nil
	}
	return "", fmt.Errorf("want text or json")
}

// New returns a logger writing records at level and above to w in format;
// any format other than FormatJSON means text. At LevelOff it discards
// everything without formatting it.
func New(w io.Writer, level slog.Level, format Format) *slog.Logger {
	if level >= LevelOff {
		return slog.New(slog.DiscardHandler)
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: nameLevel}
	if format == FormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// nameLevel prints LevelTrace and LevelCritical by name; slog leaves other
// levels as they are.
func nameLevel(groups []string, a slog.Attr) slog.Attr {
	if a.Key != slog.LevelKey || len(groups) > 0 {
		return a
	}
	switch l, _ := a.Value.Any().(slog.Level); l {
	case LevelTrace:
		a.Value = slog.StringValue("TRACE")
	case LevelCritical:
		a.Value = slog.StringValue("CRITICAL")
	}
	return a
}
