package apitest

import (
	"net/http"
	"strings"
	"testing"
)

// testMigration covers Queen's migration routes that exist:
// test-connection answers 400 without host, database and user, and 200
// with success false and the reason when the target does not answer,
// never with the password.
func (s *suite) testMigration(t *testing.T) {
	t.Run("TestConnectionNeedsHostDatabaseUser", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		for _, body := range []string{`{}`, `{"host":"h","database":"d"}`, `{"host":"h","user":"u"}`, `{"database":"d","user":"u"}`} {
			r := c.do(t, "POST", "/api/v1/migration/test-connection", body)
			if msg := wantError(t, r, http.StatusBadRequest, ""); msg != "host, database, and user are required" {
				t.Fatalf("%s: error %q", body, msg)
			}
		}
	})
	t.Run("TestConnectionFailureSaysWhyWithoutThePassword", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		const pw = "pw-that-must-not-show"
		r := c.do(t, "POST", "/api/v1/migration/test-connection",
			`{"host":"127.0.0.1","port":1,"database":"d","user":"u","password":"`+pw+`"}`)
		var got map[string]any
		wantJSON(t, r, http.StatusOK, &got)
		if got["success"] != false || got["message"] != "Connection failed" || got["error"] == "" || got["error"] == nil {
			t.Fatalf("answer %v, want success false, Connection failed and an error", got)
		}
		if strings.Contains(string(r.Body), pw) {
			t.Fatalf("the answer shows the password: %s", r.Body)
		}
	})
}
