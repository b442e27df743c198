package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testlog"
)

// process is a broker running as a child process of the test: the real
// binary, configured by environment variables as in production.
type process struct {
	cmd    *exec.Cmd
	url    string // base URL
	logs   *testlog.Buffer
	exited chan struct{} // closed once the process is reaped
	err    error         // its exit status, once exited is closed
}

// freePort returns a loopback TCP port nothing listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProcess runs the queen binary with env added to the test's own
// environment, on a free loopback port, and waits until it answers HTTP
// (whatever /health says: it may be serving during an outage). Cleanup
// kills it if the test has not stopped it, and prints its logs if the test
// failed.
func startProcess(t testing.TB, env ...string) *process {
	t.Helper()
	bin := queenBinary(t)
	port := freePort(t)
	cmd := exec.Command(bin)
	// Later entries win, so these override the test's environment.
	cmd.Env = append(os.Environ(), append([]string{
		"QUEEN_BIND_ADDR=127.0.0.1", fmt.Sprintf("PORT=%d", port), "QUEEN_DATA_DIR=" + t.TempDir(),
	}, env...)...)
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &process{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), logs: logs, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("logs of the broker process:\n%s", logs.String())
		}
	})
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.exited:
			t.Fatalf("broker process exited at start-up: %v", p.err)
		default:
		}
		resp, err := hc.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker process does not answer HTTP on %s after 30s: %v", p.url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the process to exit; it returns the exit
// error (nil for a clean exit) or an error if it outlives timeout.
func (p *process) stop(timeout time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case <-p.exited:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("broker process still running %v after SIGTERM", timeout)
	}
}
