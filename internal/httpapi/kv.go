package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/store"
)

// kvRoutes serve key/value state (rules in package kv), behind the kv gate
// and the tenants' buckets, with the conflict body as their envelope.
type kvRoutes struct {
	bucket
	gate *Gate
	kv   *kv.KV
}

func newKVRoutes(k *kv.KV, b bucket, br *broker.Broker) *kvRoutes {
	return &kvRoutes{bucket: b, kv: k,
		gate: featureGate("kv", api.TextKVDisabled, func() bool { return k != nil && k.Enabled() }, br)}
}

func (g *kvRoutes) Routes() []Route {
	return Behind(g.gate, kvEnvelope,
		row(AccessReadWrite, "POST", "/api/v1/kv", "kv_batch", g.kvBatch),
		row(AccessRead, "GET", "/api/v1/kv/{namespace}", "kv_list", g.kvList),
		row(AccessRead, "GET", "/api/v1/kv/{namespace}/{key}", "kv_get", g.kvGet),
		row(AccessReadWrite, "PUT", "/api/v1/kv/{namespace}/{key}", "kv_put", g.kvPut),
		row(AccessReadWrite, "DELETE", "/api/v1/kv/{namespace}/{key}", "kv_delete", g.kvDelete),
	)
}

// kvEnvelope answers the 409 of a batch rolled back by one operation with
// the operation's index and the key's current value (api.KVConflict); the
// routes' other errors in Queen's envelope.
var kvEnvelope = &Envelope{Name: "kv", Write: func(w http.ResponseWriter, e *api.Error) {
	var ce *store.KVConflictError
	if !errors.As(e, &ce) {
		QueenEnvelope.Write(w, e)
		return
	}
	body := api.KVConflict{Error: e.Message, Index: ce.Index}
	if ce.Current != nil {
		body.Current = &api.KVCurrent{Version: ce.Current.Version, Value: ce.Current.Value}
	}
	writeJSON(w, e.Status, body)
}}

// kvOp checks and converts the operation at path of body (an elem path, ""
// for the body itself); the rules (limits, names, expect on incr) are
// package kv's Check.
func kvOp(body []byte, o *api.KVOperation, path string) (store.KVOp, error) {
	var op store.KVOp
	if o.Op == "" {
		return op, fieldError(path, "op", presence(body, path, "op"), "")
	}
	op.Kind = store.KVOpKind(o.Op)
	op.Namespace, op.Key = o.Namespace, o.Key
	if o.Namespace == "" && presence(body, path, "namespace") == "missing" {
		return op, fieldError(path, "namespace", "missing", "")
	}
	if o.Key == "" && presence(body, path, "key") == "missing" {
		return op, fieldError(path, "key", "missing", "")
	}
	switch op.Kind {
	case store.KVOpSet:
		if len(o.Value) == 0 {
			return op, fieldError(path, "value", "missing", "null is a valid value")
		}
		op.Value = compactJSON(o.Value)
	case store.KVOpIncr:
		op.By = 1
		if o.By != nil {
			op.By = *o.By
		}
	}
	if o.TTLSeconds != nil {
		if *o.TTLSeconds < 0 || *o.TTLSeconds > int64(rangeSeconds.max) {
			return op, badBody("%s: out of range (0 to %d)", join(path, "ttlSeconds"), rangeSeconds.max)
		}
		op.TTL = time.Duration(*o.TTLSeconds) * time.Second
	}
	if x := o.Expect; x != nil {
		op.Expect = &store.KVExpect{Exists: x.Exists, Version: x.Version}
		if len(x.Value) > 0 {
			op.Expect.Value = compactJSON(x.Value)
		}
		if x.Exists == nil && x.Version == nil && len(x.Value) == 0 {
			return op, badBody("%s: expect needs version, value or exists", path)
		}
	}
	return op, nil
}

func kvResult(i int, res store.KVResult) api.KVResult {
	j := api.KVResult{Index: i, Op: string(res.Kind), OK: true}
	switch {
	case res.Kind == store.KVOpDelete:
		deleted := res.Found
		j.Deleted = &deleted
	case res.Entry != nil:
		v := res.Entry.Version
		j.Value, j.Version, j.ExpiresAt = res.Entry.Value, &v, timeOrNull(res.Entry.ExpiresAt)
	default: // get of an absent key
		j.OK, j.Error = false, api.TextKeyNotFound
	}
	return j
}

