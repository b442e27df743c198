package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/queen-go/queen/internal/kv"
	"github.com/queen-go/queen/internal/store"
)

// kvRoutes serve key/value state (rules in package kv).
func (a *api) kvRoutes() []route {
	return []route{
		r(AccessReadWrite, "POST", "/api/v1/kv", "kv_batch", a.gated(featureKV, a.kvBatch)),
		r(AccessRead, "GET", "/api/v1/kv/{namespace}", "kv_list", a.gated(featureKV, a.kvList)),
		r(AccessRead, "GET", "/api/v1/kv/{namespace}/{key}", "kv_get", a.gated(featureKV, a.kvGet)),
		r(AccessReadWrite, "PUT", "/api/v1/kv/{namespace}/{key}", "kv_put", a.gated(featureKV, a.kvPut)),
		r(AccessReadWrite, "DELETE", "/api/v1/kv/{namespace}/{key}", "kv_delete", a.gated(featureKV, a.kvDelete)),
	}
}

// kvExpectJSON is an expect condition as sent.
type kvExpectJSON struct {
	Exists  *bool           `json:"exists"`
	Value   json.RawMessage `json:"value"`
	Version *int64          `json:"version"`
}

// kvOpJSON is one operation as sent, in a batch or a transaction.
type kvOpJSON struct {
	By         *int64          `json:"by"`
	Expect     *kvExpectJSON   `json:"expect"`
	Key        *string         `json:"key"`
	Namespace  *string         `json:"namespace"`
	Op         *string         `json:"op"`
	TTLSeconds *int64          `json:"ttlSeconds"`
	Value      json.RawMessage `json:"value"`
}

