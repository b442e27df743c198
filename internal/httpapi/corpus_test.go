package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// corpusRoutes is the route each fuzz target's corpus is sent to.
var corpusRoutes = map[string]string{
	"FuzzDecodeAck":         "/api/v1/ack",
	"FuzzDecodeAckBatch":    "/api/v1/ack/batch",
	"FuzzDecodeConfigure":   "/api/v1/configure",
	"FuzzDecodeExtend":      "/api/v1/lease/0197f2b2-0000-7000-8000-000000000000/extend",
	"FuzzDecodePush":        "/api/v1/push",
	"FuzzDecodeTransaction": "/api/v1/transaction",
}

// Go's names for types and values, which no error text may carry: a client
// knows its JSON, not our structs.
var goTypeNames = []string{"httpapi.", "store.", "broker.", "*string", "*int", "[]", "struct", "json.",
	"RawMessage", "map[", "reflect", "Go value", "Go struct"}

// Connection details, which no body may carry.
var connectionDetails = []string{"user=", "host=", "port=", "database=", "dbname=", "127.0.0.1:", "password",
	"postgres://", "sslmode"}

// TestCorpusOverHTTP sends every input of the committed fuzz corpus as the
// body of its route to a real server on the embedded engine, and checks what
// a client reads back: never a 5xx, no connection details anywhere in the
// body, and no Go type name in any error text. (Only error texts are checked
// for type names: an answer may rightly hold "[]", e.g. a push of no items.)
func TestCorpusOverHTTP(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "fuzz"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	base := apitest.StartServer(t, st, server.Config{Version: "0.0.0-corpus"})
	sent := 0
	for _, dir := range dirs {
		path, ok := corpusRoutes[dir.Name()]
		if !ok {
			t.Errorf("testdata/fuzz/%s: no route for this fuzz target; add it to corpusRoutes", dir.Name())
			continue
		}
		files, err := os.ReadDir(filepath.Join("testdata", "fuzz", dir.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := dir.Name() + "/" + f.Name()
			body := readCorpusEntry(t, filepath.Join("testdata", "fuzz", name))
			resp, err := http.Post(base+path, "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			answer, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%s: read answer: %v", name, err)
			}
			sent++
			if resp.StatusCode >= 500 {
				t.Errorf("%s: POST %s answered %d %s", name, path, resp.StatusCode, answer)
			}
			for _, leak := range connectionDetails {
				if strings.Contains(string(answer), leak) {
					t.Errorf("%s: answer carries %q: %s", name, leak, answer)
				}
			}
			for _, msg := range errorTexts(answer) {
				for _, typ := range goTypeNames {
					if strings.Contains(msg, typ) {
						t.Errorf("%s: error text names a Go type (%q): %s", name, typ, msg)
					}
				}
			}
		}
	}
	if sent == 0 {
		t.Fatal("no corpus entries found")
	}
}

// readCorpusEntry reads a "go test fuzz v1" file holding one []byte value.
func readCorpusEntry(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, value, _ := strings.Cut(string(data), "\n")
	value = strings.TrimSpace(value)
	if header != "go test fuzz v1" || !strings.HasPrefix(value, "[]byte(") || !strings.HasSuffix(value, ")") {
		t.Fatalf("%s: not a go test fuzz v1 file of one []byte", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(value, "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

// errorTexts returns every "error" string of an answer: the error body's,
// the transaction envelope's, or the per-item verdicts'.
func errorTexts(answer []byte) []string {
	var one map[string]any
	if json.Unmarshal(answer, &one) == nil {
		if s, ok := one["error"].(string); ok {
			return []string{s}
		}
		return nil
	}
	var many []map[string]any
	_ = json.Unmarshal(answer, &many)
	var out []string
	for _, m := range many {
		if s, ok := m["error"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}
