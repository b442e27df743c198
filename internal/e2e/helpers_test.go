package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/testlog"
)

// testURL returns the test database URL or skips the test.
func testURL(t testing.TB) string { return pgtest.URL(t) }

// newSchema returns a fresh schema, dropped when the test ends.
func newSchema(t testing.TB) string { return pgtest.Schema(t, "qe2e_") }

// broker is one in-process broker: a postgres store and a server on a
// loopback port.
type broker struct {
	name string
	url  string // base URL, e.g. http://127.0.0.1:41234
	logs *testlog.Buffer
}

// startBroker opens a store with pcfg (Logger set here) and serves a broker
// over it with scfg. Cleanup shuts the server down, then closes the store,
// and prints the broker's logs if the test failed.
func startBroker(t testing.TB, name string, pcfg postgres.Config, scfg server.Config) *broker {
	t.Helper()
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("broker", name)
	pcfg.Logger = log
	scfg.Logger = log
	if scfg.Version == "" {
		scfg.Version = "0.0.0-e2e"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, pcfg)
	if err != nil {
		t.Fatalf("broker %s: postgres.Open: %v", name, err)
	}
	srv, err := server.New(scfg, st)
	if err != nil {
		st.Close()
		t.Fatalf("broker %s: server.New: %v", name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("broker %s: listen: %v", name, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	b := &broker{name: name, url: "http://" + ln.Addr().String(), logs: logs}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("broker %s: shutdown: %v", name, err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("broker %s: Serve: %v", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("broker %s: Serve did not return within 20s of Shutdown", name)
		}
		if err := st.Close(); err != nil {
			t.Errorf("broker %s: store close: %v", name, err)
		}
		if t.Failed() {
			t.Logf("logs of broker %s:\n%s", name, logs.String())
		}
	})
	return b
}

// client is a small HTTP client for the brokers.
type client struct {
	hc *http.Client
}

func newClient(t testing.TB) *client {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	t.Cleanup(tr.CloseIdleConnections) // before the servers shut down
	return &client{hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// do performs one request; body is nil, a string of JSON text, or a value
// marshalled as JSON. It returns the status and the body.
func (c *client) do(ctx context.Context, method, u string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read body: %w", method, u, err)
	}
	return resp.StatusCode, data, nil
}

// pushItem is one item of a push request.
type pushItem struct {
	Queue         string `json:"queue"`
	Partition     string `json:"partition,omitempty"`
	TransactionID string `json:"transactionId,omitempty"`
	Payload       any    `json:"payload"`
}

// pushResult is one element of a push response.
type pushResult struct {
	Index         int    `json:"index"`
	MessageID     string `json:"message_id"`
	TransactionID string `json:"transaction_id"`
	QueueName     string `json:"queueName"`
	Status        string `json:"status"`
	Error         string `json:"error"`
}

// push posts items and returns the verdicts; anything but a 201 with one
// verdict per item, in order, is an error.
func (c *client) push(ctx context.Context, base string, items []pushItem) ([]pushResult, error) {
	status, body, err := c.do(ctx, "POST", base+"/api/v1/push", map[string]any{"items": items})
	if err != nil {
		return nil, err
	}
	if status != http.StatusCreated {
		return nil, fmt.Errorf("push: status %d, body %s", status, body)
	}
	var res []pushResult
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("push: body %s: %w", body, err)
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("push: %d verdicts for %d items; body %s", len(res), len(items), body)
	}
	for i := range res {
		if res[i].Index != i {
			return nil, fmt.Errorf("push: verdict %d has index %d; body %s", i, res[i].Index, body)
		}
		if items[i].TransactionID != "" && res[i].TransactionID != items[i].TransactionID {
			return nil, fmt.Errorf("push: verdict %d has transaction_id %q, want %q", i, res[i].TransactionID, items[i].TransactionID)
		}
	}
	return res, nil
}

// message is one delivered message.
type message struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	Data          json.RawMessage `json:"data"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       *string         `json:"leaseId"`
}

// popResponse is a 200 pop answer.
type popResponse struct {
	Success  bool      `json:"success"`
	Queue    string    `json:"queue"`
	LeaseID  *string   `json:"leaseId"`
	Messages []message `json:"messages"`
}

// pop performs GET path (a pop route with its query) and returns nil for a
// 204, the messages for a 200, and an error for anything else.
func (c *client) pop(ctx context.Context, base, path string) (*popResponse, error) {
	status, body, err := c.do(ctx, "GET", base+path, nil)
	if err != nil {
		return nil, err
	}
	switch status {
	case http.StatusNoContent:
		if len(body) != 0 {
			return nil, fmt.Errorf("pop: 204 with body %q", body)
		}
		return nil, nil
	case http.StatusOK:
		var p popResponse
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("pop: body %s: %w", body, err)
		}
		if !p.Success || len(p.Messages) == 0 {
			return nil, fmt.Errorf("pop: 200 without messages: %s", body)
		}
		return &p, nil
	default:
		return nil, fmt.Errorf("pop: status %d, body %s", status, body)
	}
}

// ackAll acknowledges every message of p as completed in one
// /api/v1/ack/batch call and requires every acknowledgement to succeed.
func (c *client) ackAll(ctx context.Context, base string, p *popResponse) error {
	acks := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		a := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "completed"}
		if m.LeaseID != nil {
			a["leaseId"] = *m.LeaseID
		}
		acks[i] = a
	}
	status, body, err := c.do(ctx, "POST", base+"/api/v1/ack/batch", map[string]any{"acknowledgments": acks})
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("ack batch: status %d, body %s", status, body)
	}
	var res []struct {
		Index         int     `json:"index"`
		TransactionID string  `json:"transactionId"`
		Success       bool    `json:"success"`
		Error         *string `json:"error"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return fmt.Errorf("ack batch: body %s: %w", body, err)
	}
	if len(res) != len(acks) {
		return fmt.Errorf("ack batch: %d verdicts for %d acks; body %s", len(res), len(acks), body)
	}
	for i, r := range res {
		if !r.Success || r.TransactionID != p.Messages[i].TransactionID {
			return fmt.Errorf("ack batch: verdict %d %+v for message %s (%s); body %s", i, r, p.Messages[i].ID, p.Messages[i].TransactionID, body)
		}
	}
	return nil
}

