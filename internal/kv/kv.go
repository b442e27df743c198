// Package kv holds the rules of key/value state over store.KVStore: the
// limits of a batch (operations per batch, bytes per value), the checks of
// names and operations, listing cursors, and the sweeper of expired keys.
// The semantics of one operation (versions, expect, incr, expiry) are
// package kvop's, which every driver applies in its own transaction.
package kv

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Defaults of Config.
const (
	DefaultMaxOps        = 100      // QUEEN_KV_MAX_OPS
	DefaultMaxValueBytes = 64 << 10 // QUEEN_KV_MAX_VALUE_BYTES
	DefaultSweepEvery    = 10 * time.Second
	DefaultSweepBatch    = 1000
	MaxNameBytes         = 1024 // namespace and key, each
	MaxListLimit         = 1000
	MaxTTL               = 10 * 365 * 24 * time.Hour
)

// Config configures key/value state. Zero fields take the defaults.
type Config struct {
	// Disabled turns the feature off (QUEEN_KV_ENABLED=false): its routes
	// answer 403 and key/value operations in transactions are refused.
	Disabled bool
	// Logger receives the sweeper's logs; nil discards them.
	Logger *slog.Logger
	// MaxOps bounds the operations of one batch (413 beyond).
	MaxOps int
	// MaxValueBytes bounds one value's JSON text (413 beyond).
	MaxValueBytes int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// SweepEvery is how often expired keys are deleted.
	SweepEvery time.Duration
}

// The rules' refusals are api errors: a batch they refuse is an
// api.ErrBadRequest (400), one over a configured size limit an
// api.ErrLimitExceeded (413), one an operation cannot apply to an
// api.ErrKVConflict (409) that wraps the store's *store.KVConflictError.

func invalidf(format string, args ...any) error {
	return api.ErrBadRequest.Withf(format, args...)
}

// ErrKeyNotFound is a key absent or expired.
var ErrKeyNotFound = &store.NotFoundError{Text: api.TextKeyNotFound}

// KV serves key/value state.
type KV struct {
	cfg     Config
	log     *slog.Logger
	store   Store
	sweeper *service.Loop
}

// New returns the key/value feature over st.
func New(st Store, cfg Config) *KV {
	if cfg.MaxOps <= 0 {
		cfg.MaxOps = DefaultMaxOps
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = DefaultMaxValueBytes
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = DefaultSweepEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &KV{cfg: cfg, log: log.With("component", "kv"), store: st}
	k.sweeper = service.NewLoop("kv-sweep", cfg.SweepEvery, service.Exclusive(st, "kv-sweep", k.log, k.sweep))
	return k
}

// Enabled reports whether the feature is on.
func (k *KV) Enabled() bool { return !k.cfg.Disabled }

// MaxOps is the most operations a batch may carry.
func (k *KV) MaxOps() int { return k.cfg.MaxOps }

// Services returns the sweeper of expired keys.
func (k *KV) Services() []service.Service { return []service.Service{k.sweeper} }

// Check applies the limits and rules to a batch; inTx says it is part of a
// transaction (where get is not an operation).
func (k *KV) Check(ops []store.KVOp, inTx bool) error {
	if len(ops) == 0 && !inTx {
		return invalidf("ops array cannot be empty")
	}
	if len(ops) > k.cfg.MaxOps {
		return api.ErrLimitExceeded.Withf("too many operations: %d, the limit is %d (QUEEN_KV_MAX_OPS)", len(ops), k.cfg.MaxOps)
	}
	for i := range ops {
		op := &ops[i]
		if err := CheckName("namespace", op.Namespace); err != nil {
			return invalidf("ops[%d]: %v", i, err)
		}
		if err := CheckName("key", op.Key); err != nil {
			return invalidf("ops[%d]: %v", i, err)
		}
		switch op.Kind {
		case store.KVOpGet:
			if inTx {
				return invalidf("ops[%d]: get is not an operation of a transaction", i)
			}
		case store.KVOpSet:
			if len(op.Value) == 0 {
				return invalidf("ops[%d]: set needs a value", i)
			}
			if len(op.Value) > k.cfg.MaxValueBytes {
				return api.ErrLimitExceeded.Withf("value of ops[%d] too large: %d bytes, the limit is %d (QUEEN_KV_MAX_VALUE_BYTES)",
					i, len(op.Value), k.cfg.MaxValueBytes)
			}
		case store.KVOpIncr:
			if op.Expect != nil {
				return invalidf("expect is not supported on incr")
			}
		case store.KVOpDelete:
		default:
			return invalidf("ops[%d]: unknown op %q: expected get, set, incr or delete", i, op.Kind)
		}
		if op.TTL < 0 || op.TTL > MaxTTL {
			return invalidf("ops[%d]: ttlSeconds must be between 0 and %d", i, int(MaxTTL.Seconds()))
		}
		if op.Expect != nil && op.Kind == store.KVOpGet {
			return invalidf("ops[%d]: expect is supported on set and delete only", i)
		}
		if x := op.Expect; x != nil && x.Version != nil && *x.Version < 0 {
			return invalidf("ops[%d]: expect.version must be 0 or more", i)
		}
	}
	return nil
}

// CheckName checks a namespace or a key: 1 to MaxNameBytes bytes, no NUL.
func CheckName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is required", what)
	case len(s) > MaxNameBytes:
		return fmt.Errorf("%s longer than %d bytes", what, MaxNameBytes)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%s contains a NUL byte", what)
		}
	}
	return nil
}

