package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/queen-go/queen/api"
)

// Item returns a push item of queue whose payload is v encoded as JSON
// (a json.RawMessage or []byte of JSON is sent as it is).
func Item(queue string, v any) (api.PushItem, error) {
	var raw json.RawMessage
	switch p := v.(type) {
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return api.PushItem{}, fmt.Errorf("client: encode payload: %w", err)
		}
		raw = b
	}
	if !json.Valid(raw) {
		return api.PushItem{}, fmt.Errorf("client: payload is not JSON")
	}
	return api.PushItem{Queue: queue, Payload: raw}, nil
}

// NewTransactionID returns a random id for a message: an item that carries
// one can be pushed again without being stored twice (within the queue's
// deduplication window).
func NewTransactionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // a version 4 UUID
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// Push pushes items in one request and returns their verdicts, in order.
// An item without a transactionId is given one, so that a push retried
// after a lost connection is not stored twice. A verdict of failure, or a
// verdict count that is not the item count, is a *PartialError beside the
// verdicts; a duplicate or a buffered item is not a failure.
func (c *Client) Push(ctx context.Context, items ...api.PushItem) ([]api.PushVerdict, error) {
	if len(items) == 0 {
		return nil, nil
	}
	req := api.PushRequest{Items: make([]api.PushItem, len(items))}
	copy(req.Items, items)
	for i := range req.Items {
		if req.Items[i].TransactionID == "" {
			req.Items[i].TransactionID = NewTransactionID()
		}
	}
	var out []api.PushVerdict
	lane := Lane(items[0].Queue, items[0].Partition, "")
	if _, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/push", lane: lane, idempotent: true}, req, &out); err != nil {
		return nil, err
	}
	return out, pushVerdicts(len(items), out)
}

func pushVerdicts(sent int, out []api.PushVerdict) error {
	pe := &PartialError{Op: "push", Sent: sent, Got: len(out)}
	for i, v := range out {
		if v.Status == api.PushFailed || v.Status == api.PushError {
			reason := string(v.Status)
			if v.Error != nil {
				reason = *v.Error
			}
			pe.Failed = append(pe.Failed, ItemError{Index: i, TransactionID: v.TransactionID, Reason: reason})
		}
	}
	if sent != len(out) || len(pe.Failed) > 0 {
		return pe
	}
	return nil
}

// PopOptions are the parameters of a pop.
type PopOptions struct {
	// Partition pins the pop to one partition of the queue.
	Partition string
	// Namespace and Task pop across every queue with these labels, when
	// the queue is "".
	Namespace, Task string
	// Group is the consumer group; "" is queue mode.
	Group string
	// Batch is the most messages to deliver; 0 means 1.
	Batch int
	// Wait long-polls until a message arrives or Timeout passes.
	Wait bool
	// Timeout is the long poll's; 0 means the broker's default (30 s).
	Timeout time.Duration
	// Partitions is how many partitions one pop may lease; 0 means 1.
	Partitions int
	// AutoAck commits the messages as they are delivered: a crash after
	// the answer loses them. Never set it when you acknowledge.
	AutoAck bool
	// SubscriptionMode ("new") and SubscriptionFrom ("now" or a time)
	// say where a new group starts.
	SubscriptionMode, SubscriptionFrom string
}

// Pop pops messages of queue. It returns nil, nil when there are none (the
// broker's 204).
func (c *Client) Pop(ctx context.Context, queue string, o PopOptions) (*api.PopResponse, error) {
	path := "/api/v1/pop"
	lane := Lane(o.Namespace, o.Task, o.Group)
	if queue != "" {
		path = "/api/v1/pop/queue/" + url.PathEscape(queue)
		if o.Partition != "" {
			path += "/partition/" + url.PathEscape(o.Partition)
		}
		lane = Lane(queue, o.Partition, o.Group)
	}
	q := url.Values{}
	if o.Batch > 0 {
		q.Set("batch", strconv.Itoa(o.Batch))
	}
	cl := call{method: http.MethodGet, path: path, query: q, lane: lane}
	if o.Wait {
		q.Set("wait", "true")
		cl.poll = 30 * time.Second
		if o.Timeout > 0 {
			cl.poll = o.Timeout
			q.Set("timeout", strconv.FormatInt(o.Timeout.Milliseconds(), 10))
		}
	} else if o.Timeout > 0 {
		q.Set("timeout", strconv.FormatInt(o.Timeout.Milliseconds(), 10))
	}
	if o.Partitions > 0 {
		q.Set("partitions", strconv.Itoa(o.Partitions))
	}
	if o.AutoAck {
		q.Set("autoAck", "true")
		// A lost answer of an autoAck pop loses its messages either way;
		// asking again at least delivers the next ones.
	} else {
		// A pop whose answer was lost leased messages nobody holds: they
		// come back when the lease expires, so asking again is safe.
		cl.idempotent = true
	}
	for k, v := range map[string]string{
		"consumerGroup": o.Group, "subscriptionMode": o.SubscriptionMode, "subscriptionFrom": o.SubscriptionFrom,
	} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if queue == "" {
		if o.Namespace != "" {
			q.Set("namespace", o.Namespace)
		}
		if o.Task != "" {
			q.Set("task", o.Task)
		}
	}
	var out api.PopResponse
	status, err := c.json(ctx, cl, nil, &out)
	if err != nil || status == http.StatusNoContent {
		return nil, err
	}
	return &out, nil
}

