package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// The control plane's messages, dead-letter queue and traces. Their answers
// are Queen's stored procedures' shapes (camelCase for messages and the
// DLQ, snake_case for traces), which its clients read key by key.

// messageControlRoutes browse and repair messages, the DLQ (dlq.go) and
// traces (traces.go).
type messageControlRoutes struct {
	control *control.Control
}

func (g *messageControlRoutes) Routes() []Route {
	return []Route{
		row(AccessRead, "GET", "/api/v1/messages", "messages_list", g.listMessages),
		row(AccessRead, "GET", "/api/v1/messages/{partitionId}/{transactionId}", "message_get", g.getMessage),
		row(AccessReadWrite, "DELETE", "/api/v1/messages/{partitionId}/{transactionId}", "message_delete", g.deleteMessage),
		row(AccessReadWrite, "POST", "/api/v1/messages/{partitionId}/{transactionId}/retry", "message_retry", g.retryMessage),
		row(AccessReadWrite, "POST", "/api/v1/messages/{partitionId}/{transactionId}/dlq", "message_dlq", g.deadLetterMessage),
		row(AccessRead, "GET", "/api/v1/dlq", "dlq_list", g.listDLQ),
		row(AccessReadWrite, "POST", "/api/v1/dlq/retry", "dlq_retry", g.retryDLQ),
		row(AccessAdmin, "DELETE", "/api/v1/dlq", "dlq_delete", g.deleteDLQ),
		row(AccessReadWrite, "POST", "/api/v1/traces", "trace_record", g.recordTrace),
		row(AccessRead, "GET", "/api/v1/traces/{partitionId}/{transactionId}", "traces_get", g.messageTraces),
		row(AccessRead, "GET", "/api/v1/traces/by-name/{traceName}", "traces_by_name", g.tracesByName),
		row(AccessRead, "GET", "/api/v1/traces/names", "trace_names", g.traceNames),
	}
}

// Bounds of the control plane's listings.
var (
	rangeMessagesOffset = intRange{0, 10000} // a listing reads the rows it skips
	rangeListOffset     = intRange{0, 100000}
	rangeRequeueLimit   = intRange{1, 10000}
)

// maxRequeueIDs and maxTraceNames bound a request's lists.
const (
	maxRequeueIDs = 1000
	maxTraceNames = 100
)

// controlError gives the control plane's store errors their answer: an
// unknown message is Queen's 404 "Message not found", and a DLQ state that
// forbids a repair a 409 naming it.
func controlError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return api.ErrMessageNotFound.WithCause(err)
	case errors.Is(err, store.ErrNotDeadLettered):
		return api.ErrNotDeadLettered.WithCause(err)
	case errors.Is(err, store.ErrAlreadyDeadLettered):
		return api.ErrAlreadyDeadLettered.WithCause(err)
	}
	return err
}

// pathRef reads the {partitionId}/{transactionId} of a message route. A
// partitionId is a UUID (any case); anything else is a 400, never a lookup.
func pathRef(r *http.Request) (store.MessageRef, error) {
	pid, txn := r.PathValue("partitionId"), r.PathValue("transactionId")
	id, err := parsePartitionID(pid)
	if err != nil {
		return store.MessageRef{}, badRequest("bad path: partitionId " + err.Error())
	}
	if err := checkPathText("transactionId", txn, kindName); err != nil {
		return store.MessageRef{}, err
	}
	return store.MessageRef{PartitionID: id, TransactionID: txn}, nil
}

// parsePartitionID returns a partitionId in the canonical form the broker
// mints (lower-case UUID), or why it is not one.
func parsePartitionID(s string) (string, error) {
	if why := checkText(s, kindID); why != "" {
		return "", errors.New(why)
	}
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", fmt.Errorf("is not a UUID: %q", truncate(s, 40))
	}
	return id.String(), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// timeParam reads an RFC 3339 query parameter; zero when absent.
func (q *query) time(name string) time.Time {
	s := q.values.Get(name)
	if s == "" || q.err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.err = badQuery("%s: expected an RFC 3339 timestamp (2026-07-30T09:12:44.031Z), got %q", name, truncate(s, 40))
		return time.Time{}
	}
	return t
}

// ---------------------------------------------------------------------------
// GET /api/v1/messages

func listedMessage(m *store.ListedMessage) api.ListedMessage {
	return api.ListedMessage{
		ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID, QueuePath: m.Queue + "/" + m.Partition,
		Queue: m.Queue, Partition: m.Partition, Namespace: nullable(m.Namespace), Task: nullable(m.Task),
		Status: string(m.Status), QueueStatus: string(m.Status),
		BusStatus: api.BusStatus{ConsumedBy: m.ConsumedBy, TotalGroups: m.TotalGroups},
		TraceID:   nullable(m.TraceID), ProducerSub: nullable(m.ProducerSub), QueuePriority: m.QueuePriority,
		CreatedAt: api.TimeOf(m.CreatedAt), LeaseExpiresAt: timeRef(m.LeaseExpiresAt),
	}
}

