package store

import (
	"context"
	"time"
)

// TraceStore records and reads traces: events a consumer attaches to a
// message (partitionId, transactionId), optionally under names that group
// the traces of a workflow across messages. Every method is scoped to
// p.Tenant. A message's traces go with it (message deletion, queue
// deletion).
type TraceStore interface {
	// TraceList returns the traces of one message, oldest first;
	// ErrNotFound when the message does not exist.
	TraceList(ctx context.Context, p *TraceListParams) ([]Trace, error)
	// TraceListByName returns a page of the traces recorded under a name,
	// oldest first, with their message's queue, partition and payload, and
	// how many traces the name has.
	TraceListByName(ctx context.Context, p *TraceListByNameParams) (*TraceListByNameResult, error)
	// TraceNames returns a page of the trace names in use, most recently
	// recorded first, and how many there are. It reads a summary kept up to
	// date by every write, never the traces themselves.
	TraceNames(ctx context.Context, p *TraceNamesParams) (*TraceNamesResult, error)
	// TraceRecord stores one trace of an existing message; ErrNotFound when
	// the message does not exist.
	TraceRecord(ctx context.Context, p *TraceRecordParams) error
}

// Trace is one recorded trace. Queue, Partition, Payload and Sealed are set
// by TraceListByName only; Payload is nil (and Sealed SealNone) when the
// message is gone.
type Trace struct {
	ConsumerGroup string
	CreatedAt     time.Time
	Data          []byte // raw JSON
	EventType     string
	ID            string
	Names         []string // sorted
	Partition     string
	PartitionID   string
	Payload       []byte // as stored: sealed when Sealed says so
	Queue         string
	Sealed        Seal
	TransactionID string
	WorkerID      string // "" for none
}

// TraceRecordParams describe one trace. ID is minted by the caller
// (UUIDv7); Names are free of duplicates.
type TraceRecordParams struct {
	MessageRef
	ConsumerGroup string
	Data          []byte // raw JSON
	EventType     string
	ID            string
	Names         []string
	Now           time.Time
	Tenant        string
	WorkerID      string
}

// TraceListParams name the message whose traces to read.
type TraceListParams struct {
	MessageRef
	Tenant string
}

// TraceListByNameParams select a page of the traces of one name.
type TraceListByNameParams struct {
	Limit  int // <= 0 means 100
	Name   string
	Offset int
	Tenant string
}

// TraceListByNameResult is a page of traces and the name's trace count.
type TraceListByNameResult struct {
	Total  int
	Traces []Trace
}

// TraceNamesParams select a page of trace names.
type TraceNamesParams struct {
	Limit  int // <= 0 means 50
	Offset int
	Tenant string
}

// TraceNamesResult is a page of trace names and how many names there are.
type TraceNamesResult struct {
	Names []TraceName
	Total int
}

// TraceName summarises the traces recorded under one name.
type TraceName struct {
	LastSeen     time.Time // the last time a trace was recorded under it
	MessageCount int       // distinct messages traced under it
	Name         string
	TraceCount   int
}