// Acks returns the acknowledgements of msgs with status (AckCompleted …),
// each under its own lease and group.
func Acks(msgs []api.PopMessage, status api.AckStatus, reason string) []api.Ack {
	acks := make([]api.Ack, len(msgs))
	for i, m := range msgs {
		acks[i] = api.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			ConsumerGroup: m.ConsumerGroup, Status: status, Error: reason}
		if m.LeaseID != nil {
			acks[i].LeaseID = *m.LeaseID
		}
		if acks[i].ConsumerGroup == queueMode {
			acks[i].ConsumerGroup = ""
		}
	}
	return acks
}

// queueMode is the group name a pop in queue mode answers.
const queueMode = "__QUEUE_MODE__"

// Ack sends one acknowledgement. A verdict of failure (an expired lease …)
// is a *PartialError beside the verdict.
func (c *Client) Ack(ctx context.Context, a api.Ack) (api.AckVerdict, error) {
	var out []api.AckVerdict
	if _, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/ack", lane: a.PartitionID, idempotent: true}, a, &out); err != nil {
		return api.AckVerdict{}, err
	}
	err := ackVerdicts("ack", 1, out)
	if len(out) == 0 {
		return api.AckVerdict{}, err
	}
	return out[0], err
}

// AckBatch sends acknowledgements in one request and returns their
// verdicts in order; a failed one is a *PartialError beside the verdicts.
// An acknowledgement is an offset commit: a negative one stops the
// partition's cursor at its message, so that every later message of the
// batch comes back.
func (c *Client) AckBatch(ctx context.Context, acks []api.Ack) ([]api.AckVerdict, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	var out []api.AckVerdict
	cl := call{method: http.MethodPost, path: "/api/v1/ack/batch", lane: acks[0].PartitionID, idempotent: true}
	if _, err := c.json(ctx, cl, api.AckBatchRequest{Acknowledgments: acks}, &out); err != nil {
		return nil, err
	}
	return out, ackVerdicts("ack", len(acks), out)
}

func ackVerdicts(op string, sent int, out []api.AckVerdict) error {
	pe := &PartialError{Op: op, Sent: sent, Got: len(out)}
	for i, v := range out {
		if !v.Success {
			reason := "not acknowledged"
			if v.Error != nil {
				reason = *v.Error
			}
			pe.Failed = append(pe.Failed, ItemError{Index: i, TransactionID: v.TransactionID, Reason: reason})
		}
	}
	if sent != len(out) || len(pe.Failed) > 0 {
		return pe
	}
	return nil
}

// Extend renews a lease so that it has d left (whole seconds; 0 means the
// broker's default, 60 s). Renewed 0 means the lease is unknown, expired or
// not the caller's.
func (c *Client) Extend(ctx context.Context, leaseID string, d time.Duration) (api.LeaseExtendResponse, error) {
	var out api.LeaseExtendResponse
	cl := call{method: http.MethodPost, path: "/api/v1/lease/" + url.PathEscape(leaseID) + "/extend", lane: leaseID, idempotent: true}
	_, err := c.json(ctx, cl, api.LeaseExtendRequest{Seconds: int((d + time.Second - 1) / time.Second)}, &out)
	return out, err
}

// Transaction commits operations together or not at all. A transaction the
// broker rolled back (Success false, with or without a 400) is an error
// beside the answer: an *api.Error for a 400, a *PartialError for a 200.
func (c *Client) Transaction(ctx context.Context, req api.TransactionRequest) (*api.TransactionResponse, error) {
	for i, op := range req.Operations {
		if op.Type == api.OperationPush {
			items := make([]api.PushItem, len(op.Items))
			copy(items, op.Items)
			for j := range items {
				if items[j].TransactionID == "" {
					items[j].TransactionID = NewTransactionID()
				}
			}
			req.Operations[i].Items = items
		}
	}
	var out api.TransactionResponse
	_, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/transaction"}, req, &out)
	if err != nil {
		return nil, err
	}
	if !out.Success {
		reason := "rolled back"
		if out.Error != nil {
			reason = *out.Error
		}
		return &out, &PartialError{Op: "transaction", Sent: len(req.Operations), Got: len(req.Operations),
			Failed: []ItemError{{Index: -1, TransactionID: out.TransactionID, Reason: reason}}}
	}
	return &out, nil
}

// PushOp is a transaction's operation that pushes items.
func PushOp(items ...api.PushItem) api.TransactionOperation {
	return api.TransactionOperation{Type: api.OperationPush, Items: items}
}

// AckOp is a transaction's operation that acknowledges a message.
func AckOp(a api.Ack) api.TransactionOperation {
	return api.TransactionOperation{Type: api.OperationAck, Ack: a}
}

// Configure sets a queue's labels and options (creating the queue).
func (c *Client) Configure(ctx context.Context, req api.ConfigureRequest) (*api.ConfigureResponse, error) {
	var out api.ConfigureResponse
	if _, err := c.json(ctx, call{method: http.MethodPost, path: "/api/v1/configure", idempotent: true}, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteQueue deletes a queue and its messages; deleting a queue that does
// not exist succeeds.
func (c *Client) DeleteQueue(ctx context.Context, queue string) error {
	_, err := c.json(ctx, call{method: http.MethodDelete, path: "/api/v1/resources/queues/" + url.PathEscape(queue), idempotent: true}, nil, nil)
	return err
}
