package api

import "encoding/json"

// Key/value state (/api/v1/kv*): keys in namespaces, changed atomically in
// batches (and in transactions), with versions, expect conditions,
// counters and expiry.

// The operations of a key/value batch.
const (
	KVGet    = "get"
	KVSet    = "set"
	KVIncr   = "incr"
	KVDelete = "delete"
)

// KVBatchRequest is the body of POST /api/v1/kv: operations applied all or
// nothing.
type KVBatchRequest struct {
	Ops []KVOperation `json:"ops"`
}

// KVOperation is one operation of a batch or a transaction, and (with Op,
// Namespace and Key taken from the path) the body of PUT
// /api/v1/kv/{namespace}/{key}.
type KVOperation struct {
	// Op is KVGet, KVSet, KVIncr or KVDelete (a transaction takes all but
	// get); required.
	Op string `json:"op,omitempty"`
	// Namespace and Key name the key; both are required.
	Namespace string `json:"namespace,omitempty"`
	Key       string `json:"key,omitempty"`
	// Value is a set's, any JSON value (null included); required for set.
	Value json.RawMessage `json:"value,omitempty"`
	// By is an incr's step; nil means 1.
	By *int64 `json:"by,omitempty"`
	// TTLSeconds makes a set or incr expire the key after this long; nil
	// keeps no expiry.
	TTLSeconds *int64 `json:"ttlSeconds,omitempty"`
	// Expect makes the operation conditional: when it does not hold, the
	// batch rolls back and answers 409.
	Expect *KVExpect `json:"expect,omitempty"`
}

// KVExpect is the condition of an operation: any of the key's existence,
// version and value; at least one.
type KVExpect struct {
	Exists  *bool           `json:"exists,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Version *int64          `json:"version,omitempty"`
}

// KVBatchResponse answers a batch that applied (200).
type KVBatchResponse struct {
	Results []KVResult `json:"results"`
}

// KVResult is what one operation of a batch did.
type KVResult struct {
	Index int    `json:"index"`
	Op    string `json:"op"`
	// OK is false only for a get of a key that does not exist.
	OK        bool            `json:"ok"`
	Value     json.RawMessage `json:"value,omitempty"`
	Version   *int64          `json:"version,omitempty"`
	ExpiresAt *Time           `json:"expiresAt,omitempty"`
	// Deleted says whether a delete found the key.
	Deleted *bool  `json:"deleted,omitempty"`
	Error   string `json:"error,omitempty"`
}

// KVConflict is the 409 of a batch rolled back by operation Index: Error
// is the reason (KVReasonExpectation, KVReasonNotCounter,
// KVReasonOverflow), Current the key as it is (null when it does not
// exist).
type KVConflict struct {
	Error   string     `json:"error"`
	Index   int        `json:"index"`
	Current *KVCurrent `json:"current"`
}

// KVCurrent is the key a conflict met.
type KVCurrent struct {
	Version int64           `json:"version"`
	Value   json.RawMessage `json:"value"`
}

// KVEntry is a key as read (GET /api/v1/kv/{namespace}/{key}), and the
// answer of a PUT.
type KVEntry struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Version   int64           `json:"version"`
	ExpiresAt *Time           `json:"expiresAt"`
	CreatedAt Time            `json:"createdAt"`
	UpdatedAt Time            `json:"updatedAt"`
}

// KVList is GET /api/v1/kv/{namespace}: a page of keys in order, and the
// cursor of the next page (null on the last).
type KVList struct {
	Items      []KVEntry `json:"items"`
	NextCursor *string   `json:"nextCursor"`
}

// KVDeleted answers DELETE /api/v1/kv/{namespace}/{key}.
type KVDeleted struct {
	Deleted bool `json:"deleted"`
}
