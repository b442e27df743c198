package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// Traces answer in snake_case, as Queen's stored procedures do.

type traceBody struct {
	ConsumerGroup *string         `json:"consumerGroup"`
	Data          json.RawMessage `json:"data"`
	EventType     *string         `json:"eventType"`
	PartitionID   *string         `json:"partitionId"`
	TraceNames    json.RawMessage `json:"traceNames"`
	TransactionID *string         `json:"transactionId"`
	WorkerID      *string         `json:"workerId"`
}

// DecodeTrace parses a POST /api/v1/traces body. traceNames is a string or
// an array of strings.
func DecodeTrace(body []byte) (*control.TraceInput, error) {
	var b traceBody
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if presence(b.TransactionID) != "" || presence(b.PartitionID) != "" {
		return nil, badRequest("transactionId and partitionId are required")
	}
	if len(b.Data) == 0 || string(b.Data) == "null" {
		return nil, badRequest("data is required")
	}
	pid, err := parsePartitionID(*b.PartitionID)
	if err != nil {
		return nil, badBody("partitionId %s", err.Error())
	}
	in := &control.TraceInput{
		MessageRef:    store.MessageRef{PartitionID: pid, TransactionID: *b.TransactionID},
		ConsumerGroup: deref(b.ConsumerGroup), Data: compactJSON(b.Data), EventType: deref(b.EventType),
		WorkerID: deref(b.WorkerID),
	}
	for _, f := range [...]struct {
		key  string
		v    string
		kind nameKind
	}{
		{"transactionId", in.TransactionID, kindName}, {"consumerGroup", in.ConsumerGroup, kindName},
		{"eventType", in.EventType, kindName}, {"workerId", in.WorkerID, kindID},
	} {
		if f.v != "" {
			if err := checkBodyText(f.v, f.kind, at("", f.key)); err != nil {
				return nil, err
			}
		}
	}
	if in.Names, err = traceNamesOf(b.TraceNames); err != nil {
		return nil, err
	}
	return in, nil
}

