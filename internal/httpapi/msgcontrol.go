package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/control"
	"github.com/queen-go/queen/internal/store"
)

// The control plane's messages, dead-letter queue and traces. Their answers
// are Queen's stored procedures' shapes (camelCase for messages and the
// DLQ, snake_case for traces), which its clients read key by key.

// messageControlRoutes browse and repair messages, the DLQ and traces.
func (a *api) messageControlRoutes() []route {
	return []route{
		r(AccessRead, "GET", "/api/v1/messages", "messages_list", a.listMessages),
		r(AccessRead, "GET", "/api/v1/messages/{partitionId}/{transactionId}", "message_get", a.getMessage),
		r(AccessReadWrite, "DELETE", "/api/v1/messages/{partitionId}/{transactionId}", "message_delete", a.deleteMessage),
		r(AccessReadWrite, "POST", "/api/v1/messages/{partitionId}/{transactionId}/retry", "message_retry", a.retryMessage),
		r(AccessReadWrite, "POST", "/api/v1/messages/{partitionId}/{transactionId}/dlq", "message_dlq", a.deadLetterMessage),
		r(AccessRead, "GET", "/api/v1/dlq", "dlq_list", a.listDLQ),
		r(AccessReadWrite, "POST", "/api/v1/dlq/retry", "dlq_retry", a.retryDLQ),
		r(AccessAdmin, "DELETE", "/api/v1/dlq", "dlq_delete", a.deleteDLQ),
		r(AccessReadWrite, "POST", "/api/v1/traces", "trace_record", a.recordTrace),
		r(AccessRead, "GET", "/api/v1/traces/{partitionId}/{transactionId}", "traces_get", a.messageTraces),
		r(AccessRead, "GET", "/api/v1/traces/by-name/{traceName}", "traces_by_name", a.tracesByName),
		r(AccessRead, "GET", "/api/v1/traces/names", "trace_names", a.traceNames),
	}
}

// Bounds of the control plane's listings.
var (
	rangeMessagesLimit  = intRange{1, 1000}
	rangeMessagesOffset = intRange{0, 10000} // a listing reads the rows it skips
	rangeListLimit      = intRange{1, 1000}
	rangeListOffset     = intRange{0, 100000}
	rangeRequeueLimit   = intRange{1, 10000}
)

// maxRequeueIDs and maxTraceNames bound a request's lists.
const (
	maxRequeueIDs = 1000
	maxTraceNames = 100
)

// Texts of the control plane's answers, as Queen words them.
const (
	msgMessageNotFound = "Message not found"
	msgDeleted         = "Message deleted successfully"
)

// controlError gives the control plane's store errors their answer: an
// unknown message is Queen's 404 "Message not found", and a DLQ state that
// forbids a repair a 409 naming it.
func controlError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &httpError{status: http.StatusNotFound, msg: msgMessageNotFound}
	case errors.Is(err, store.ErrNotDeadLettered):
		return &httpError{status: http.StatusConflict, msg: store.ErrNotDeadLettered.Error()}
	case errors.Is(err, store.ErrAlreadyDeadLettered):
		return &httpError{status: http.StatusConflict, msg: store.ErrAlreadyDeadLettered.Error()}
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

type busStatusJSON struct {
	ConsumedBy  int `json:"consumedBy"`
	TotalGroups int `json:"totalGroups"`
}

type listedMessageJSON struct {
	ID             string        `json:"id"`
	TransactionID  string        `json:"transactionId"`
	PartitionID    string        `json:"partitionId"`
	QueuePath      string        `json:"queuePath"`
	Queue          string        `json:"queue"`
	Partition      string        `json:"partition"`
	Namespace      *string       `json:"namespace"`
	Task           *string       `json:"task"`
	Status         string        `json:"status"`
	QueueStatus    string        `json:"queueStatus"`
	BusStatus      busStatusJSON `json:"busStatus"`
	TraceID        *string       `json:"traceId"`
	ProducerSub    *string       `json:"producerSub"`
	QueuePriority  int           `json:"queuePriority"`
	CreatedAt      string        `json:"createdAt"`
	LeaseExpiresAt *string       `json:"leaseExpiresAt"`
}

type modeJSON struct {
	HasQueueMode   bool   `json:"hasQueueMode"`
	BusGroupsCount int    `json:"busGroupsCount"`
	Type           string `json:"type"`
}