// Apply applies a batch of the tenant's, all or nothing. An operation that
// cannot apply is an api.ErrKVConflict with the reason, wrapping the
// store's *store.KVConflictError (which names the operation and the key's
// current value).
func (k *KV) Apply(ctx context.Context, tenant string, ops []store.KVOp) ([]store.KVResult, error) {
	if err := k.Check(ops, false); err != nil {
		return nil, err
	}
	res, err := k.store.KVApply(ctx, &store.KVApplyParams{Ops: ops, Tenant: tenant, Now: k.cfg.Now()})
	var ce *store.KVConflictError
	if errors.As(err, &ce) {
		return nil, api.ErrKVConflict.With(ce.Reason).WithCause(err)
	}
	return res, err
}

// Get reads one key; ErrKeyNotFound when absent.
func (k *KV) Get(ctx context.Context, tenant, namespace, key string) (*store.KVEntry, error) {
	if err := CheckKey(namespace, key); err != nil {
		return nil, err
	}
	e, err := k.store.KVGet(ctx, &store.KVGetParams{Tenant: tenant, Namespace: namespace, Key: key, Now: k.cfg.Now()})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	return e, err
}

// Page is a page of a listing; NextCursor is "" on the last one.
type Page struct {
	Entries    []store.KVEntry
	NextCursor string
}

// List reads a page of a namespace's live keys in key order. The cursor is
// the one the previous page returned ("" for the first).
func (k *KV) List(ctx context.Context, tenant, namespace, prefix, cursor string, limit int) (*Page, error) {
	if err := CheckName("namespace", namespace); err != nil {
		return nil, api.ErrBadRequest.With(err.Error())
	}
	if limit <= 0 || limit > MaxListLimit {
		return nil, invalidf("limit must be between 1 and %d", MaxListLimit)
	}
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, err
	}
	res, err := k.store.KVList(ctx, &store.KVListParams{Tenant: tenant, Namespace: namespace, Prefix: prefix,
		After: after, Limit: limit, Now: k.cfg.Now()})
	if err != nil {
		return nil, err
	}
	p := &Page{Entries: res.Entries}
	if res.More && len(res.Entries) > 0 {
		p.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(res.Entries[len(res.Entries)-1].Key))
	}
	return p, nil
}

// CheckList applies the rules of List that need no store.
func CheckList(namespace, cursor string) error {
	if err := CheckName("namespace", namespace); err != nil {
		return api.ErrBadRequest.With(err.Error())
	}
	_, err := decodeCursor(cursor)
	return err
}

// CheckKey checks the namespace and key of one key.
func CheckKey(namespace, key string) error {
	if err := CheckName("namespace", namespace); err != nil {
		return api.ErrBadRequest.With(err.Error())
	}
	if err := CheckName("key", key); err != nil {
		return api.ErrBadRequest.With(err.Error())
	}
	return nil
}

// decodeCursor returns the key a cursor resumes after ("" for none).
func decodeCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", invalidf("invalid cursor")
	}
	return string(b), nil
}

// sweep deletes expired keys in bounded steps until none is left.
func (k *KV) sweep(ctx context.Context) {
	total := 0
	for ctx.Err() == nil {
		n, err := k.store.KVSweep(ctx, &store.KVSweepParams{Limit: DefaultSweepBatch, Now: k.cfg.Now()})
		if err != nil {
			if ctx.Err() == nil {
				k.log.Warn("kv sweep interrupted", "err", err)
			}
			return
		}
		total += n
		if n < DefaultSweepBatch {
			break
		}
	}
	if total > 0 {
		k.log.Debug("kv sweep", "deleted", total)
	}
}