// getJSON performs a GET and decodes a JSON body of any status.
func (c *client) getJSON(ctx context.Context, u string, v any) (int, []byte, error) {
	status, body, err := c.do(ctx, "GET", u, nil)
	if err != nil {
		return 0, nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return status, body, fmt.Errorf("GET %s: status %d, body %q is not JSON: %w", u, status, body, err)
	}
	return status, body, nil
}

// popWaiting reads the queen_pop_waiting gauge of a broker.
func (c *client) popWaiting(ctx context.Context, base string) (float64, error) {
	status, body, err := c.do(ctx, "GET", base+"/metrics/prometheus", nil)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("metrics: status %d", status)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "queen_pop_waiting "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("metrics: no queen_pop_waiting gauge")
}

// outageError checks the answer to a request that needs the database, made
// while it is unreachable: 503 with a JSON {"error": …} body.
func outageError(status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	switch {
	case status != http.StatusServiceUnavailable:
		return fmt.Errorf("status %d, body %s; want 503", status, body)
	case json.Unmarshal(body, &e) != nil || e.Error == "":
		return fmt.Errorf("status %d with body %s; want {\"error\": …}", status, body)
	}
	return nil
}

// queuePath is the wildcard pop route of queue.
func queuePath(queue string) string {
	return "/api/v1/pop/queue/" + url.PathEscape(queue)
}

// waitUntil polls cond every interval until it reports true or timeout
// passes; it returns whether cond held.
func waitUntil(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// percentile returns the p-th percentile (0..100, nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s))+0.999999) - 1
	rank = min(max(rank, 0), len(s)-1)
	return s[rank]
}
