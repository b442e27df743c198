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

	"github.com/queen-go/queen/internal/broker"
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
		{"no such route", errNoSuchRoute, 404, "Not Found"},
		{"broker refusal", &broker.InvalidError{Msg: "namespace or task is required"}, 400, "namespace or task is required"},
		{"value the database refused", fmt.Errorf("sqlite: push: %w: %w", store.ErrInvalid, driverErr), 400, msgInvalid},
		{"not found", fmt.Errorf("postgres: lease: %w", store.ErrNotFound), 404, "not found"},
		{"outage", fmt.Errorf("postgres: push: %w: %w", store.ErrUnavailable, driverErr), 503, msgUnavailable},
		{"closed", store.ErrClosed, 503, msgClosed},
		{"body over the cap", &http.MaxBytesError{Limit: 1024}, 413,
			"request body too large: the limit is 1024 bytes (QUEEN_MAX_BODY_BYTES)"},
		{"wrapped in a transaction", &preflightError{badBody("operations is missing")}, 400, "bad body: operations is missing"},
		{"anything else", driverErr, 500, "internal error; the broker's log has the details under request id r-9"},
		{"client went away", context.Canceled, 500, "internal error; the broker's log has the details under request id r-9"},
	} {
		status, msg := errorStatus(tc.err, "r-9")
		if status != tc.status || msg != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, msg, tc.status, tc.msg)
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
		{"no such route", noSuchRouteName, errNoSuchRoute, "code error"},
		{"transaction pre-flight", "transaction", &preflightError{badBody("operations is missing")},
			"error results success transactionId"},
		{"transaction outage", "transaction", &preflightError{fmt.Errorf("%w: %w", store.ErrUnavailable, driverErr)}, "error"},
	} {
		log, records := recordLogs(slog.LevelDebug)
		h := newAPI(Config{Logger: log}).serve(route{RouteInfo{Name: tc.route}, func(w http.ResponseWriter, r *http.Request) error {
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
