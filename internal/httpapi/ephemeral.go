package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/ephemeral"
)

// ephemeralRoutes serve ephemeral queues (rules in package ephemeral).
func (a *api) ephemeralRoutes() []route {
	return []route{
		r(AccessReadWrite, "POST", "/api/v1/ephemeral", "ephemeral_create", a.gated(featureEphemeral, a.ephCreate)),
		r(AccessRead, "GET", "/api/v1/ephemeral", "ephemeral_list", a.gated(featureEphemeral, a.ephList)),
		r(AccessWriteOnly, "POST", "/api/v1/ephemeral/push", "ephemeral_push", a.gated(featureEphemeral, a.ephPush)),
		r(AccessReadWrite, "GET", "/api/v1/ephemeral/{queue}/pop", "ephemeral_pop", a.gated(featureEphemeral, a.ephPop)),
		r(AccessReadWrite, "POST", "/api/v1/ephemeral/{queue}/keepalive", "ephemeral_keepalive", a.gated(featureEphemeral, a.ephKeepalive)),
		r(AccessReadWrite, "DELETE", "/api/v1/ephemeral/{queue}", "ephemeral_delete", a.gated(featureEphemeral, a.ephDelete)),
	}
}

func (a *api) ephCreate(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var in struct {
		MaxMessages *int    `json:"maxMessages"`
		Name        *string `json:"name"`
		TTLSeconds  *int    `json:"ttlSeconds"`
	}
	if len(body) > 0 {
		if err := unmarshal(body, &in); err != nil {
			return err
		}
	}
	ttl := time.Duration(derefInt(in.TTLSeconds)) * time.Second
	if in.TTLSeconds != nil && *in.TTLSeconds <= 0 {
		return badBody("ttlSeconds must be between 1 and %d", int(ephemeral.MaxTTL.Seconds()))
	}
	if in.MaxMessages != nil && *in.MaxMessages <= 0 {
		return badBody("maxMessages must be between 1 and %d", ephemeral.MaxMaxMessages)
	}
	if err := ephemeral.CheckCreate(deref(in.Name), ttl, derefInt(in.MaxMessages)); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	q, err := a.ephemeral.Create(r.Context(), caller(r).Tenant, deref(in.Name), ttl, derefInt(in.MaxMessages))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"queue": q.Name, "expiresAt": timestamp(q.ExpiresAt),
		"ttlSeconds": int(q.TTL.Seconds()), "maxMessages": q.MaxMessages})
	return nil
}

func (a *api) ephList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.int("limit", 100, intRange{1, 1000}), q.int("offset", 0, intRange{0, math.MaxInt32})
	if q.err != nil {
		return q.err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	res, err := a.ephemeral.List(r.Context(), caller(r).Tenant, limit, offset)
	if err != nil {
		return err
	}
	type queueJSON struct {
		Queue       string `json:"queue"`
		CreatedAt   string `json:"createdAt"`
		ExpiresAt   string `json:"expiresAt"`
		Depth       int    `json:"depth"`
		MaxMessages int    `json:"maxMessages"`
		TTLSeconds  int    `json:"ttlSeconds"`
	}
	out := struct {
		Queues     []queueJSON    `json:"queues"`
		Pagination map[string]int `json:"pagination"`
	}{Queues: make([]queueJSON, len(res.Queues)),
		Pagination: map[string]int{"limit": limit, "offset": offset, "total": res.Total}}
	for i, q := range res.Queues {
		out.Queues[i] = queueJSON{Queue: q.Name, CreatedAt: timestamp(q.CreatedAt), ExpiresAt: timestamp(q.ExpiresAt),
			Depth: q.Depth, MaxMessages: q.MaxMessages, TTLSeconds: int(q.TTL.Seconds())}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ephPush answers 201 with one verdict per item; an item of an unknown,
// expired or full queue is "failed", the others "queued".
func (a *api) ephPush(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var in struct {
		Items *[]struct {
			Payload json.RawMessage `json:"payload"`
			Queue   *string         `json:"queue"`
		} `json:"items"`
	}
	if err := unmarshal(body, &in); err != nil {
		return err
	}
	if in.Items == nil {
		return missing("items")
	}
	if len(*in.Items) == 0 {
		return badRequest("items array cannot be empty")
	}
	if len(*in.Items) > ephemeral.MaxBatch {
		return &httpError{status: http.StatusRequestEntityTooLarge, msg: "too many items: the limit is 1000"}
	}
	items := make([]ephemeral.Item, len(*in.Items))
	for i, it := range *in.Items {
		if state := presence(it.Queue); state != "" {
			return fieldError(elem("items", i), "queue", state, "")
		}
		if len(it.Payload) == 0 {
			return fieldError(elem("items", i), "payload", "missing", "null is a valid payload")
		}
		if err := ephemeral.CheckName(*it.Queue); err != nil {
			return err
		}
		items[i] = ephemeral.Item{Queue: *it.Queue, Payload: compactJSON(it.Payload)}
	}
	if err := a.take(r, len(items)); err != nil {
		return err
	}
	res, err := a.ephemeral.Push(r.Context(), caller(r).Tenant, items)
	if err != nil {
		return err
	}
	type verdict struct {
		Index     int     `json:"index"`
		MessageID *string `json:"message_id"`
		QueueName string  `json:"queueName"`
		Status    string  `json:"status"`
		Error     string  `json:"error,omitempty"`
	}
	out := make([]verdict, len(res))
	for i, v := range res {
		out[i] = verdict{Index: i, MessageID: nullable(v.MessageID), QueueName: items[i].Queue, Status: "queued", Error: v.Error}
		if v.Error != "" {
			out[i].Status = "failed"
		}
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// ephPop deletes and answers messages (at most once: delivered means
// deleted); a bare 204 when there is none, after the long poll with wait.
func (a *api) ephPop(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	batch := q.int("batch", 1, intRange{1, ephemeral.MaxBatch})
	wait := q.bool("wait")
	timeout := time.Duration(q.int("timeout", int(DefaultPopTimeout/time.Millisecond), rangePopTimeout)) * time.Millisecond
	if q.err != nil {
		return q.err
	}
	if err := ephemeral.CheckName(r.PathValue("queue")); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	if wait {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout + a.writeTimeout))
	}
	name := r.PathValue("queue")
	msgs, err := a.ephemeral.Pop(r.Context(), caller(r).Tenant, name, batch, wait, timeout)
	if err != nil {
		return entity(err)
	}
	if len(msgs) == 0 {
		noContent(w)
		return nil
	}
	type msgJSON struct {
		ID        string          `json:"id"`
		Data      json.RawMessage `json:"data"`
		CreatedAt string          `json:"createdAt"`
	}
	out := struct {
		Queue    string    `json:"queue"`
		Messages []msgJSON `json:"messages"`
	}{Queue: name, Messages: make([]msgJSON, len(msgs))}
	for i, m := range msgs {
		out.Messages[i] = msgJSON{ID: m.ID, Data: m.Payload, CreatedAt: timestamp(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) ephKeepalive(w http.ResponseWriter, r *http.Request) error {
	if err := ephemeral.CheckName(r.PathValue("queue")); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	q, err := a.ephemeral.Keepalive(r.Context(), caller(r).Tenant, r.PathValue("queue"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"queue": q.Name, "expiresAt": timestamp(q.ExpiresAt)})
	return nil
}

func (a *api) ephDelete(w http.ResponseWriter, r *http.Request) error {
	if err := ephemeral.CheckName(r.PathValue("queue")); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	deleted, err := a.ephemeral.Delete(r.Context(), caller(r).Tenant, r.PathValue("queue"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": deleted})
	return nil
}
