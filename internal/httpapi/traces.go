package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// Traces answer in snake_case, as Queen's stored procedures do.

// DecodeTrace parses a POST /api/v1/traces body. traceNames is a string or
// an array of strings.
func DecodeTrace(body []byte) (*control.TraceInput, error) {
	var b api.TraceRequest
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.TransactionID == "" || b.PartitionID == "" {
		return nil, badRequest("transactionId and partitionId are required")
	}
	if len(b.Data) == 0 || string(b.Data) == "null" {
		return nil, badRequest("data is required")
	}
	pid, err := parsePartitionID(b.PartitionID)
	if err != nil {
		return nil, badBody("partitionId %s", err.Error())
	}
	in := &control.TraceInput{
		MessageRef:    store.MessageRef{PartitionID: pid, TransactionID: b.TransactionID},
		ConsumerGroup: b.ConsumerGroup, Data: compactJSON(b.Data), EventType: b.EventType,
		WorkerID: b.WorkerID,
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

func (g *messageControlRoutes) recordTrace(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	in, err := DecodeTrace(body)
	if err != nil {
		return err
	}
	in.Tenant = caller(r).Tenant
	id, err := g.control.RecordTrace(r.Context(), *in)
	if err != nil {
		return controlError(err)
	}
	writeJSON(w, http.StatusCreated, api.TraceRecorded{Success: true, TraceID: id})
	return nil
}

func (g *messageControlRoutes) messageTraces(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	ts, err := g.control.Traces(r.Context(), caller(r).Tenant, ref)
	if err != nil {
		return controlError(err)
	}
	out := api.MessageTraces{Traces: make([]api.Trace, len(ts))}
	for i := range ts {
		t := &ts[i]
		out.Traces[i] = api.Trace{ID: t.ID, EventType: t.EventType, Data: rawJSON(t.Data),
			ConsumerGroup: t.ConsumerGroup, WorkerID: nullable(t.WorkerID), CreatedAt: api.TimeOf(t.CreatedAt),
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

func (g *messageControlRoutes) tracesByName(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("traceName")
	if err := checkPathText("traceName", name, kindName); err != nil {
		return err
	}
	q := parseQuery(r)
	p := store.TraceListByNameParams{Name: name, Limit: q.limit(100, MaxListLimit),
		Offset: q.int("offset", 0, rangeListOffset), Tenant: caller(r).Tenant}
	if q.err != nil {
		return q.err
	}
	res, err := g.control.TracesByName(r.Context(), p)
	if err != nil {
		return err
	}
	out := api.TracesByName{Traces: make([]api.NamedTrace, len(res.Traces)), Total: res.Total,
		Pagination: api.PageEcho{Limit: p.Limit, Offset: p.Offset}}
	for i := range res.Traces {
		t := &res.Traces[i]
		out.Traces[i] = api.NamedTrace{ID: t.ID, TransactionID: t.TransactionID, PartitionID: t.PartitionID,
			EventType: t.EventType, Data: rawJSON(t.Data), ConsumerGroup: t.ConsumerGroup,
			WorkerID: nullable(t.WorkerID), CreatedAt: api.TimeOf(t.CreatedAt), QueueName: t.Queue,
			PartitionName: t.Partition, MessagePayload: rawJSON(t.Payload), IsEncrypted: t.Sealed.Encrypted(),
			TraceNames: namesOrEmpty(t.Names)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *messageControlRoutes) traceNames(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	p := store.TraceNamesParams{Limit: q.limit(50, MaxListLimit), Offset: q.int("offset", 0, rangeListOffset),
		Tenant: caller(r).Tenant}
	if q.err != nil {
		return q.err
	}
	res, err := g.control.TraceNames(r.Context(), p)
	if err != nil {
		return err
	}
	out := api.TraceNames{TraceNames: make([]api.TraceName, len(res.Names)), Total: res.Total,
		Pagination: api.PageEcho{Limit: p.Limit, Offset: p.Offset}}
	for i, n := range res.Names {
		out.TraceNames[i] = api.TraceName{TraceName: n.Name, TraceCount: n.TraceCount, MessageCount: n.MessageCount,
			LastSeen: api.TimeOf(n.LastSeen)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
