package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

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

// Page selects a page of a list; zero values take the broker's defaults.
type Page struct {
	Limit, Offset int
}

func (p Page) query() url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Offset > 0 {
		q.Set("offset", strconv.Itoa(p.Offset))
	}
	return q
}

// Queues lists queues, with their partition counts and pending messages.
func (c *Client) Queues(ctx context.Context, p Page) (*api.QueueList, error) {
	var out api.QueueList
	return &out, c.get(ctx, "/api/v1/resources/queues", p.query(), &out)
}

// Queue describes a queue: its partitions and their counts.
func (c *Client) Queue(ctx context.Context, queue string) (*api.QueueDetail, error) {
	var out api.QueueDetail
	return &out, c.get(ctx, "/api/v1/resources/queues/"+url.PathEscape(queue), nil, &out)
}

// Groups lists the consumer groups, one element per group and queue, with
// their lag.
func (c *Client) Groups(ctx context.Context, p Page) ([]api.GroupListItem, error) {
	var out []api.GroupListItem
	return out, c.get(ctx, "/api/v1/consumer-groups", p.query(), &out)
}

// DLQFilter selects dead letters.
type DLQFilter struct {
	Queue, Group, Partition string
	Page
}

func (f DLQFilter) query() url.Values {
	q := f.Page.query()
	for k, v := range map[string]string{"queue": f.Queue, "consumerGroup": f.Group, "partition": f.Partition} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// DLQ lists dead letters.
func (c *Client) DLQ(ctx context.Context, f DLQFilter) (*api.DLQList, error) {
	var out api.DLQList
	return &out, c.get(ctx, "/api/v1/dlq", f.query(), &out)
}

// RequeueDLQ puts dead letters back on their queues.
func (c *Client) RequeueDLQ(ctx context.Context, req api.DLQRetryRequest) (*api.DLQRetryResponse, error) {
	var out api.DLQRetryResponse
	_, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/dlq/retry"}, req, &out)
	return &out, err
}

// DeleteDLQ deletes the dead letters f selects (its Page aside) and
// returns how many.
func (c *Client) DeleteDLQ(ctx context.Context, f DLQFilter) (int, error) {
	f.Page = Page{}
	var out api.DLQDeleteResponse
	_, err := c.json(ctx, call{method: http.MethodDelete, path: "/api/v1/dlq", query: f.query(), idempotent: true}, nil, &out)
	return out.Deleted, err
}

// Seek moves a group's cursors on a queue: to a time, or to the end.
func (c *Client) Seek(ctx context.Context, group, queue string, req api.SeekRequest) (*api.SeekResponse, error) {
	var out api.SeekResponse
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue) + "/seek"
	_, err := c.json(ctx, call{method: http.MethodPost, path: path, idempotent: true}, req, &out)
	return &out, err
}

// Maintenance reads the broker's maintenance modes.
func (c *Client) Maintenance(ctx context.Context) (*api.Maintenance, error) {
	var out api.Maintenance
	return &out, c.get(ctx, "/api/v1/system/maintenance", nil, &out)
}

// SetMaintenance turns push maintenance on or off: while it is on, pushes
// are buffered on disk instead of stored.
func (c *Client) SetMaintenance(ctx context.Context, on bool) (*api.MaintenanceSet, error) {
	var out api.MaintenanceSet
	_, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/system/maintenance", idempotent: true},
		api.MaintenanceRequest{Enabled: &on}, &out)
	return &out, err
}

// DeleteGroup deletes a consumer group and its cursors.
func (c *Client) DeleteGroup(ctx context.Context, group string) error {
	q := url.Values{"deleteMetadata": {"true"}}
	_, err := c.json(ctx, call{method: http.MethodDelete, path: "/api/v1/consumer-groups/" + url.PathEscape(group), query: q, idempotent: true}, nil, nil)
	return err
}
