package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/streams"
)

// Queen's stream queries: the three routes its Go and JS stream SDKs call
// (snake_case keys, Queen's texts), and the control plane's view of the
// queries with the size of their state. Bodies that do not decode, and
// values a route can refuse without the database (a missing id, a name
// that is not a valid name, an unknown state-op type), are 400 as on every
// route; a cycle that reaches the database answers 200 whatever happens to
// it, with success false and nothing written when it fails.

// MaxStateKeyBytes bounds a state key: keys are part of an index key, and
// PostgreSQL refuses index rows over about 2.7 KB.
const MaxStateKeyBytes = 1024

// streamRoutes serve stream queries: registration, cycles and state reads
// (Queen's /streams/v1), and listing and deleting queries.
type streamRoutes struct {
	streams *streams.Streams
}

func (g *streamRoutes) Routes() []Route {
	return []Route{
		row(AccessReadWrite, "POST", "/streams/v1/queries", "streams_register", g.streamsRegister),
		row(AccessReadWrite, "POST", "/streams/v1/cycle", "streams_cycle", g.streamsCycle),
		row(AccessRead, "POST", "/streams/v1/state/get", "streams_state_get", g.streamsStateGet),
		row(AccessRead, "GET", "/api/v1/streams/queries", "streams_query_list", g.streamsQueryList),
		row(AccessRead, "GET", "/api/v1/streams/queries/{name}", "streams_query_get", g.streamsQueryGet),
		row(AccessAdmin, "DELETE", "/api/v1/streams/queries/{name}", "streams_query_delete", g.streamsQueryDelete),
	}
}

// errNotObject is Queen's answer to a stream body that is JSON but not an
// object.
var errNotObject = badRequest("request body must be a JSON object")

// decodeObject parses a stream route's body into v: a body that does not
// parse is "bad body: …", a JSON value other than an object Queen's
// "request body must be a JSON object".
func decodeObject(body []byte, v any) error {
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] != '{' && json.Valid(t) {
		return errNotObject
	}
	return unmarshal(body, v)
}

// requiredID returns the UUID at key in canonical form: Queen's "<key> is
// required" when it is absent or empty.
func requiredID(key, v string) (string, error) {
	if v == "" {
		return "", badRequest(key + " is required")
	}
	id, err := uuid.Parse(v)
	if err != nil || len(v) > MaxIDBytes {
		return "", badBody("%s is not a UUID", key)
	}
	return id.String(), nil
}

// requiredName returns the name at key: Queen's "<key> is required" when
// it is absent or empty, a bad body when it is not a valid name.
func requiredName(key, v string, kind nameKind) (string, error) {
	if v == "" {
		return "", badRequest(key + " is required")
	}
	if err := checkBodyText(v, kind, at("", key)); err != nil {
		return "", err
	}
	return v, nil
}

// checkStateKey refuses a state key that is not valid UTF-8, holds a NUL
// or exceeds MaxStateKeyBytes. Other control characters are fine: Queen's
// SDKs separate the parts of a key with U+001F.
func checkStateKey(k string, where func() string) error {
	switch {
	case len(k) > MaxStateKeyBytes:
		return badBody("%s is %d bytes long, the limit is %d", where(), len(k), MaxStateKeyBytes)
	case !utf8.ValidString(k):
		return badBody("%s is not valid UTF-8", where())
	case strings.IndexByte(k, 0) >= 0:
		return badBody("%s contains a NUL character", where())
	}
	return nil
}

// ---------------------------------------------------------------------------
// POST /streams/v1/queries

