package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/testbroker"
	"github.com/queen-go/queen/internal/testlog"
)

var update = flag.Bool("update", false, "rewrite the golden files of the client verbs")

// verb runs the command line in process with env (only) as its
// environment and stdin as its standard input, and returns its output and
// exit code.
func verb(t *testing.T, ctx context.Context, env map[string]string, stdin string, args ...string) (string, int) {
	t.Helper()
	var out testlog.Buffer
	return runVerb(t, ctx, env, stdin, &out, args...)
}

func runVerb(t *testing.T, ctx context.Context, env map[string]string, stdin string, out *testlog.Buffer, args ...string) (string, int) {
	t.Helper()
	var errOut bytes.Buffer
	root := newCommand(func(k string) string { return env[k] }, out, &errOut)
	root.SetArgs(args)
	ctx = context.WithValue(ctx, stdinKey{}, strings.NewReader(stdin))
	err := root.ExecuteContext(ctx)
	code := exitCode(err)
	if err != nil && code == exitError {
		t.Logf("queen %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), code
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	lagRE  = regexp.MustCompile(`\b\d+s\b`)
)

// golden compares out, with ids and times masked, to testdata/name.golden.
func golden(t *testing.T, name, out string) {
	t.Helper()
	out = lagRE.ReplaceAllString(timeRE.ReplaceAllString(uuidRE.ReplaceAllString(out, "<id>"), "<time>"), "<n>s")
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if out != string(want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, out, want)
	}
}

func TestClientVerbs(t *testing.T) {
	for _, e := range testbroker.Engines {
		t.Run(e.Name, func(t *testing.T) {
			env := map[string]string{"QUEEN_URL": e.Start(t), "QUEEN_CONFIG": filepath.Join(t.TempDir(), "contexts.json")}
			ctx := t.Context()

			// Push from stdin: JSON lines, a line that is not JSON, a blank.
			stdin := `{"order":1}` + "\n" + `{"order":2}` + "\n\n" + "plain text\n"
			out, code := verb(t, ctx, env, stdin, "push", "orders", "--partition", "eu", "--tx", "batch1")
			if code != 0 {
				t.Fatalf("push: exit %d", code)
			}
			golden(t, "push", out)
			out, _ = verb(t, ctx, env, stdin, "push", "orders", "--partition", "eu", "--tx", "batch1", "-o", "json")
			var vs []api.PushVerdict
			if err := json.Unmarshal([]byte(out), &vs); err != nil || len(vs) != 3 || vs[0].Status != api.PushDuplicate {
				t.Fatalf("push again -o json: %v %s", err, out)
			}
			if _, code := verb(t, ctx, env, "", "push", "orders", `{"order":3}`); code != 0 {
				t.Fatalf("push argument: exit %d", code)
			}

			golden(t, "queues", must(verb(t, ctx, env, "", "queues")))

			// Group g reads two messages, then the lag shows the rest.
			out, code = verb(t, ctx, env, "", "pop", "orders", "--group", "g", "--batch", "2", "-o", "json")
			var pop api.PopResponse
			if err := json.Unmarshal([]byte(out), &pop); err != nil || code != 0 || len(pop.Messages) != 2 {
				t.Fatalf("pop: exit %d, %v, %s", code, err, out)
			}
			golden(t, "lag-group", must(verb(t, ctx, env, "", "lag", "--group", "g")))
			golden(t, "lag", must(verb(t, ctx, env, "", "lag")))

			// Tail follows for group g and acknowledges as it goes.
			tctx, cancel := context.WithCancel(ctx)
			var tailOut testlog.Buffer
			done := make(chan int)
			go func() {
				_, code := runVerb(t, tctx, env, "", &tailOut, "tail", "orders", "--group", "g")
				done <- code
			}()
			waitFor(t, func() bool { return strings.Count(tailOut.String(), "\n") >= 2 })
			verb(t, ctx, env, "", "push", "orders", `{"order":4}`)
			waitFor(t, func() bool { return strings.Count(tailOut.String(), "\n") >= 3 })
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("tail ended with exit %d", code)
			}
			lines := strings.Split(strings.TrimSpace(tailOut.String()), "\n")
			sort.Strings(lines) // the partitions' batches arrive in either order
			golden(t, "tail", strings.Join(lines, "\n")+"\n")
			out = must(verb(t, ctx, env, "", "lag", "--group", "g", "-o", "json"))
			var d api.GroupDetail
			if err := json.Unmarshal([]byte(out), &d); err != nil || d["orders"] == nil || d["orders"].Partitions[0].OffsetLag != 0 {
				t.Errorf("lag after tail: %v %s", err, out)
			}

			// Nothing left: pop exits 6; a missing queue 3; bad -o 2.
			if _, code := verb(t, ctx, env, "", "pop", "orders", "--group", "g"); code != exitEmpty {
				t.Errorf("empty pop: exit %d", code)
			}
			if _, code := verb(t, ctx, env, "", "queue", "nope"); code != exitNotFound {
				t.Errorf("missing queue: exit %d", code)
			}
			if _, code := verb(t, ctx, env, "", "queues", "-o", "yaml"); code != exitUsage {
				t.Errorf("-o yaml: exit %d", code)
			}
			if out, code := verb(t, ctx, env, "", "replay", "orders", "--group", "g", "--to", "2000-01-01T00:00:00Z"); code != 0 ||
				!strings.Contains(out, "moved") {
				t.Errorf("replay: exit %d: %s", code, out)
			}
			if out, code := verb(t, ctx, env, "", "pop", "orders", "--group", "g", "--batch", "10", "--no-ack"); code != 0 ||
				strings.Count(out, "\n") != 4 {
				t.Errorf("pop after replay: exit %d:\n%s", code, out)
			}
			if out, code := verb(t, ctx, env, "", "dlq", "list"); code != 0 || !strings.HasPrefix(out, "QUEUE") {
				t.Errorf("dlq list: exit %d: %s", code, out)
			}
			if _, code := verb(t, ctx, env, "", "dlq", "delete"); code != exitUsage {
				t.Errorf("dlq delete without a filter: exit %d", code)
			}
			if out, code := verb(t, ctx, env, "", "maintenance", "status"); code != 0 || !strings.Contains(out, "push maintenance: off") {
				t.Errorf("maintenance: exit %d: %s", code, out)
			}
		})
	}
}

