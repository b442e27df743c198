package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/ephemeral"
)

// ephemeralRoutes serve ephemeral queues (rules in package ephemeral),
// behind the ephemeral gate and the tenants' buckets.
type ephemeralRoutes struct {
	bucket
	a         *adapter // the write timeout of long polls
	ephemeral *ephemeral.Ephemeral
	gate      *Gate
}

func newEphemeralRoutes(a *adapter, e *ephemeral.Ephemeral, b bucket, br *broker.Broker) *ephemeralRoutes {
	return &ephemeralRoutes{bucket: b, a: a, ephemeral: e,
		gate: featureGate("ephemeral", api.TextEphemeralDisabled, func() bool { return e != nil && e.Enabled() }, br)}
}

func (g *ephemeralRoutes) Routes() []Route {
	return Behind(g.gate, nil,
		row(AccessReadWrite, "POST", "/api/v1/ephemeral", "ephemeral_create", g.create),
		row(AccessRead, "GET", "/api/v1/ephemeral", "ephemeral_list", g.list),
		row(AccessWriteOnly, "POST", "/api/v1/ephemeral/push", "ephemeral_push", g.push),
		row(AccessReadWrite, "GET", "/api/v1/ephemeral/{queue}/pop", "ephemeral_pop", g.pop),
		row(AccessReadWrite, "POST", "/api/v1/ephemeral/{queue}/keepalive", "ephemeral_keepalive", g.keepalive),
		row(AccessReadWrite, "DELETE", "/api/v1/ephemeral/{queue}", "ephemeral_delete", g.delete),
	)
}

func (g *ephemeralRoutes) create(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var in api.EphemeralCreateRequest
	if len(body) > 0 {
		if err := unmarshal(body, &in); err != nil {
			return err
		}
	}
	var ttl time.Duration
	maxMessages := 0
	if in.TTLSeconds != nil {
		if *in.TTLSeconds <= 0 {
			return badBody("ttlSeconds must be between 1 and %d", int(ephemeral.MaxTTL.Seconds()))
		}
		ttl = time.Duration(*in.TTLSeconds) * time.Second
	}
	if in.MaxMessages != nil {
		if *in.MaxMessages <= 0 {
			return badBody("maxMessages must be between 1 and %d", ephemeral.MaxMaxMessages)
		}
		maxMessages = *in.MaxMessages
	}
	if err := ephemeral.CheckCreate(in.Name, ttl, maxMessages); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	q, err := g.ephemeral.Create(r.Context(), caller(r).Tenant, in.Name, ttl, maxMessages)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.EphemeralCreated{Queue: q.Name, ExpiresAt: api.TimeOf(q.ExpiresAt),
		TTLSeconds: int(q.TTL.Seconds()), MaxMessages: q.MaxMessages})
	return nil
}

func (g *ephemeralRoutes) list(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit, offset := q.limit(100, MaxListLimit), q.int("offset", 0, intRange{0, math.MaxInt32})
	if q.err != nil {
		return q.err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	res, err := g.ephemeral.List(r.Context(), caller(r).Tenant, limit, offset)
	if err != nil {
		return err
	}
	out := api.EphemeralList{Queues: make([]api.EphemeralQueue, len(res.Queues)),
		Pagination: pagination(limit, offset, res.Total)}
	for i, eq := range res.Queues {
		out.Queues[i] = api.EphemeralQueue{Queue: eq.Name, CreatedAt: api.TimeOf(eq.CreatedAt),
			ExpiresAt: api.TimeOf(eq.ExpiresAt), Depth: eq.Depth, MaxMessages: eq.MaxMessages,
			TTLSeconds: int(eq.TTL.Seconds())}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// push answers 201 with one verdict per item; an item of an unknown,
// expired or full queue is "failed", the others "queued".
func (g *ephemeralRoutes) push(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var in api.EphemeralPushRequest
	if err := unmarshal(body, &in); err != nil {
		return err
	}
	if in.Items == nil {
		return missing("items")
	}
	if len(in.Items) == 0 {
		return badRequest("items array cannot be empty")
	}
	if len(in.Items) > ephemeral.MaxBatch {
		return api.ErrLimitExceeded.Withf("too many items: the limit is %d", ephemeral.MaxBatch)
	}
	items := make([]ephemeral.Item, len(in.Items))
	for i, it := range in.Items {
		if it.Queue == "" {
			return fieldError(elem("items", i), "queue", presence(body, elem("items", i), "queue"), "")
		}
		if len(it.Payload) == 0 {
			return fieldError(elem("items", i), "payload", "missing", "null is a valid payload")
		}
		if err := ephemeral.CheckName(it.Queue); err != nil {
			return err
		}
		items[i] = ephemeral.Item{Queue: it.Queue, Payload: compactJSON(it.Payload)}
	}
	if err := g.take(r, len(items)); err != nil {
		return err
	}
	res, err := g.ephemeral.Push(r.Context(), caller(r).Tenant, items)
	if err != nil {
		return err
	}
	out := make([]api.EphemeralVerdict, len(res))
	for i, v := range res {
		out[i] = api.EphemeralVerdict{Index: i, MessageID: nullable(v.MessageID), QueueName: items[i].Queue,
			Status: api.PushQueued, Error: v.Error}
		if v.Error != "" {
			out[i].Status = api.PushFailed
		}
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// pop deletes and answers messages (at most once: delivered means
// deleted); a bare 204 when there is none, after the long poll with wait.
func (g *ephemeralRoutes) pop(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	batch := q.int("batch", 1, intRange{1, ephemeral.MaxBatch})
	wait := q.bool("wait")
	timeout := g.a.clampPoll(time.Duration(q.int("timeout", int(DefaultPopTimeout/time.Millisecond), rangePopTimeout)) * time.Millisecond)
	if q.err != nil {
		return q.err
	}
	if err := ephemeral.CheckName(r.PathValue("queue")); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	if wait {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout + g.a.writeTimeout))
	}
	name := r.PathValue("queue")
	msgs, err := g.ephemeral.Pop(r.Context(), caller(r).Tenant, name, batch, wait, timeout)
	if err != nil {
		return entity(err)
	}
	if len(msgs) == 0 {
		noContent(w)
		return nil
	}
	out := api.EphemeralPop{Queue: name, Messages: make([]api.EphemeralMessage, len(msgs))}
	for i, m := range msgs {
		out.Messages[i] = api.EphemeralMessage{ID: m.ID, Data: m.Payload, CreatedAt: api.TimeOf(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *ephemeralRoutes) keepalive(w http.ResponseWriter, r *http.Request) error {
	if err := ephemeral.CheckName(r.PathValue("queue")); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	q, err := g.ephemeral.Keepalive(r.Context(), caller(r).Tenant, r.PathValue("queue"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, api.EphemeralKeepalive{Queue: q.Name, ExpiresAt: api.TimeOf(q.ExpiresAt)})
	return nil
}

func (g *ephemeralRoutes) delete(w http.ResponseWriter, r *http.Request) error {
	if err := ephemeral.CheckName(r.PathValue("queue")); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	deleted, err := g.ephemeral.Delete(r.Context(), caller(r).Tenant, r.PathValue("queue"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.EphemeralDeleted{Deleted: deleted})
	return nil
}