// DecodeStreamsRegister parses a registration body.
func DecodeStreamsRegister(body []byte) (streams.Registration, error) {
	var b api.StreamsRegisterRequest
	if err := decodeObject(body, &b); err != nil {
		return streams.Registration{}, err
	}
	var r streams.Registration
	var err error
	if r.Name, err = requiredName("name", b.Name, kindName); err != nil {
		return r, err
	}
	if r.SourceQueue, err = requiredName("source_queue", b.SourceQueue, kindName); err != nil {
		return r, err
	}
	if r.ConfigHash, err = requiredName("config_hash", b.ConfigHash, kindID); err != nil {
		return r, err
	}
	if r.SinkQueue = b.SinkQueue; r.SinkQueue != "" {
		if err := checkBodyText(r.SinkQueue, kindName, at("", "sink_queue")); err != nil {
			return r, err
		}
	}
	r.Reset = b.Reset
	return r, nil
}

// streamsRegister answers a config hash mismatch with Queen's stored
// procedure result (api.StreamsMismatch), which its SDKs read (the error
// and the query's id), rather than with the usual {"error": …}.
func (g *streamRoutes) streamsRegister(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	reg, err := DecodeStreamsRegister(body)
	if err != nil {
		return err
	}
	res, err := g.streams.Register(r.Context(), caller(r).Tenant, reg)
	var mismatch *streams.MismatchError
	if errors.As(err, &mismatch) {
		writeJSON(w, http.StatusConflict, api.StreamsMismatch{QueryID: mismatch.QueryID, Name: mismatch.Name,
			Error: mismatch.Error()})
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.StreamsRegistered{Success: true, QueryID: res.QueryID, Name: reg.Name,
		ConfigHash: reg.ConfigHash, Fresh: res.Fresh, Reset: res.Reset})
	return nil
}

// ---------------------------------------------------------------------------
// POST /streams/v1/cycle

// rangeCount bounds an ack's count.
var rangeCount = intRange{0, 1<<31 - 1}

// DecodeStreamsCycle parses a cycle body. A body that is not a JSON object
// of the right types, or lacks a valid query_id and partition_id, is a 400
// (Queen refuses those at the door too). Once the cycle is named, what is
// wrong with its contents (a push item, a state op, the ack, the consumer
// group) is an *InvalidCycleError carrying the cycle: Queen answers it in
// the cycle's envelope, 200 with success false, which is what its stream
// SDKs read.
func DecodeStreamsCycle(body []byte) (*streams.Cycle, error) {
	var b api.StreamsCycleRequest
	if err := decodeObject(body, &b); err != nil {
		return nil, err
	}
	cy := &streams.Cycle{ReleaseLease: b.ReleaseLease == nil || *b.ReleaseLease}
	var err error
	if cy.QueryID, err = requiredID("query_id", b.QueryID); err != nil {
		return nil, err
	}
	if cy.PartitionID, err = requiredID("partition_id", b.PartitionID); err != nil {
		return nil, err
	}
	if err := cycleContents(body, &b, cy); err != nil {
		return cy, &InvalidCycleError{Err: err}
	}
	return cy, nil
}

// InvalidCycleError is a named cycle whose contents are refused; it is
// answered in the cycle's envelope, not as an HTTP error.
type InvalidCycleError struct{ Err error }

func (e *InvalidCycleError) Error() string { return e.Err.Error() }
func (e *InvalidCycleError) Unwrap() error { return e.Err }

// cycleContents validates and converts what a named cycle carries.
func cycleContents(body []byte, b *api.StreamsCycleRequest, cy *streams.Cycle) error {
	var err error
	if cy.ConsumerGroup = b.ConsumerGroup; cy.ConsumerGroup != "" {
		if err := checkBodyText(cy.ConsumerGroup, kindName, at("", "consumer_group")); err != nil {
			return err
		}
	}
	if cy.StateOps, err = stateOps(body, b.StateOps); err != nil {
		return err
	}
	if cy.Pushes, err = cyclePushes(body, b.PushItems); err != nil {
		return err
	}
	if b.Ack != nil {
		if cy.Ack, err = cycleAck(body, b.Ack); err != nil {
			return err
		}
	}
	return nil
}

