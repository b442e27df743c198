package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	qclient "github.com/queen-go/queen/client"
)

// client is the bench's handle on package client, the product's one HTTP
// client. The hot paths send bodies built by hand through its Do, once per
// try, so that the bench measures and counts every request itself and its
// encoding stays off the CPU the broker needs; the rest are its typed calls.
type client struct {
	*qclient.Client
	base string
}

// newClient returns a client of the broker at base whose idle pool holds
// a connection for every one of conns workers (twice over): with a pool of
// 2 per host, most requests of a 16-worker run would open a new TCP
// connection and the bench would measure handshakes. hc, when not nil,
// sends the requests instead.
func newClient(base, token string, conns int, hc *http.Client) (*client, error) {
	base = strings.TrimRight(base, "/")
	c, err := qclient.New(qclient.Config{URL: base, Token: token, HTTPClient: hc, MaxIdleConns: max(conns, 2) * 2})
	if err != nil {
		return nil, err
	}
	return &client{Client: c, base: base}, nil
}

// do sends one request and reads the whole answer.
func (c *client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	return c.Do(ctx, method, path, body)
}

// health returns the engine the broker reports.
func (c *client) health(ctx context.Context) (string, error) {
	h, err := c.Health(ctx)
	if err != nil {
		return "", fmt.Errorf("health: %w", err)
	}
	return h.Engine, nil
}

func (c *client) deleteQueue(ctx context.Context, queue string) error {
	if err := c.DeleteQueue(ctx, queue); err != nil {
		return fmt.Errorf("delete queue %s: %w", queue, err)
	}
	return nil
}
