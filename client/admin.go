package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/queen-go/queen/api"
)

// get reads a route into out.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	_, err := c.json(ctx, call{method: http.MethodGet, path: path, query: q, idempotent: true}, nil, out)
	return err
}

// Health reads /health.
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var out api.Health
	return &out, c.get(ctx, "/health", nil, &out)
}

// Group describes a consumer group: its lanes per queue, with their lag
// and whether a lease is held.
func (c *Client) Group(ctx context.Context, group string) (api.GroupDetail, error) {
	var out api.GroupDetail
	return out, c.get(ctx, "/api/v1/consumer-groups/"+url.PathEscape(group), nil, &out)
}