func stateOps(body []byte, in []api.StreamsStateOp) ([]store.StreamStateOp, error) {
	ops := make([]store.StreamStateOp, len(in))
	for i, op := range in {
		path := elem("state_ops", i)
		if op.Type == "" && presence(body, path, "type") == "missing" {
			return nil, fieldError(path, "type", "missing", "upsert or delete")
		}
		if op.Key == "" && presence(body, path, "key") == "missing" {
			return nil, fieldError(path, "key", "missing", "")
		}
		if err := checkStateKey(op.Key, at(path, "key")); err != nil {
			return nil, err
		}
		switch op.Type {
		case api.StateUpsert:
			value := []byte(op.Value)
			switch {
			case len(value) == 0:
				value = []byte("{}") // Queen's default for a missing value
			case bytes.ContainsAny(value, " \t\r\n"):
				var compact bytes.Buffer
				if json.Compact(&compact, value) == nil {
					value = compact.Bytes()
				}
			}
			ops[i] = store.StreamStateOp{Key: op.Key, Value: value}
		case api.StateDelete:
			ops[i] = store.StreamStateOp{Key: op.Key, Delete: true}
		default:
			return nil, badBody("%s.type: expected upsert or delete, got %q", path, op.Type)
		}
	}
	return ops, nil
}

func cyclePushes(body []byte, in []api.StreamsPushItem) ([]store.PushItem, error) {
	plain := make([]api.PushItem, len(in))
	for i := range in {
		plain[i] = in[i].PushItem
	}
	items, err := pushItems(body, plain, "push_items")
	if err != nil {
		return nil, err
	}
	for i := range in {
		if id := in[i].MessageID; id != "" {
			u, err := uuid.Parse(id)
			if err != nil || len(id) > MaxIDBytes {
				return nil, badBody("%s.messageId is not a UUID", elem("push_items", i))
			}
			items[i].MessageID = u.String()
		}
	}
	return items, nil
}

func cycleAck(body []byte, a *api.StreamsAck) (*streams.Ack, error) {
	if a.TransactionID == "" {
		return nil, fieldError("ack", "transactionId", presence(body, "ack", "transactionId"), "")
	}
	for _, f := range [...]struct {
		key  string
		v    string
		kind nameKind
	}{
		{"transactionId", a.TransactionID, kindName}, {"leaseId", a.LeaseID, kindID}, {"error", a.Error, kindText},
	} {
		if f.v != "" {
			if err := checkBodyText(f.v, f.kind, at("ack", f.key)); err != nil {
				return nil, err
			}
		}
	}
	out := &streams.Ack{Count: 1, Error: a.Error, LeaseID: a.LeaseID, TransactionID: a.TransactionID}
	if a.Count != nil {
		if err := rangeCount.check(func() string { return "bad body: ack.count" }, *a.Count); err != nil {
			return nil, err
		}
		out.Count = *a.Count
	}
	switch s := a.Status; s {
	case "", "completed", "success":
	case "failed", "dlq":
		out.Failed = true
	default:
		return nil, badBody("ack.status: expected completed, success, failed or dlq, got %q", s)
	}
	return out, nil
}

