package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// binDir holds the queen binary built for the process tests; TestMain
// removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queen-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// queenBinary builds cmd/queen once per test run, with the race detector
// when the tests have it, and returns its path. Tests that need no process
// pay nothing.
func queenBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go command, to build cmd/queen: %w", err)
			return
		}
		binPath = filepath.Join(binDir, "queen")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/queen-go/queen/cmd/queen")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, goCmd, args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go %v: %w\n%s", args, err, out)
			return
		}
		t.Logf("built %s in %v (race %v)", binPath, time.Since(start).Round(time.Millisecond), raceEnabled)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}
