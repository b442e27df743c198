package store

import (
	"context"
	"fmt"
	"time"
)

// KVStore keeps key/value state: JSON values under (tenant, namespace, key),
// each with a version counting its writes and an optional expiry. A key past
// its expiry is absent to every read and write at once; KVSweep only frees
// its row later. The rules of one operation are package kvop's, which every
// driver applies, so that the engines agree.
type KVStore interface {
	// KVApply applies a batch of operations in order, all or nothing: when
	// an operation cannot apply (an expectation fails, an incr meets a value
	// that is not a counter) nothing is written and the error is a
	// *KVConflictError. It returns one result per operation.
	KVApply(ctx context.Context, p *KVApplyParams) ([]KVResult, error)
	// KVGet reads one key; ErrNotFound when it is absent or expired.
	KVGet(ctx context.Context, p *KVGetParams) (*KVEntry, error)
	// KVList reads a page of the live keys of a namespace in key order
	// (byte-wise), optionally only those starting with a prefix.
	KVList(ctx context.Context, p *KVListParams) (*KVListResult, error)
	// KVSweep deletes up to p.Limit expired keys of every tenant and
	// returns how many it deleted.
	KVSweep(ctx context.Context, p *KVSweepParams) (int, error)
}

// KVOpKind names a key/value operation.
type KVOpKind string

// The operations.
const (
	KVOpDelete KVOpKind = "delete"
	KVOpGet    KVOpKind = "get"
	KVOpIncr   KVOpKind = "incr"
	KVOpSet    KVOpKind = "set"
)

// KVOp is one operation of a batch.
type KVOp struct {
	// By is what incr adds (may be negative).
	By int64
	// Expect, on set and delete only, makes the operation conditional.
	Expect *KVExpect
	Key    string
	Kind   KVOpKind
	// Namespace groups keys; listing works within one.
	Namespace string
	// TTL, on set, makes the key expire TTL after the write (0: never); on
	// incr it applies only when the incr creates the key (a counter keeps
	// the expiry it was created with, as a fixed window does).
	TTL time.Duration
	// Value is set's value: one JSON value, compacted.
	Value []byte
}

// KVExpect is a compare-and-set condition on the key's state before the
// operation; every field given must hold.
type KVExpect struct {
	// Exists requires the key present (true) or absent (false).
	Exists *bool
	// Value requires the key present with this JSON value (equal as JSON:
	// objects compare by key whatever the order, numbers by value); nil
	// when not given (JSON null is "null").
	Value []byte
	// Version requires the key at this version; 0 requires it absent.
	Version *int64
}

// KVApplyParams are a batch of operations of one tenant.
type KVApplyParams struct {
	Now    time.Time
	Ops    []KVOp
	Tenant string
}

// KVEntry is a live key.
type KVEntry struct {
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	Key       string
	Namespace string
	UpdatedAt time.Time
	Value     []byte // JSON
	Version   int64
}

// KVResult is the outcome of one operation. Entry is the key after the
// operation: present after set and incr, the key read by get (nil when
// absent), nil after delete. Found says whether get or delete found the key.
type KVResult struct {
	Entry *KVEntry
	Found bool
	Kind  KVOpKind
}

// KVConflictError rolls back a batch: operation Index could not apply to
// the key's state, Current (nil when the key was absent).
type KVConflictError struct {
	Current *KVEntry
	Index   int
	// Reason says why, as the client reads it: api.KVReasonExpectation,
	// api.KVReasonNotCounter or api.KVReasonOverflow.
	Reason string
}

func (e *KVConflictError) Error() string {
	return fmt.Sprintf("%s (operation %d)", e.Reason, e.Index)
}

// KVGetParams name one key of a tenant.
type KVGetParams struct {
	Key       string
	Namespace string
	Now       time.Time
	Tenant    string
}

// KVListParams select a page of a namespace's keys.
type KVListParams struct {
	// After resumes the listing after this key ("" from the start).
	After string
	// Limit bounds the page; <= 0 means 100.
	Limit     int
	Namespace string
	Now       time.Time
	// Prefix keeps only the keys that start with it.
	Prefix string
	Tenant string
}

// KVListResult is a page of keys. More says whether keys follow the last
// one (the caller resumes after it).
type KVListResult struct {
	Entries []KVEntry
	More    bool
}

// KVSweepParams bound one step of the sweep of expired keys.
type KVSweepParams struct {
	Limit int // <= 0 means 1000
	Now   time.Time
}