// streamsCycle answers 200 once the cycle is named, committed or not,
// refused contents included: Queen's SDKs read success and error. Only a
// request refused at the door (400: not a JSON object, no valid query_id or
// partition_id) or a store that cannot be reached (503) is an HTTP error.
func (g *streamRoutes) streamsCycle(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	cy, err := DecodeStreamsCycle(body)
	if invalid := (*InvalidCycleError)(nil); errors.As(err, &invalid) {
		writeJSON(w, http.StatusOK, api.StreamsCycle{QueryID: cy.QueryID, PartitionID: cy.PartitionID,
			PushResults: []api.PushVerdict{}, Error: nullable(invalid.Error())})
		return nil
	}
	if err != nil {
		return err
	}
	res, err := g.streams.Cycle(r.Context(), caller(r), cy)
	if err != nil {
		return err
	}
	out := api.StreamsCycle{Success: res.Success, QueryID: cy.QueryID, PartitionID: cy.PartitionID,
		QueueName: nullable(res.Queue), StateOpsApplied: res.StateOpsApplied, Error: nullable(res.Error),
		PushResults: make([]api.PushVerdict, len(res.Pushes))}
	for i, v := range res.Pushes {
		out.PushResults[i] = api.PushVerdict{Index: i, MessageID: nullable(v.MessageID), TransactionID: v.TransactionID,
			QueueName: v.Queue, Status: v.Status}
	}
	if ack := res.Ack; ack != nil {
		out.AckResult = &api.StreamsAckResult{Success: true, Count: ack.Count, LeaseReleased: ack.LeaseReleased, DLQ: ack.DLQ}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------------------
// POST /streams/v1/state/get

// DecodeStreamsStateGet parses a state read.
func DecodeStreamsStateGet(body []byte) (streams.StateQuery, error) {
	var b api.StreamsStateGetRequest
	var q streams.StateQuery
	if err := decodeObject(body, &b); err != nil {
		return q, err
	}
	var err error
	if q.QueryID, err = requiredID("query_id", b.QueryID); err != nil {
		return q, err
	}
	if q.PartitionID, err = requiredID("partition_id", b.PartitionID); err != nil {
		return q, err
	}
	for i, k := range b.Keys {
		if err := checkStateKey(k, func() string { return elem("keys", i) }); err != nil {
			return q, err
		}
	}
	q.Keys, q.RipeAtOrBefore = b.Keys, b.RipeAtOrBefore
	if q.KeyPrefix = b.KeyPrefix; q.KeyPrefix != "" {
		if err := checkStateKey(q.KeyPrefix, at("", "key_prefix")); err != nil {
			return q, err
		}
	}
	return q, nil
}

func (g *streamRoutes) streamsStateGet(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	q, err := DecodeStreamsStateGet(body)
	if err != nil {
		return err
	}
	rows, err := g.streams.State(r.Context(), caller(r).Tenant, q)
	if err != nil {
		return err
	}
	out := api.StreamsState{Success: true, Rows: make([]api.StreamsStateRow, len(rows))}
	for i, sr := range rows {
		out.Rows[i] = api.StreamsStateRow{Key: sr.Key, Value: sr.Value, UpdatedAt: api.TimeOf(sr.UpdatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------------------
// The control plane: /api/v1/streams/queries

func streamQuery(q *store.StreamQuery) api.StreamsQuery {
	return api.StreamsQuery{QueryID: q.ID, Name: q.Name, SourceQueue: q.SourceQueue, SinkQueue: nullable(q.SinkQueue),
		ConfigHash: q.ConfigHash, CreatedAt: api.TimeOf(q.CreatedAt), UpdatedAt: api.TimeOf(q.UpdatedAt),
		State: api.StreamsStateSize{Partitions: q.State.Partitions, Rows: q.State.Rows, Bytes: q.State.Bytes}}
}

func (g *streamRoutes) streamsQueryList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.page(DefaultListLimit, MaxListLimit)
	if q.err != nil {
		return q.err
	}
	res, err := g.streams.Queries(r.Context(), caller(r).Tenant, limit, offset)
	if err != nil {
		return err
	}
	out := api.StreamsQueryList{Queries: make([]api.StreamsQuery, len(res.Queries)),
		Pagination: pagination(limit, offset, res.Total)}
	for i := range res.Queries {
		out.Queries[i] = streamQuery(&res.Queries[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *streamRoutes) streamsQueryGet(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "name"); err != nil {
		return err
	}
	q, err := g.streams.Query(r.Context(), caller(r).Tenant, r.PathValue("name"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, streamQuery(q))
	return nil
}

// streamsQueryDelete answers 200 whether or not the query existed, as a
// queue deletion does.
func (g *streamRoutes) streamsQueryDelete(w http.ResponseWriter, r *http.Request) error {
	if err := pathNames(r, "name"); err != nil {
		return err
	}
	name := r.PathValue("name")
	existed, err := g.streams.Delete(r.Context(), caller(r).Tenant, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.StreamsQueryDelete{Deleted: existed, Name: name})
	return nil
}
