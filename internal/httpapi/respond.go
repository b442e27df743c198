package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
)

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// noContent answers 204 with no body and no Content-Length: strict HTTP/1.1
// clients treat a 204 that announces a length as a poisoned connection.
func noContent(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNoContent)
}

// timestamp formats t as Queen does: RFC 3339, UTC, milliseconds.
func timestamp(t time.Time) string {
	return t.UTC().Format(api.TimeLayout)
}

// nullable renders "" as JSON null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// timeOrNull renders t, or the zero time as JSON null.
func timeOrNull(t time.Time) *api.Time { return api.TimeOrNil(t) }

// timeRef renders *t, or nil as JSON null.
func timeRef(t *time.Time) *api.Time {
	if t == nil {
		return nil
	}
	return &api.Time{Time: *t}
}