func (g *messageControlRoutes) listMessages(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	mq := control.MessageQuery{
		Queue: q.name("queue"), Partition: q.name("partition"), Namespace: q.name("ns"), Task: q.name("task"),
		From: q.time("from"), To: q.time("to"),
		Limit: q.limit(200, MaxListLimit), Offset: q.int("offset", 0, rangeMessagesOffset),
		Status: store.MessageStatus(q.str("status")), Tenant: caller(r).Tenant,
	}
	if q.err != nil {
		return q.err
	}
	if mq.Status != "" && !mq.Status.Valid() {
		return badQuery("status: expected pending, processing, completed or dead_letter, got %q", truncate(string(mq.Status), 40))
	}
	res, err := g.control.ListMessages(r.Context(), mq)
	if err != nil {
		return err
	}
	out := api.MessageList{Messages: make([]api.ListedMessage, len(res.Messages)),
		Mode: api.MessageMode{HasQueueMode: res.Mode.HasQueueMode, BusGroupsCount: res.Mode.BusGroups, Type: res.Mode.Type()}}
	for i := range res.Messages {
		out.Messages[i] = listedMessage(&res.Messages[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------------------
// GET /api/v1/messages/{partitionId}/{transactionId}

func (g *messageControlRoutes) getMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	d, err := g.control.GetMessage(r.Context(), caller(r).Tenant, ref)
	if err != nil {
		return controlError(err)
	}
	mode := store.QueueModeSummary{HasQueueMode: d.HasQueueMode, BusGroups: d.TotalGroups}
	out := api.MessageDetail{
		ID: d.ID, TransactionID: d.TransactionID, PartitionID: d.PartitionID, QueuePath: d.Queue + "/" + d.Partition,
		Queue: d.Queue, Partition: d.Partition, Namespace: nullable(d.Namespace), Task: nullable(d.Task),
		Status: string(d.Status), Payload: rawJSON(d.Payload), IsEncrypted: d.Sealed.Encrypted(),
		TraceID:     nullable(d.TraceID),
		ProducerSub: nullable(d.ProducerSub), CreatedAt: api.TimeOf(d.CreatedAt), ErrorMessage: nullable(d.ErrorMessage),
		RetryCount: d.RetryCount, LeaseExpiresAt: timeRef(d.LeaseExpiresAt),
		QueueConfig: api.MessageQueueConfig{LeaseTime: d.Options.LeaseTime, RetryLimit: d.Options.RetryLimit,
			RetryDelay: d.Options.RetryDelay, TTL: d.Options.TTL, Priority: d.Options.Priority},
		Mode: api.MessageDetailMode{HasQueueMode: mode.HasQueueMode, BusGroupsCount: mode.BusGroups,
			ConsumedByGroups: d.ConsumedBy, Type: mode.Type()},
		ConsumerGroups: make([]api.MessageGroupStatus, len(d.Groups)),
	}
	for i, gs := range d.Groups {
		out.ConsumerGroups[i] = api.MessageGroupStatus{Name: gs.Name, Consumed: gs.Consumed,
			LeaseExpiresAt: timeRef(gs.LeaseExpiresAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rawJSON is a stored JSON value, or null when there is none.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// ---------------------------------------------------------------------------
// DELETE /api/v1/messages/{partitionId}/{transactionId}

// deleteMessage is always a 200, as in Queen: the outcome is success and
// message, never a 404.
func (g *messageControlRoutes) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	existed, err := g.control.DeleteMessage(r.Context(), caller(r).Tenant, ref)
	if err != nil {
		return err
	}
	out := api.MessageDeleteResponse{Success: existed, PartitionID: ref.PartitionID, TransactionID: ref.TransactionID,
		Message: api.TextMessageDeleted}
	if !existed {
		out.Message = api.TextMessageNotFound
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------------------
// POST …/retry and …/dlq

// decodeRepair reads the optional body of a message repair: which consumer
// group, and for a move to the DLQ the error to record. An empty body (or
// {}) means queue mode / any group.
func decodeRepair(r *http.Request) (*api.RepairRequest, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	var b api.RepairRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return nil, err
		}
	}
	if b.ConsumerGroup != "" {
		if err := checkBodyText(b.ConsumerGroup, kindName, at("", "consumerGroup")); err != nil {
			return nil, err
		}
	}
	if b.Error != "" {
		if err := checkBodyText(b.Error, kindText, at("", "error")); err != nil {
			return nil, err
		}
	}
	// ?consumerGroup= works too, for clients that send no body.
	if q := parseQuery(r); b.ConsumerGroup == "" {
		b.ConsumerGroup = q.name("consumerGroup")
		if q.err != nil {
			return nil, q.err
		}
	}
	return &b, nil
}

func (g *messageControlRoutes) retryMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	b, err := decodeRepair(r)
	if err != nil {
		return err
	}
	res, err := g.control.RetryMessage(r.Context(), caller(r).Tenant, ref, b.ConsumerGroup)
	if err != nil {
		return controlError(err)
	}
	writeJSON(w, http.StatusOK, api.RetryResponse{Success: true, Requeued: 1, MessageID: res.MessageID,
		TransactionID: res.TransactionID})
	return nil
}

func (g *messageControlRoutes) deadLetterMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	b, err := decodeRepair(r)
	if err != nil {
		return err
	}
	if err := g.control.DeadLetterMessage(r.Context(), caller(r).Tenant, ref, b.ConsumerGroup,
		b.Error); err != nil {
		return controlError(err)
	}
	writeJSON(w, http.StatusOK, api.DLQMoveResponse{Success: true, DLQ: true})
	return nil
}
