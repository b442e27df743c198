package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// driverErr stands for what a database driver says: text a client must
// never see.
var driverErr = &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 5432},
	Err: errors.New("connect: connection refused (host=db user=queen password=hunter2)")}

func TestErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		msg    string
	}{
		{"bad body", badBody("items is missing"), 400, "bad body: items is missing"},
		{"bad query", badQuery("wait: expected true or false"), 400, "bad query: wait: expected true or false"},
		{"no such route", api.ErrNoSuchRoute, 404, "Not Found"},
		{"broker refusal", fmt.Errorf("pop: %w", api.ErrBadRequest.With("namespace or task is required")), 400,
			"namespace or task is required"},
		{"value the database refused", fmt.Errorf("sqlite: push: %w: %w", store.ErrInvalid, driverErr), 400,
			api.ErrValueRefused.Message},
		{"not found", fmt.Errorf("postgres: lease: %w", store.ErrNotFound), 404, "not found"},
		{"outage", fmt.Errorf("postgres: push: %w: %w", store.ErrUnavailable, driverErr), 503, api.ErrUnavailable.Message},
		{"closed", store.ErrClosed, 503, api.ErrShuttingDown.Message},
		{"timer fired", fmt.Errorf("cancel: %w", store.ErrTimerFired), 409, "timer already fired"},
		{"body over the cap", bodyTooLarge(1024), 413,
			"request body too large: the limit is 1024 bytes (QUEEN_MAX_BODY_BYTES)"},
		{"anything else", driverErr, 500, "internal error; the broker's log has the details under request id r-9"},
		{"client went away", context.Canceled, 500, "internal error; the broker's log has the details under request id r-9"},
	} {
		e := errorStatus(tc.err, "r-9")
		if e.Status != tc.status || e.Message != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, e.Status, e.Message, tc.status, tc.msg)
		}
	}
}

// TestErrorStatusMatchesOneType: every error a handler or a feature
// returns for the client is an *api.Error of the catalogue, so the mapping
// is by code, never by the type of the package that raised it.
func TestErrorStatusMatchesOneType(t *testing.T) {
	for _, row := range api.Catalogue() {
		e := errorStatus(fmt.Errorf("wrapped: %w", row.With("x")), "r")
		if e.Code != row.Code || e.Status != row.Status || e.Message != "x" {
			t.Errorf("%s: mapped to %s %d %q", row.Code, e.Code, e.Status, e.Message)
		}
	}
}

// TestErrorBodies: every error is {"error": …} (the 404 adds its code, a
// transaction's 400 is its envelope), and no body carries the detail.
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route string
		err   error
		keys  string
	}{
		{"outage", "push", fmt.Errorf("%w: %w", store.ErrUnavailable, driverErr), "error"},
		{"internal", "ack", driverErr, "error"},
		{"no such route", noSuchRouteName, api.ErrNoSuchRoute, "code error"},
		{"transaction pre-flight", "transaction", badBody("operations is missing"),
			"error results success transactionId"},
		{"transaction outage", "transaction", fmt.Errorf("%w: %w", store.ErrUnavailable, driverErr), "error"},
		{"kv conflict", "kv", api.ErrKVConflict.WithCause(&store.KVConflictError{Index: 1, Reason: "expectation failed"}),
			"current error index"},
		{"kv outage", "kv", fmt.Errorf("%w: %w", store.ErrUnavailable, driverErr), "error"},
	} {
		log, records := recordLogs(slog.LevelDebug)
		env := map[string]*Envelope{"transaction": transactionEnvelope, "kv": kvEnvelope}[tc.route]
		h := newAdapter(Config{Logger: log}).serve(Route{RouteInfo{Name: tc.route, Envelope: env}, func(w http.ResponseWriter, r *http.Request) error {
			return tc.err
		}})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/x", nil))
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s: body %q is not a JSON object", tc.name, rec.Body)
		}
		if got := strings.Join(keysOf(m), " "); got != tc.keys {
			t.Errorf("%s: keys %q, want %q; body %s", tc.name, got, tc.keys, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", tc.name, ct)
		}
		for _, leak := range []string{"10.0.0.7", "5432", "password", "host=", "user=", "connection refused"} {
			if strings.Contains(rec.Body.String(), leak) {
				t.Errorf("%s: body %s carries %q", tc.name, rec.Body, leak)
			}
		}
		if rec.Code >= 500 {
			logged := false
			for _, r := range *records {
				a := attrs(r)
				if r.Message == "request failed" && strings.Contains(a["err"].String(), "10.0.0.7:5432") &&
					a["requestId"].String() == rec.Header().Get("X-Request-Id") {
					logged = true
				}
			}
			if !logged {
				t.Errorf("%s: the detail was not logged under the request id", tc.name)
			}
		}
	}
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
