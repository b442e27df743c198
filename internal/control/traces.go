package control

import (
	"context"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/store"
)

// Defaults of a recorded trace, as in Queen.
const (
	DefaultTraceEventType = "info"
)

// TraceInput is one trace to record for a message.
type TraceInput struct {
	store.MessageRef
	ConsumerGroup string // "" means store.QueueMode
	Data          []byte // raw JSON
	EventType     string // "" means DefaultTraceEventType
	Names         []string
	Tenant        string
	WorkerID      string
}

// RecordTrace stores a trace of an existing message and returns its id (a
// UUIDv7); store.ErrNotFound when the tenant has no such message. Repeated
// names are recorded once.
func (c *Control) RecordTrace(ctx context.Context, in TraceInput) (string, error) {
	p := &store.TraceRecordParams{
		MessageRef: in.MessageRef, ConsumerGroup: in.ConsumerGroup, Data: in.Data, EventType: in.EventType,
		ID: uuid.Must(uuid.NewV7()).String(), Now: c.now(), Tenant: in.Tenant, WorkerID: in.WorkerID,
	}
	if p.ConsumerGroup == "" {
		p.ConsumerGroup = store.QueueMode
	}
	if p.EventType == "" {
		p.EventType = DefaultTraceEventType
	}
	seen := make(map[string]bool, len(in.Names))
	for _, n := range in.Names {
		if !seen[n] {
			seen[n] = true
			p.Names = append(p.Names, n)
		}
	}
	if err := c.store.TraceRecord(ctx, p); err != nil {
		return "", err
	}
	return p.ID, nil
}

// Traces returns a message's traces, oldest first; store.ErrNotFound when
// the tenant has no such message.
func (c *Control) Traces(ctx context.Context, tenant string, ref store.MessageRef) ([]store.Trace, error) {
	return c.store.TraceList(ctx, &store.TraceListParams{MessageRef: ref, Tenant: tenant})
}

// TracesByName returns a page of the traces recorded under a name, oldest
// first, and the name's trace count.
func (c *Control) TracesByName(ctx context.Context, p store.TraceListByNameParams) (*store.TraceListByNameResult, error) {
	return c.store.TraceListByName(ctx, &p)
}

// TraceNames returns a page of the tenant's trace names, most recently
// recorded first, and how many there are.
func (c *Control) TraceNames(ctx context.Context, p store.TraceNamesParams) (*store.TraceNamesResult, error) {
	return c.store.TraceNames(ctx, &p)
}
