package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testlog"
)

// The test binary doubles as the broker binary: run with this variable set,
// it runs main instead of the tests, so the tests can start, kill -9 and
// restart a real broker process without building one.
const runMainEnv = "QUEEN_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// process is a broker running as a child process.
type process struct {
	cmd  *exec.Cmd
	base string
	logs *testlog.Buffer
}

// freePort returns a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startBroker runs a broker configured by environment variables.
func startBroker(t *testing.T, dataDir string) *process {
	t.Helper()
	port := freePort(t)
	return launch(t, port, []string{"QUEEN_DATA_DIR=" + dataDir, "QUEEN_BIND_ADDR=127.0.0.1", fmt.Sprintf("PORT=%d", port)})
}

// launch runs the binary with env and args, expecting a broker on port,
// and waits until it is healthy.
func launch(t *testing.T, port int, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), logs: logs}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(p.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker did not become healthy; logs:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCrashAfterPushLosesNothing(t *testing.T) {
	dir := t.TempDir()
	p := startBroker(t, dir)
	resp, err := http.Post(p.base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"crash","transactionId":"must-survive","payload":{"n":1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []struct{ Status string }
	json.NewDecoder(resp.Body).Decode(&verdicts)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || len(verdicts) != 1 || verdicts[0].Status != "queued" {
		t.Fatalf("push: status %d verdicts %+v", resp.StatusCode, verdicts)
	}
	// No grace: the process dies right after answering 201.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()

	p2 := startBroker(t, dir)
	resp, err = http.Get(p2.base + "/api/v1/pop/queue/crash")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pop struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&pop)
	if resp.StatusCode != http.StatusOK || len(pop.Messages) != 1 || pop.Messages[0].TransactionID != "must-survive" {
		t.Fatalf("pop after kill -9: status %d, messages %+v", resp.StatusCode, pop.Messages)
	}
}

func TestSIGTERMAnswersWaitingPopsAndExits(t *testing.T) {
	p := startBroker(t, t.TempDir())
	popped := make(chan int, 1)
	go func() {
		resp, err := http.Get(p.base + "/api/v1/pop/queue/idle?wait=true&timeout=30000")
		if err != nil {
			popped <- -1
			return
		}
		resp.Body.Close()
		popped <- resp.StatusCode
	}()
	// Wait until the pop is parked before signalling.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(metric(t, p.base, "queen_pop_waiting"), "queen_pop_waiting 1") {
		if time.Now().After(deadline) {
			t.Fatal("pop never parked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-popped:
		if code != http.StatusNoContent {
			t.Fatalf("waiting pop answered %d during shutdown, want 204", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting pop not answered within 5s of SIGTERM")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("broker exited with %v; logs:\n%s", err, p.logs)
		}
	case <-ctx.Done():
		t.Fatal("broker did not exit after SIGTERM")
	}
	t.Logf("shutdown took %v", time.Since(start))
}

func metric(t *testing.T, base, name string) string {
	resp, err := http.Get(base + "/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, name+" ") {
			return line
		}
	}
	return ""
}

// TestSecondBrokerOnTheSameFolderRefused: a second broker on the data folder
// of a running one exits at once with a message saying so, and the first
// keeps serving.
func TestSecondBrokerOnTheSameFolderRefused(t *testing.T) {
	dir := t.TempDir()
	first := startBroker(t, dir)
	_, stderr, code := queen(t, []string{"QUEEN_DATA_DIR=" + dir, "QUEEN_BIND_ADDR=127.0.0.1",
		fmt.Sprintf("PORT=%d", freePort(t))})
	if code == 0 || !strings.Contains(stderr, "in use by another queen broker") {
		t.Fatalf("second broker on %s: exit %d, stderr:\n%s\nwant a refusal naming the folder", dir, code, stderr)
	}
	resp, err := http.Get(first.base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first broker after the refusal: /health %d", resp.StatusCode)
	}
}