type messagesJSON struct {
	Messages []listedMessageJSON `json:"messages"`
	Mode     modeJSON            `json:"mode"`
}

func listedJSON(m *store.ListedMessage) listedMessageJSON {
	return listedMessageJSON{
		ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID, QueuePath: m.Queue + "/" + m.Partition,
		Queue: m.Queue, Partition: m.Partition, Namespace: nullable(m.Namespace), Task: nullable(m.Task),
		Status: string(m.Status), QueueStatus: string(m.Status),
		BusStatus: busStatusJSON{ConsumedBy: m.ConsumedBy, TotalGroups: m.TotalGroups},
		TraceID:   nullable(m.TraceID), ProducerSub: nullable(m.ProducerSub), QueuePriority: m.QueuePriority,
		CreatedAt: timestamp(m.CreatedAt), LeaseExpiresAt: optionalTimestamp(m.LeaseExpiresAt),
	}
}

func optionalTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

func (a *api) listMessages(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	mq := control.MessageQuery{
		Queue: q.name("queue"), Partition: q.name("partition"), Namespace: q.name("ns"), Task: q.name("task"),
		From: q.time("from"), To: q.time("to"),
		Limit: q.int("limit", 200, rangeMessagesLimit), Offset: q.int("offset", 0, rangeMessagesOffset),
		Status: store.MessageStatus(q.str("status")), Tenant: caller(r).Tenant,
	}
	if q.err != nil {
		return q.err
	}
	if mq.Status != "" && !mq.Status.Valid() {
		return badQuery("status: expected pending, processing, completed or dead_letter, got %q", truncate(string(mq.Status), 40))
	}
	res, err := a.control.ListMessages(r.Context(), mq)
	if err != nil {
		return err
	}
	out := messagesJSON{Messages: make([]listedMessageJSON, len(res.Messages)),
		Mode: modeJSON{HasQueueMode: res.Mode.HasQueueMode, BusGroupsCount: res.Mode.BusGroups, Type: res.Mode.Type()}}
	for i := range res.Messages {
		out.Messages[i] = listedJSON(&res.Messages[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------------------
// GET /api/v1/messages/{partitionId}/{transactionId}

type queueConfigJSON struct {
	LeaseTime  int `json:"leaseTime"`
	RetryLimit int `json:"retryLimit"`
	RetryDelay int `json:"retryDelay"`
	TTL        int `json:"ttl"`
	Priority   int `json:"priority"`
}

type detailModeJSON struct {
	HasQueueMode     bool   `json:"hasQueueMode"`
	BusGroupsCount   int    `json:"busGroupsCount"`
	ConsumedByGroups int    `json:"consumedByGroups"`
	Type             string `json:"type"`
}

type groupStandingJSON struct {
	Name           string  `json:"name"`
	Consumed       bool    `json:"consumed"`
	LeaseExpiresAt *string `json:"leaseExpiresAt"`
}

type messageJSON struct {
	ID             string              `json:"id"`
	TransactionID  string              `json:"transactionId"`
	PartitionID    string              `json:"partitionId"`
	QueuePath      string              `json:"queuePath"`
	Queue          string              `json:"queue"`
	Partition      string              `json:"partition"`
	Namespace      *string             `json:"namespace"`
	Task           *string             `json:"task"`
	Status         string              `json:"status"`
	Payload        json.RawMessage     `json:"payload"`
	IsEncrypted    bool                `json:"isEncrypted"`
	TraceID        *string             `json:"traceId"`
	ProducerSub    *string             `json:"producerSub"`
	CreatedAt      string              `json:"createdAt"`
	ErrorMessage   *string             `json:"errorMessage"`
	RetryCount     int                 `json:"retryCount"`
	LeaseExpiresAt *string             `json:"leaseExpiresAt"`
	QueueConfig    queueConfigJSON     `json:"queueConfig"`
	Mode           detailModeJSON      `json:"mode"`
	ConsumerGroups []groupStandingJSON `json:"consumerGroups"`
}

func (a *api) getMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	d, err := a.control.GetMessage(r.Context(), caller(r).Tenant, ref)
	if err != nil {
		return controlError(err)
	}
	mode := store.QueueModeSummary{HasQueueMode: d.HasQueueMode, BusGroups: d.TotalGroups}
	out := messageJSON{
		ID: d.ID, TransactionID: d.TransactionID, PartitionID: d.PartitionID, QueuePath: d.Queue + "/" + d.Partition,
		Queue: d.Queue, Partition: d.Partition, Namespace: nullable(d.Namespace), Task: nullable(d.Task),
		Status: string(d.Status), Payload: rawJSON(d.Payload), TraceID: nullable(d.TraceID),
		ProducerSub: nullable(d.ProducerSub), CreatedAt: timestamp(d.CreatedAt), ErrorMessage: nullable(d.ErrorMessage),
		RetryCount: d.RetryCount, LeaseExpiresAt: optionalTimestamp(d.LeaseExpiresAt),
		QueueConfig: queueConfigJSON{LeaseTime: d.Options.LeaseTime, RetryLimit: d.Options.RetryLimit,
			RetryDelay: d.Options.RetryDelay, TTL: d.Options.TTL, Priority: d.Options.Priority},
		Mode: detailModeJSON{HasQueueMode: mode.HasQueueMode, BusGroupsCount: mode.BusGroups,
			ConsumedByGroups: d.ConsumedBy, Type: mode.Type()},
		ConsumerGroups: make([]groupStandingJSON, len(d.Groups)),
	}
	for i, g := range d.Groups {
		out.ConsumerGroups[i] = groupStandingJSON{Name: g.Name, Consumed: g.Consumed,
			LeaseExpiresAt: optionalTimestamp(g.LeaseExpiresAt)}
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

// messageDeleteJSON is always a 200, as in Queen: the outcome is success
// and message, never a 404.
type messageDeleteJSON struct {
	Success       bool   `json:"success"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Message       string `json:"message"`
}

func (a *api) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	existed, err := a.control.DeleteMessage(r.Context(), caller(r).Tenant, ref)
	if err != nil {
		return err
	}
	out := messageDeleteJSON{Success: existed, PartitionID: ref.PartitionID, TransactionID: ref.TransactionID,
		Message: msgDeleted}
	if !existed {
		out.Message = msgMessageNotFound
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------------------
// POST …/retry and …/dlq

// repairBody is the optional body of a message repair: which consumer
// group, and for a move to the DLQ the error to record. An empty body (or
// {}) means queue mode / any group.
type repairBody struct {
	ConsumerGroup *string `json:"consumerGroup"`
	Error         *string `json:"error"`
}

func decodeRepair(r *http.Request) (*repairBody, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	var b repairBody
	if len(bytes.TrimSpace(body)) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return nil, err
		}
	}
	if g := deref(b.ConsumerGroup); g != "" {
		if err := checkBodyText(g, kindName, at("", "consumerGroup")); err != nil {
			return nil, err
		}
	}
	if e := deref(b.Error); e != "" {
		if err := checkBodyText(e, kindText, at("", "error")); err != nil {
			return nil, err
		}
	}
	// ?consumerGroup= works too, for clients that send no body.
	if q := parseQuery(r); b.ConsumerGroup == nil || *b.ConsumerGroup == "" {
		g := q.name("consumerGroup")
		if q.err != nil {
			return nil, q.err
		}
		b.ConsumerGroup = &g
	}
	return &b, nil
}

type retryJSON struct {
	Success       bool   `json:"success"`
	Requeued      int    `json:"requeued"`
	MessageID     string `json:"messageId"`
	TransactionID string `json:"transactionId"`
}

func (a *api) retryMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	b, err := decodeRepair(r)
	if err != nil {
		return err
	}
	res, err := a.control.RetryMessage(r.Context(), caller(r).Tenant, ref, deref(b.ConsumerGroup))
	if err != nil {
		return controlError(err)
	}
	writeJSON(w, http.StatusOK, retryJSON{Success: true, Requeued: 1, MessageID: res.MessageID,
		TransactionID: res.TransactionID})
	return nil
}

type dlqMoveJSON struct {
	Success bool `json:"success"`
	DLQ     bool `json:"dlq"`
}

func (a *api) deadLetterMessage(w http.ResponseWriter, r *http.Request) error {
	ref, err := pathRef(r)
	if err != nil {
		return err
	}
	b, err := decodeRepair(r)
	if err != nil {
		return err
	}
	if err := a.control.DeadLetterMessage(r.Context(), caller(r).Tenant, ref, deref(b.ConsumerGroup),
		deref(b.Error)); err != nil {
		return controlError(err)
	}
	writeJSON(w, http.StatusOK, dlqMoveJSON{Success: true, DLQ: true})
	return nil
}