func TestClientVerbsContextsAndExitCodes(t *testing.T) {
	url := testbroker.SQLite(t)
	env := map[string]string{"QUEEN_CONFIG": filepath.Join(t.TempDir(), "contexts.json")}
	ctx := t.Context()
	// Nothing listens on port 9 of loopback: unreachable.
	if _, code := verb(t, ctx, map[string]string{"QUEEN_URL": "http://127.0.0.1:9", "QUEEN_CONFIG": env["QUEEN_CONFIG"]}, "", "health"); code != exitUnreachable {
		t.Errorf("unreachable broker: exit %d", code)
	}
	verb(t, ctx, env, "", "context", "add", "local", "--url", url)
	verb(t, ctx, env, "", "context", "add", "other", "--url", "http://127.0.0.1:9", "--token", "secret")
	out, _ := verb(t, ctx, env, "", "context", "list")
	if !regexp.MustCompile(`(?m)^\*\s+local\s+`+regexp.QuoteMeta(url)+`\s+-$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+other\s+http://127.0.0.1:9\s+set$`).MatchString(out) {
		t.Errorf("context list:\n%s", out)
	}
	if out, code := verb(t, ctx, env, "", "health", "-o", "json"); code != 0 || !strings.Contains(out, `"engine": "sqlite"`) {
		t.Errorf("health through the current context: exit %d: %s", code, out)
	}
	verb(t, ctx, env, "", "context", "use", "other")
	if _, code := verb(t, ctx, env, "", "health"); code != exitUnreachable {
		t.Errorf("health through context other: exit %d", code)
	}
	if _, code := verb(t, ctx, env, "", "health", "--context", "local"); code != 0 {
		t.Errorf("--context local: exit %d", code)
	}
	if st, err := os.Stat(env["QUEEN_CONFIG"]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("contexts file: %v, mode %v", err, st.Mode())
	}
	for _, sh := range []string{"bash", "zsh"} {
		if out, code := verb(t, ctx, env, "", "completion", sh); code != 0 || !strings.Contains(out, "queen") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes", sh, code, len(out))
		}
	}
	if out, code := verb(t, ctx, env, "", "push", "--help"); code != 0 || !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "--partition") {
		t.Errorf("push --help: exit %d:\n%s", code, out)
	}
}

func must(out string, _ int) string { return out }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
