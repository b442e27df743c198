package client

import (
	"context"
	"net/url"

	"github.com/queen-go/queen/api"
)

// DeliveryTargets lists the webhook delivery targets (of one queue when
// queue is not ""), without their secrets.
func (c *Client) DeliveryTargets(ctx context.Context, queue string) ([]api.DeliveryTarget, error) {
	q := url.Values{}
	if queue != "" {
		q.Set("queue", queue)
	}
	var out struct {
		Targets []api.DeliveryTarget `json:"targets"`
	}
	return out.Targets, c.get(ctx, "/api/v1/delivery/targets", q, &out)
}

// DeliveryAttempts reads a message's delivery attempts, per target of its
// queue.
func (c *Client) DeliveryAttempts(ctx context.Context, queue, messageID string) ([]api.DeliveryAttempts, error) {
	var out struct {
		Deliveries []api.DeliveryAttempts `json:"deliveries"`
	}
	return out.Deliveries, c.get(ctx, "/api/v1/delivery/attempts/"+url.PathEscape(queue)+"/"+url.PathEscape(messageID),
		nil, &out)
}
