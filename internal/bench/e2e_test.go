package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// startBroker serves a broker over the embedded store on a loopback port
// and returns its URL.
func startBroker(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{}, st)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		// More than 5 s: Shutdown waits that long for a connection the
		// client opened but never used.
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func checkClean(t *testing.T, rep *Report, groups int) {
	t.Helper()
	if rep.Failed() {
		t.Fatalf("violations %v: %v", rep.Verification.Violations, rep.Verification.Details)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors: %v", rep.Errors)
	}
	if rep.Push.Messages == 0 {
		t.Fatal("nothing pushed")
	}
	c := rep.Consume
	if c == nil || c.TimedOut || c.Unique != rep.Push.Messages*int64(groups) {
		t.Fatalf("consumed %+v, pushed %d to %d group(s)", c, rep.Push.Messages, groups)
	}
	if rep.Push.Latency.Count == 0 || c.EndToEnd.Count != uint64(c.Messages) || c.EndToEnd.P50Ms <= 0 {
		t.Errorf("latencies not recorded: push %+v e2e %+v", rep.Push.Latency, c.EndToEnd)
	}
}

// TestBenchAgainstEmbeddedBroker runs the default pipeline for two seconds
// with fan-out to two groups, and checks the verifier found nothing.
func TestBenchAgainstEmbeddedBroker(t *testing.T) {
	url := startBroker(t)
	rep, err := Run(context.Background(), Config{
		URL: url, Producers: 2, Consumers: 2, Groups: 2, Duration: 2 * time.Second,
		PushBatch: 20, PopBatch: 50, Partitions: 4, PayloadBytes: 64, LongPoll: true,
		DrainTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, rep, 2)
	if rep.Engine != "sqlite" {
		t.Errorf("engine %q", rep.Engine)
	}
}

// TestBenchAckModes covers autoAck and transactions on a fixed message
// count, through Main so flags and the JSON report are exercised too.
func TestBenchAckModes(t *testing.T) {
	url := startBroker(t)
	for _, mode := range []string{AckAuto, AckTx} {
		t.Run(mode, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := Main(context.Background(), []string{"-url", url, "-ack", mode, "-messages", "1500",
				"-producers", "3", "-consumers", "2", "-push-batch", "10", "-pop-batch", "25", "-partitions", "5",
				"-long-poll=false", "-poll-interval", "2ms", "-json", "-quiet",
				"-with-limit", "sqlite:" + filepath.Join(t.TempDir(), "limit"), "-limit-duration", "200ms"}, &out, &errOut)
			if err != nil {
				t.Fatalf("Main: %v\n%s", err, errOut.String())
			}
			var rep Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("report is not JSON: %v\n%s", err, out.String())
			}
			checkClean(t, &rep, 1)
			if rep.Push.Messages != 1500 {
				t.Errorf("pushed %d, want 1500", rep.Push.Messages)
			}
			if mode == AckTx && rep.Consume.Forwarded == 0 {
				t.Error("tx mode forwarded nothing")
			}
			if rep.Limit == nil || rep.Limit.RowsPerSec <= 0 || rep.PushPercentOfLimit <= 0 {
				t.Errorf("limit missing: %+v, %.1f %%", rep.Limit, rep.PushPercentOfLimit)
			}
		})
	}
}

func TestMainRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Main(context.Background(), []string{"-ack", "sometimes"}, &out, &errOut); err == nil {
		t.Error("unknown ack mode accepted")
	}
	if err := Main(context.Background(), []string{"limit"}, &out, &errOut); err == nil {
		t.Error("limit without -limit-db accepted")
	}
	if err := Main(context.Background(), []string{"-h"}, &out, &errOut); err != nil {
		t.Errorf("-h: %v", err)
	}
}