// traceNamesOf reads traceNames: absent, null, a string or an array of
// strings; empty names are skipped.
func traceNamesOf(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	var one string
	switch {
	case json.Unmarshal(raw, &one) == nil:
		list = []string{one}
	case json.Unmarshal(raw, &list) == nil:
	default:
		return nil, badBody("traceNames: expected a string or an array of strings")
	}
	if len(list) > maxTraceNames {
		return nil, badBody("traceNames holds %d names, the limit is %d", len(list), maxTraceNames)
	}
	names := list[:0]
	for i, n := range list {
		if n == "" {
			continue
		}
		if err := checkBodyText(n, kindName, func() string { return elem("traceNames", i) }); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}

// compactJSON stores data without insignificant whitespace, as pushes store
// payloads; most clients send it compact already, and then it costs a scan.
func compactJSON(v json.RawMessage) []byte {
	if !bytes.ContainsAny(v, " \t\r\n") {
		return v
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

type traceRecordJSON struct {
	Success bool   `json:"success"`
	TraceID string `json:"traceId"`
}

func (a *api) recordTrace(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	in, err := DecodeTrace(body)
	if err != nil {
		return err
	}
	in.Tenant = caller(r).Tenant
	id, err := a.control.RecordTrace(r.Context(), *in)
	if err != nil {
		return controlError(err)
	}
	writeJSON(w, http.StatusCreated, traceRecordJSON{Success: true, TraceID: id})
	return nil
}

// traceJSON is one trace of a message.
type traceJSON struct {
	ID            string          `json:"id"`
	EventType     string          `json:"event_type"`
	Data          json.RawMessage `json:"data"`
	ConsumerGroup string          `json:"consumer_group"`
	WorkerID      *string         `json:"worker_id"`
	CreatedAt     string          `json:"created_at"`
	TraceNames    []string        `json:"trace_names"`
}

type tracesJSON struct {
	Traces []traceJSON `json:"traces"`
}

func (a *api) messageTraces(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	ts, err := a.control.Traces(r.Context(), caller(r).Tenant, ref)
	if err != nil {
		return controlError(err)
	}
	out := tracesJSON{Traces: make([]traceJSON, len(ts))}
	for i := range ts {
		t := &ts[i]
		out.Traces[i] = traceJSON{ID: t.ID, EventType: t.EventType, Data: rawJSON(t.Data),
			ConsumerGroup: t.ConsumerGroup, WorkerID: nullable(t.WorkerID), CreatedAt: timestamp(t.CreatedAt),
			TraceNames: namesOrEmpty(t.Names)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func namesOrEmpty(n []string) []string {
	if n == nil {
		return []string{}
	}
	return n
}

// namedTraceJSON is one trace of a name, with its message.
type namedTraceJSON struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transaction_id"`
	PartitionID    string          `json:"partition_id"`
	EventType      string          `json:"event_type"`
	Data           json.RawMessage `json:"data"`
	ConsumerGroup  string          `json:"consumer_group"`
	WorkerID       *string         `json:"worker_id"`
	CreatedAt      string          `json:"created_at"`
	QueueName      string          `json:"queue_name"`
	PartitionName  string          `json:"partition_name"`
	MessagePayload json.RawMessage `json:"message_payload"`
	TraceNames     []string        `json:"trace_names"`
}

type tracesByNameJSON struct {
	Traces     []namedTraceJSON `json:"traces"`
	Total      int              `json:"total"`
	Pagination pageJSON         `json:"pagination"`
}

func (a *api) tracesByName(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("traceName")
	if err := checkPathText("traceName", name, kindName); err != nil {
		return err
	}
	q := parseQuery(r)
	p := store.TraceListByNameParams{Name: name, Limit: q.int("limit", 100, rangeListLimit),
		Offset: q.int("offset", 0, rangeListOffset), Tenant: caller(r).Tenant}
	if q.err != nil {
		return q.err
	}
	res, err := a.control.TracesByName(r.Context(), p)
	if err != nil {
		return err
	}
	out := tracesByNameJSON{Traces: make([]namedTraceJSON, len(res.Traces)), Total: res.Total,
		Pagination: pageJSON{p.Limit, p.Offset}}
	for i := range res.Traces {
		t := &res.Traces[i]
		out.Traces[i] = namedTraceJSON{ID: t.ID, TransactionID: t.TransactionID, PartitionID: t.PartitionID,
			EventType: t.EventType, Data: rawJSON(t.Data), ConsumerGroup: t.ConsumerGroup,
			WorkerID: nullable(t.WorkerID), CreatedAt: timestamp(t.CreatedAt), QueueName: t.Queue,
			PartitionName: t.Partition, MessagePayload: rawJSON(t.Payload), TraceNames: namesOrEmpty(t.Names)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type traceNameJSON struct {
	TraceName    string `json:"trace_name"`
	TraceCount   int    `json:"trace_count"`
	MessageCount int    `json:"message_count"`
	LastSeen     string `json:"last_seen"`
}

type traceNamesJSON struct {
	TraceNames []traceNameJSON `json:"trace_names"`
	Total      int             `json:"total"`
	Pagination pageJSON        `json:"pagination"`
}

func (a *api) traceNames(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	p := store.TraceNamesParams{Limit: q.int("limit", 50, rangeListLimit), Offset: q.int("offset", 0, rangeListOffset),
		Tenant: caller(r).Tenant}
	if q.err != nil {
		return q.err
	}
	res, err := a.control.TraceNames(r.Context(), p)
	if err != nil {
		return err
	}
	out := traceNamesJSON{TraceNames: make([]traceNameJSON, len(res.Names)), Total: res.Total,
		Pagination: pageJSON{p.Limit, p.Offset}}
	for i, n := range res.Names {
		out.TraceNames[i] = traceNameJSON{TraceName: n.Name, TraceCount: n.TraceCount, MessageCount: n.MessageCount,
			LastSeen: timestamp(n.LastSeen)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
