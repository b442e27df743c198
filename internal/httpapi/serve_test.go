package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
)

// recordLogs returns a logger at level and the records it keeps.
func recordLogs(level slog.Level) (*slog.Logger, *[]slog.Record) {
	h := &recorder{level: level}
	return slog.New(h), &h.records
}

type recorder struct {
	level   slog.Level
	records []slog.Record
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

func attrs(r slog.Record) map[string]slog.Value {
	m := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value
		return true
	})
	return m
}

func TestRequestID(t *testing.T) {
	h := New(Config{})
	long := strings.Repeat("x", maxRequestIDLen+1)
	for _, tc := range []struct {
		sent string
		echo bool
	}{
		{"", false},
		{"client-42", true},
		{strings.Repeat("y", maxRequestIDLen), true},
		{long, false},
		{"has space", false},
		{"tab\tinside", false},
		{"é", false},
	} {
		req := httptest.NewRequest("GET", "/nope", nil)
		if tc.sent != "" {
			req.Header.Set("X-Request-Id", tc.sent)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		switch {
		case tc.echo && got != tc.sent:
			t.Errorf("sent %q: X-Request-Id %q, want it echoed", tc.sent, got)
		case !tc.echo && (got == tc.sent || len(got) != 36 || got[14] != '7'):
			t.Errorf("sent %q: X-Request-Id %q, want a fresh UUIDv7", tc.sent, got)
		}
	}
}

func TestAccessLog(t *testing.T) {
	log, records := recordLogs(slog.LevelDebug)
	h := New(Config{Logger: log})
	req := httptest.NewRequest("POST", "/api/v1/nope", strings.NewReader("{}"))
	req.Header.Set("X-Request-Id", "r-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if len(*records) != 1 {
		t.Fatalf("%d log records, want one access-log line", len(*records))
	}
	r := (*records)[0]
	a := attrs(r)
	if r.Level != slog.LevelDebug || r.Message != "request" || a["method"].String() != "POST" ||
		a["route"].String() != noSuchRouteName || a["status"].Int64() != 404 || a["requestId"].String() != "r-1" ||
		a["bytes"].Int64() != int64(rec.Body.Len()) || a["duration"].Kind() != slog.KindDuration {
		t.Errorf("access log %q %v, want debug \"request\" with method, route, status, duration, bytes, requestId", r.Message, a)
	}

	// Off below debug: no line at all.
	log, records = recordLogs(slog.LevelInfo)
	New(Config{Logger: log}).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/nope", nil))
	if len(*records) != 0 {
		t.Errorf("at info level: %d log records, want none", len(*records))
	}
}

// BenchmarkServe is the adapter's own cost per request: request id, body
// cap, metrics, and an access log that is off.
func BenchmarkServe(b *testing.B) {
	log, _ := recordLogs(slog.LevelInfo)
	h := newAdapter(Config{Logger: log}).serve(Route{RouteInfo{Name: "bench"}, func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}})
	for _, sent := range []string{"", "client-id"} {
		name := "minted"
		if sent != "" {
			name = "echoed"
		}
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest("POST", "/bench", strings.NewReader("{}"))
			if sent != "" {
				req.Header.Set("X-Request-Id", sent)
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkServeAuth is the adapter's cost per request with a token to
// check on a write-only route: a static API token (a digest and one
// comparison per configured token) and an HS256 JWT (parse and HMAC; the
// key is parsed once, at start).
func BenchmarkServeAuth(b *testing.B) {
	toks, err := auth.ParseTokens("a-static-api-token-of-some-length:write-only")
	if err != nil {
		b.Fatal(err)
	}
	jwtToken, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "producer-1", "role": "write-only",
		"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("bench-secret"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		cfg   auth.Config
		token string
	}{
		{"api-token", auth.Config{Tokens: toks}, "a-static-api-token-of-some-length"},
		{"jwt-hs256", auth.Config{JWTEnabled: true, Secret: "bench-secret"}, jwtToken},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v, err := auth.New(bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			log, _ := recordLogs(slog.LevelInfo)
			h := newAdapter(Config{Logger: log, Auth: v}).serve(Route{RouteInfo{Name: "bench", Access: AccessWriteOnly},
				func(w http.ResponseWriter, r *http.Request) error {
					if caller(r).Subject == "" {
						b.Fatal("no subject")
					}
					w.WriteHeader(http.StatusNoContent)
					return nil
				}})
			req := httptest.NewRequest("POST", "/bench", strings.NewReader("{}"))
			req.Header.Set("X-Request-Id", "client-id")
			req.Header.Set("Authorization", "Bearer "+bc.token)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