// kvOp turns the operation at path into a store operation; the rules
// (limits, names, expect on incr) are package kv's Check.
func (o *kvOpJSON) kvOp(path string) (store.KVOp, error) {
	var op store.KVOp
	if state := presence(o.Op); state != "" {
		return op, fieldError(path, "op", state, "")
	}
	op.Kind = store.KVOpKind(*o.Op)
	op.Namespace, op.Key = deref(o.Namespace), deref(o.Key)
	if o.Namespace == nil {
		return op, fieldError(path, "namespace", "missing", "")
	}
	if o.Key == nil {
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

// kvResultJSON is the result of one operation of a batch.
type kvResultJSON struct {
	Index     int             `json:"index"`
	Op        string          `json:"op"`
	OK        bool            `json:"ok"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   *int64          `json:"version,omitempty"`
	ExpiresAt *string         `json:"expiresAt,omitempty"`
	Deleted   *bool           `json:"deleted,omitempty"`
	Error     string          `json:"error,omitempty"`
}

func kvResult(i int, res store.KVResult) kvResultJSON {
	j := kvResultJSON{Index: i, Op: string(res.Kind), OK: true}
	switch {
	case res.Kind == store.KVOpDelete:
		deleted := res.Found
		j.Deleted = &deleted
	case res.Entry != nil:
		v := res.Entry.Version
		j.Value, j.Version, j.ExpiresAt = res.Entry.Value, &v, tsOrNull(res.Entry.ExpiresAt)
	default: // get of an absent key
		j.OK, j.Error = false, "key not found"
	}
	return j
}

// kvEntryJSON is a key as read.
type kvEntryJSON struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Version   int64           `json:"version"`
	ExpiresAt *string         `json:"expiresAt"`
	CreatedAt string          `json:"createdAt"`
	UpdatedAt string          `json:"updatedAt"`
}

func kvEntry(e *store.KVEntry) kvEntryJSON {
	return kvEntryJSON{Namespace: e.Namespace, Key: e.Key, Value: e.Value, Version: e.Version,
		ExpiresAt: tsOrNull(e.ExpiresAt), CreatedAt: timestamp(e.CreatedAt), UpdatedAt: timestamp(e.UpdatedAt)}
}

// kvConflictBody is the 409 of a batch rolled back by operation Index.
func kvConflictBody(e *store.KVConflictError) any {
	type current struct {
		Version int64           `json:"version"`
		Value   json.RawMessage `json:"value"`
	}
	body := struct {
		Error   string   `json:"error"`
		Index   int      `json:"index"`
		Current *current `json:"current"`
	}{Error: e.Reason, Index: e.Index}
	if e.Current != nil {
		body.Current = &current{Version: e.Current.Version, Value: e.Current.Value}
	}
	return body
}

// DecodeKVBatch parses a POST /api/v1/kv body.
func DecodeKVBatch(body []byte) ([]store.KVOp, error) {
	var b struct {
		Ops *[]kvOpJSON `json:"ops"`
	}
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Ops == nil {
		return nil, missing("ops")
	}
	ops := make([]store.KVOp, len(*b.Ops))
	for i := range *b.Ops {
		op, err := (*b.Ops)[i].kvOp(elem("ops", i))
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}

// kvBatch applies a batch all or nothing: 200 with one result per
// operation, or 409 naming the operation that could not apply.
func (a *api) kvBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ops, err := DecodeKVBatch(body)
	if err != nil {
		return err
	}
	if err := a.kv.Check(ops, false); err != nil {
		return err
	}
	if err := a.take(r, len(ops)); err != nil {
		return err
	}
	res, err := a.kv.Apply(r.Context(), caller(r).Tenant, ops)
	if err != nil {
		return err
	}
	out := struct {
		Results []kvResultJSON `json:"results"`
	}{Results: make([]kvResultJSON, len(res))}
	for i := range res {
		out.Results[i] = kvResult(i, res[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) kvGet(w http.ResponseWriter, r *http.Request) error {
	if err := kv.CheckKey(r.PathValue("namespace"), r.PathValue("key")); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	e, err := a.kv.Get(r.Context(), caller(r).Tenant, r.PathValue("namespace"), r.PathValue("key"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, kvEntry(e))
	return nil
}

// kvList answers a page of keys and the cursor of the next (null on the
// last page).
func (a *api) kvList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	limit := q.int("limit", 100, intRange{1, 1000})
	prefix, cursor := q.str("prefix"), q.str("cursor")
	if q.err != nil {
		return q.err
	}
	if err := kv.CheckList(r.PathValue("namespace"), cursor); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	page, err := a.kv.List(r.Context(), caller(r).Tenant, r.PathValue("namespace"), prefix, cursor, limit)
	if err != nil {
		return err
	}
	out := struct {
		Items      []kvEntryJSON `json:"items"`
		NextCursor *string       `json:"nextCursor"`
	}{Items: make([]kvEntryJSON, len(page.Entries)), NextCursor: nullable(page.NextCursor)}
	for i := range page.Entries {
		out.Items[i] = kvEntry(&page.Entries[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// kvPut is a single set: body {"value","ttlSeconds"?,"expect"?}.
func (a *api) kvPut(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var in kvOpJSON
	if err := unmarshal(body, &in); err != nil {
		return err
	}
	set := "set"
	ns, key := r.PathValue("namespace"), r.PathValue("key")
	in.Op, in.Namespace, in.Key, in.By = &set, &ns, &key, nil
	op, err := in.kvOp("")
	if err != nil {
		return err
	}
	return a.kvOne(w, r, op)
}

// kvDelete deletes a key, conditionally with ?expectVersion=.
func (a *api) kvDelete(w http.ResponseWriter, r *http.Request) error {
	op := store.KVOp{Kind: store.KVOpDelete, Namespace: r.PathValue("namespace"), Key: r.PathValue("key")}
	if s := r.URL.Query().Get("expectVersion"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return badQuery("expectVersion: expected an integer 0 or more, got %q", s)
		}
		op.Expect = &store.KVExpect{Version: &v}
	}
	return a.kvOne(w, r, op)
}

// kvOne applies one set or delete and answers the key, or {"deleted"}.
func (a *api) kvOne(w http.ResponseWriter, r *http.Request, op store.KVOp) error {
	ops := []store.KVOp{op}
	if err := a.kv.Check(ops, false); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	res, err := a.kv.Apply(r.Context(), caller(r).Tenant, ops)
	if err != nil {
		return err
	}
	if op.Kind == store.KVOpDelete {
		writeJSON(w, http.StatusOK, map[string]bool{"deleted": res[0].Found})
		return nil
	}
	writeJSON(w, http.StatusOK, kvEntry(res[0].Entry))
	return nil
}

// txKVOp decodes the key/value operation of a transaction at path.
func txKVOp(o *kvOpJSON, path string) (store.KVOp, error) {
	op, err := o.kvOp(path)
	if err != nil {
		return op, err
	}
	if op.Kind == store.KVOpGet {
		return op, badRequest(fmt.Sprintf("%s: a transaction's kv operation is set, incr or delete", path))
	}
	return op, nil
}