func kvEntry(e *store.KVEntry) api.KVEntry {
	return api.KVEntry{Namespace: e.Namespace, Key: e.Key, Value: e.Value, Version: e.Version,
		ExpiresAt: timeOrNull(e.ExpiresAt), CreatedAt: api.TimeOf(e.CreatedAt), UpdatedAt: api.TimeOf(e.UpdatedAt)}
}

// DecodeKVBatch parses a POST /api/v1/kv body.
func DecodeKVBatch(body []byte) ([]store.KVOp, error) {
	var b api.KVBatchRequest
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Ops == nil {
		return nil, missing("ops")
	}
	ops := make([]store.KVOp, len(b.Ops))
	for i := range b.Ops {
		op, err := kvOp(body, &b.Ops[i], elem("ops", i))
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}

// kvBatch applies a batch all or nothing: 200 with one result per
// operation, or 409 naming the operation that could not apply.
func (g *kvRoutes) kvBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ops, err := DecodeKVBatch(body)
	if err != nil {
		return err
	}
	if err := g.kv.Check(ops, false); err != nil {
		return err
	}
	if err := g.take(r, len(ops)); err != nil {
		return err
	}
	res, err := g.kv.Apply(r.Context(), caller(r).Tenant, ops)
	if err != nil {
		return err
	}
	out := api.KVBatchResponse{Results: make([]api.KVResult, len(res))}
	for i := range res {
		out.Results[i] = kvResult(i, res[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *kvRoutes) kvGet(w http.ResponseWriter, r *http.Request) error {
	if err := kv.CheckKey(r.PathValue("namespace"), r.PathValue("key")); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	e, err := g.kv.Get(r.Context(), caller(r).Tenant, r.PathValue("namespace"), r.PathValue("key"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, kvEntry(e))
	return nil
}

// kvList answers a page of keys and the cursor of the next (null on the
// last page).
func (g *kvRoutes) kvList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit := q.limit(100, kv.MaxListLimit)
	prefix, cursor := q.str("prefix"), q.str("cursor")
	if q.err != nil {
		return q.err
	}
	if err := kv.CheckList(r.PathValue("namespace"), cursor); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	page, err := g.kv.List(r.Context(), caller(r).Tenant, r.PathValue("namespace"), prefix, cursor, limit)
	if err != nil {
		return err
	}
	out := api.KVList{Items: make([]api.KVEntry, len(page.Entries)), NextCursor: nullable(page.NextCursor)}
	for i := range page.Entries {
		out.Items[i] = kvEntry(&page.Entries[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// kvPut is a single set: body {"value","ttlSeconds"?,"expect"?}.
func (g *kvRoutes) kvPut(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var in api.KVOperation
	if err := unmarshal(body, &in); err != nil {
		return err
	}
	in.Op, in.Namespace, in.Key, in.By = api.KVSet, r.PathValue("namespace"), r.PathValue("key"), nil
	op, err := kvOp(body, &in, "")
	if err != nil {
		return err
	}
	return g.kvOne(w, r, op)
}

// kvDelete deletes a key, conditionally with ?expectVersion=.
func (g *kvRoutes) kvDelete(w http.ResponseWriter, r *http.Request) error {
	op := store.KVOp{Kind: store.KVOpDelete, Namespace: r.PathValue("namespace"), Key: r.PathValue("key")}
	if s := r.URL.Query().Get("expectVersion"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return badQuery("expectVersion: expected an integer 0 or more, got %q", s)
		}
		op.Expect = &store.KVExpect{Version: &v}
	}
	return g.kvOne(w, r, op)
}

// kvOne applies one set or delete and answers the key, or {"deleted"}.
func (g *kvRoutes) kvOne(w http.ResponseWriter, r *http.Request, op store.KVOp) error {
	ops := []store.KVOp{op}
	if err := g.kv.Check(ops, false); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	res, err := g.kv.Apply(r.Context(), caller(r).Tenant, ops)
	if err != nil {
		return err
	}
	if op.Kind == store.KVOpDelete {
		writeJSON(w, http.StatusOK, api.KVDeleted{Deleted: res[0].Found})
		return nil
	}
	writeJSON(w, http.StatusOK, kvEntry(res[0].Entry))
	return nil
}

// txKVOp decodes the key/value operation of a transaction at path.
func txKVOp(body []byte, o *api.KVOperation, path string) (store.KVOp, error) {
	op, err := kvOp(body, o, path)
	if err != nil {
		return op, err
	}
	if op.Kind == store.KVOpGet {
		return op, badRequest(fmt.Sprintf("%s: a transaction's kv operation is set, incr or delete", path))
	}
	return op, nil
}
