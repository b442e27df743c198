package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
)

// client is a thin HTTP/JSON client for the routes the bench drives; the
// bodies are package api's wire types.
type client struct {
	auth []string // the Authorization header's value; nil for none
	base string
	hc   *http.Client
}

// bearer is the Authorization header of token, built once for every
// request.
func bearer(token string) []string {
	if token == "" {
		return nil
	}
	return []string{"Bearer " + token}
}

// newHTTPClient returns a client whose idle pool holds a connection for
// every worker: with the default pool of 2 per host, most requests of a
// 16-worker run would open a new TCP connection and the bench would measure
// handshakes.
func newHTTPClient(conns int) *http.Client {
	conns = max(conns, 2)
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil, // loopback benchmarks must not go through a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// do sends one request and reads the whole answer.
func (c *client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != nil {
		req.Header["Authorization"] = c.auth
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, out, nil
}

// health returns the engine the broker reports, "" if unknown.
func (c *client) health(ctx context.Context) (string, error) {
	status, body, err := c.do(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return "", err
	}
	var h api.Health
	_ = json.Unmarshal(body, &h)
	if status != http.StatusOK {
		return h.Engine, fmt.Errorf("health: HTTP %d: %s", status, strings.TrimSpace(string(body)))
	}
	return h.Engine, nil
}

func (c *client) deleteQueue(ctx context.Context, queue string) error {
	status, body, err := c.do(ctx, http.MethodDelete, "/api/v1/resources/queues/"+url.PathEscape(queue), nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("delete queue %s: HTTP %d: %s", queue, status, strings.TrimSpace(string(body)))
	}
	return nil
}
