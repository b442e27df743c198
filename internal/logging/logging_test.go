package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestParseLevelTakesQueensNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want slog.Level
	}{
		{"trace", LevelTrace},
		{"debug", slog.LevelDebug},
		{"info", slog.LevelInfo},
		{"warn", slog.LevelWarn},
		{"warning", slog.LevelWarn},
		{"error", slog.LevelError},
		{"critical", LevelCritical},
		{"off", LevelOff},
		{" WARNING ", slog.LevelWarn},
		{"Critical", LevelCritical},
	} {
		got, err := ParseLevel(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "loud", "fatal", "DEBUG-4", "0"} {
		if _, err := ParseLevel(bad); err == nil {
			t.Errorf("ParseLevel(%q) accepted", bad)
		}
	}
	if !(LevelTrace < slog.LevelDebug && LevelCritical > slog.LevelError && LevelOff > LevelCritical) {
		t.Fatal("levels out of order")
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"text": FormatText, "json": FormatJSON, "JSON": FormatJSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "logfmt", "yaml"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("ParseFormat(%q) accepted", bad)
		}
	}
}

func TestTextNamesTraceAndCritical(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, LevelTrace, FormatText)
	ctx := context.Background()
	log.Log(ctx, LevelTrace, "fine detail", "queue", "q")
	log.Log(ctx, LevelCritical, "cannot go on")
	log.Debug("debugging")
	out := buf.String()
	for _, want := range []string{"level=TRACE msg=\"fine detail\" queue=q", "level=CRITICAL msg=\"cannot go on\"", "level=DEBUG msg=debugging"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestJSONNamesCritical(t *testing.T) {
	var buf bytes.Buffer
	New(&buf, slog.LevelInfo, FormatJSON).Log(context.Background(), LevelCritical, "cannot go on", "n", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON object: %q: %v", buf.String(), err)
	}
	if rec["level"] != "CRITICAL" || rec["msg"] != "cannot go on" || rec["n"] != 1.0 {
		t.Fatalf("record = %v", rec)
	}
}

func TestLevelFilters(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		level      slog.Level
		logged     []slog.Level
		suppressed []slog.Level
	}{
		{slog.LevelInfo, []slog.Level{slog.LevelInfo, slog.LevelError, LevelCritical}, []slog.Level{LevelTrace, slog.LevelDebug}},
		{slog.LevelDebug, []slog.Level{slog.LevelDebug}, []slog.Level{LevelTrace}},
		{LevelCritical, []slog.Level{LevelCritical}, []slog.Level{slog.LevelError}},
		{LevelOff, nil, []slog.Level{LevelTrace, slog.LevelError, LevelCritical, LevelOff}},
	} {
		for _, format := range []Format{FormatText, FormatJSON} {
			var buf bytes.Buffer
			log := New(&buf, tc.level, format)
			for _, l := range tc.logged {
				buf.Reset()
				if log.Log(ctx, l, "m"); buf.Len() == 0 {
					t.Errorf("%s logger at %v dropped a %v record", format, tc.level, l)
				}
			}
			for _, l := range tc.suppressed {
				buf.Reset()
				if log.Log(ctx, l, "m"); buf.Len() != 0 {
					t.Errorf("%s logger at %v wrote a %v record: %q", format, tc.level, l, buf.String())
				}
			}
		}
	}
}
