package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/queen-go/queen/api"
)

// KV applies key/value operations together (POST /api/v1/kv): all commit or
// none. A batch rolled back by an expectation is an *api.Error matching
// ErrKVConflict.
func (c *Client) KV(ctx context.Context, ops ...api.KVOperation) ([]api.KVResult, error) {
	var out api.KVBatchResponse
	_, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/kv"}, api.KVBatchRequest{Ops: ops}, &out)
	return out.Results, err
}

func kvPath(namespace, key string) string {
	return "/api/v1/kv/" + url.PathEscape(namespace) + "/" + url.PathEscape(key)
}

// Get reads a key; a missing key is an error matching ErrNotFound.
func (c *Client) Get(ctx context.Context, namespace, key string) (*api.KVEntry, error) {
	var out api.KVEntry
	return &out, c.get(ctx, kvPath(namespace, key), nil, &out)
}

// Put sets a key to value (JSON-encoded) and returns the key as stored.
func (c *Client) Put(ctx context.Context, namespace, key string, value any) (*api.KVEntry, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	var out api.KVEntry
	_, err = c.json(ctx, call{method: http.MethodPut, path: kvPath(namespace, key), idempotent: true},
		api.KVOperation{Value: raw}, &out)
	return &out, err
}

// DeleteKey deletes a key and says whether it existed.
func (c *Client) DeleteKey(ctx context.Context, namespace, key string) (bool, error) {
	var out api.KVDeleted
	_, err := c.json(ctx, call{method: http.MethodDelete, path: kvPath(namespace, key), idempotent: true}, nil, &out)
	return out.Deleted, err
}

// Schedule schedules timers: each pushes its message when it fires. An
// item without a transactionId is given one, so that a retry schedules
// nothing twice; a failed verdict is a *PartialError beside the verdicts.
func (c *Client) Schedule(ctx context.Context, items ...api.TimerItem) ([]api.TimerScheduled, error) {
	req := api.TimersRequest{Items: make([]api.TimerItem, len(items))}
	copy(req.Items, items)
	for i := range req.Items {
		if req.Items[i].TransactionID == "" {
			req.Items[i].TransactionID = NewTransactionID()
		}
	}
	var out []api.TimerScheduled
	if _, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/timers", idempotent: true}, req, &out); err != nil {
		return nil, err
	}
	pe := &PartialError{Op: "schedule", Sent: len(items), Got: len(out)}
	for i, v := range out {
		if v.Status == api.TimerVerdictFailed {
			pe.Failed = append(pe.Failed, ItemError{Index: i, TransactionID: v.TransactionID, Reason: v.Error})
		}
	}
	if pe.Sent != pe.Got || len(pe.Failed) > 0 {
		return out, pe
	}
	return out, nil
}

// CancelTimer cancels a timer; one that has fired is an error matching
// ErrTimerFired.
func (c *Client) CancelTimer(ctx context.Context, id string) error {
	_, err := c.json(ctx, call{method: http.MethodDelete, path: "/api/v1/timers/" + url.PathEscape(id), idempotent: true}, nil, nil)
	return err
}
