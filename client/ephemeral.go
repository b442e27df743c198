package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/queen-go/queen/api"
)

// CreateEphemeral creates a short-lived in-memory queue (a name is minted
// when req.Name is "").
func (c *Client) CreateEphemeral(ctx context.Context, req api.EphemeralCreateRequest) (*api.EphemeralCreated, error) {
	var out api.EphemeralCreated
	_, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/ephemeral"}, req, &out)
	return &out, err
}

// PushEphemeral pushes payloads (JSON) to an ephemeral queue.
func (c *Client) PushEphemeral(ctx context.Context, queue string, payloads ...json.RawMessage) ([]api.EphemeralVerdict, error) {
	req := api.EphemeralPushRequest{Items: make([]api.EphemeralItem, len(payloads))}
	for i, p := range payloads {
		req.Items[i] = api.EphemeralItem{Queue: queue, Payload: p}
	}
	var out []api.EphemeralVerdict
	if _, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/ephemeral/push", lane: queue}, req, &out); err != nil {
		return nil, err
	}
	pe := &PartialError{Op: "push", Sent: len(payloads), Got: len(out)}
	for i, v := range out {
		if v.Status == api.PushFailed || v.Status == api.PushError {
			pe.Failed = append(pe.Failed, ItemError{Index: i, Reason: v.Error})
		}
	}
	if pe.Sent != pe.Got || len(pe.Failed) > 0 {
		return out, pe
	}
	return out, nil
}

// PopEphemeral pops up to batch messages of an ephemeral queue, waiting
// up to wait for one (0: answer at once). It returns nil, nil when there
// are none.
func (c *Client) PopEphemeral(ctx context.Context, queue string, batch int, wait time.Duration) (*api.EphemeralPop, error) {
	q := url.Values{"batch": {strconv.Itoa(max(batch, 1))}}
	cl := call{method: http.MethodGet, path: "/api/v1/ephemeral/" + url.PathEscape(queue) + "/pop", query: q, lane: queue}
	if wait > 0 {
		q.Set("wait", "true")
		q.Set("timeout", strconv.FormatInt(wait.Milliseconds(), 10))
		cl.poll = wait
	}
	var out api.EphemeralPop
	status, err := c.json(ctx, cl, nil, &out)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	return &out, nil
}

// DeleteEphemeral deletes an ephemeral queue; deleting one that is gone
// succeeds.
func (c *Client) DeleteEphemeral(ctx context.Context, queue string) error {
	_, err := c.json(ctx, call{method: http.MethodDelete, path: "/api/v1/ephemeral/" + url.PathEscape(queue), lane: queue, idempotent: true}, nil, nil)
	return err
}

// Envelope is the payload Request pushes: the request's body and the
// ephemeral queue its reply is awaited on.
type Envelope struct {
	ReplyTo string          `json:"replyTo"`
	Body    json.RawMessage `json:"body"`
}

// ErrNoReply is a Request whose reply did not come in time.
var ErrNoReply = errors.New("client: no reply in time")

// Request pushes body (JSON-encoded) to queue in an Envelope naming a fresh
// ephemeral queue, waits up to timeout for one reply there, deletes the
// ephemeral queue and returns the reply. The service that consumes queue
// answers with Reply.
func (c *Client) Request(ctx context.Context, queue string, body any, timeout time.Duration) (json.RawMessage, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("client: encode request: %w", err)
	}
	ttl := int(timeout/time.Second) + 60
	eq, err := c.CreateEphemeral(ctx, api.EphemeralCreateRequest{TTLSeconds: &ttl})
	if err != nil {
		return nil, fmt.Errorf("request: reply queue: %w", err)
	}
	defer c.DeleteEphemeral(context.WithoutCancel(ctx), eq.Queue)
	env, _ := json.Marshal(Envelope{ReplyTo: eq.Queue, Body: raw})
	if _, err := c.Push(ctx, api.PushItem{Queue: queue, Payload: env}); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, ErrNoReply
		}
		res, err := c.PopEphemeral(ctx, eq.Queue, 1, min(left, 30*time.Second))
		if err != nil {
			return nil, fmt.Errorf("request: await reply: %w", err)
		}
		if res != nil && len(res.Messages) > 0 {
			return res.Messages[0].Data, nil
		}
	}
}

// Reply answers a message Request pushed: it reads its Envelope and
// pushes reply (JSON-encoded) to the ephemeral queue it names.
func (c *Client) Reply(ctx context.Context, m api.PopMessage, reply any) error {
	var env Envelope
	if err := json.Unmarshal(m.Data, &env); err != nil || env.ReplyTo == "" {
		return fmt.Errorf("client: message %s is not a request (no replyTo)", m.TransactionID)
	}
	raw, err := json.Marshal(reply)
	if err != nil {
		return fmt.Errorf("client: encode reply: %w", err)
	}
	_, err = c.PushEphemeral(ctx, env.ReplyTo, raw)
	return err
}
