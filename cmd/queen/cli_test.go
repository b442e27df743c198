package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/config"
)

// queen runs the binary with args and extra environment variables to its
// end, returning its output and exit status.
func queen(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("queen %q: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

func TestHelpListsEverySetting(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"serve", "--help"}, {"help", "serve"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := queen(t, nil, args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for _, s := range config.Settings() {
				for _, want := range append([]string{"--" + s.Flag + " ", "env " + s.Env, s.Usage}, s.Aliases...) {
					if !strings.Contains(out, want) {
						t.Errorf("help lacks %q", want)
					}
				}
				if d := s.Default + s.Unset; !strings.Contains(out, "default "+d) {
					t.Errorf("help lacks %s's default %q", s.Env, d)
				}
			}
			for _, name := range config.Unavailable() {
				if !strings.Contains(out, name) {
					t.Errorf("help lacks the refused setting %s", name)
				}
			}
		})
	}
	out, _, _ := queen(t, nil, "--help")
	for _, cmd := range []string{"serve", "bench", "version"} {
		if !strings.Contains(out, "  "+cmd+" ") {
			t.Errorf("queen --help does not list the %s command:\n%s", cmd, out)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	out, errOut, code := queen(t, nil, "version")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := "queen " + currentVersion().Version + "\n"
	if !strings.HasPrefix(out, want) || !strings.Contains(out, runtime.Version()) || !strings.Contains(out, "revision ") {
		t.Fatalf("queen version printed %q; want it to start with %q and name the Go version and revision", out, want)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag: --nope"},
		{[]string{"serve", "--nope"}, "unknown flag: --nope"},
		{[]string{"--port"}, "flag needs an argument: --port"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"serv"}, "did you mean serve?"},
		{[]string{"serve", "now"}, `serve takes no arguments, got "now"`},
		{[]string{"version", "--nope"}, "unknown flag: --nope"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := queen(t, nil, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help") {
				t.Fatalf("exit %d, stderr %q; want 2 and a message containing %q and pointing at --help", code, errOut, tc.want)
			}
			if out != "" {
				t.Fatalf("stdout %q, want nothing", out)
			}
		})
	}
}

// A bad encryption key stops start-up before anything is opened, naming the
// variable and never the value.
func TestBadEncryptionKeyRefusesToStart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	_, errOut, code := queen(t, []string{"QUEEN_ENCRYPTION_KEY=0123abcd", "QUEEN_DATA_DIR=" + dataDir})
	const want = "QUEEN_ENCRYPTION_KEY / QUEEN_ENCRYPTION_KEYS_OLD: encryption key: want 64 hex characters"
	if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "0123abcd") {
		t.Fatalf("exit %d, stderr %q; want 1 and %q, without the key", code, errOut, want)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused broker touched its data dir: %v", err)
	}
}

func TestBadSettingNamesItsSource(t *testing.T) {
	_, errOut, code := queen(t, []string{"LOG_LEVEL=loud"}, "serve", "--port=http")
	if code != 1 || !strings.Contains(errOut, `LOG_LEVEL="loud"`) || !strings.Contains(errOut, `--port="http"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestBenchParsesItsOwnFlags(t *testing.T) {
	_, errOut, code := queen(t, nil, "bench", "-h")
	if code != 0 || !strings.Contains(errOut, "usage: queen bench") || !strings.Contains(errOut, "-push-batch") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestFlagsConfigureTheBroker starts `queen serve` with a bad PORT that
// its --port flag overrides, JSON logs by flag, and checks that /health
// reports the version `queen version` prints.
func TestFlagsConfigureTheBroker(t *testing.T) {
	port := freePort(t)
	p := launch(t, port, []string{"PORT=not-a-port", "QUEEN_BIND_ADDR=127.0.0.1"},
		"serve", fmt.Sprintf("--port=%d", port), "--data-dir", t.TempDir(), "--log-format=json")
	resp, err := http.Get(p.base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Version string }
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if want := currentVersion().Version; health.Version != want {
		t.Errorf("/health version %q, want %q", health.Version, want)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("broker exited with %v; logs:\n%s", err, p.logs)
	}
	if !strings.Contains(p.logs.String(), `"msg":"queen listening"`) {
		t.Fatalf("--log-format=json ignored; logs:\n%s", p.logs)
	}
}

// TestVersionSetAtLinkTime builds the binary the way a release does.
func TestVersionSetAtLinkTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	bin := filepath.Join(t.TempDir(), "queen")
	build := exec.Command(goTool, "build", "-o", bin, "-ldflags", "-X main.version=9.9.9-test", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "queen 9.9.9-test\n") {
		t.Fatalf("queen version: %v, %q", err, out)
	}
}
