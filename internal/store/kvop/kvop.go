// Package kvop holds the rules of key/value operations (package store's
// KVStore), which every storage driver applies the same way: a driver reads
// the rows of the keys a batch names (locking them where the engine needs
// it), Plan runs the operations over them in memory, and the driver writes
// the changes Plan returns, or writes nothing when Plan fails. The rules are
// pure functions of the rows and the time, so both engines agree by
// construction, and this package's tests cover them without a database.
package kvop

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// Key names a key within a tenant.
type Key struct {
	Namespace string
	Key       string
}

// Row is a key's stored row as a driver read it. Times are Unix
// milliseconds; ExpiresAt 0 means never.
type Row struct {
	CreatedAt int64
	ExpiresAt int64
	UpdatedAt int64
	Value     []byte
	Version   int64
}

// Live reports whether the row is a present key at nowMs: a row past its
// expiry is absent, whether or not the sweeper has deleted it yet.
func (r Row) Live(nowMs int64) bool { return r.ExpiresAt == 0 || r.ExpiresAt > nowMs }

// Entry is the row as the store reports a key.
func (r Row) Entry(k Key) *store.KVEntry {
	e := &store.KVEntry{Namespace: k.Namespace, Key: k.Key, Value: r.Value, Version: r.Version,
		CreatedAt: time.UnixMilli(r.CreatedAt).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAt).UTC()}
	if r.ExpiresAt > 0 {
		e.ExpiresAt = time.UnixMilli(r.ExpiresAt).UTC()
	}
	return e
}

// Change is what a batch leaves to write for one key: Present with Row, or
// absent. Stored says whether a row existed before the batch (live or
// expired), so the driver knows whether to insert, update or delete it.
type Change struct {
	Key     Key
	Present bool
	Row     Row
	Stored  bool
}

// Keys returns the distinct keys ops name, sorted by namespace then key
// (byte-wise): the order in which drivers lock rows, so that two batches
// never wait for each other in a cycle.
func Keys(ops []store.KVOp) []Key {
	keys := make([]Key, 0, len(ops))
	for _, op := range ops {
		keys = append(keys, Key{op.Namespace, op.Key})
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Key, b.Key))
	})
	return slices.Compact(keys)
}

// cell is a key's state while a batch runs.
type cell struct {
	present bool
	row     Row
	stored  bool
	dirty   bool
}

// Plan runs ops in order over rows (the stored rows of the keys ops name;
// a key without a row is absent) at nowMs. It returns one result per
// operation and the changes to write, in Keys order, or a
// *store.KVConflictError when an operation cannot apply, in which case
// nothing must be written.
func Plan(ops []store.KVOp, rows map[Key]Row, nowMs int64) ([]store.KVResult, []Change, error) {
	cells := make(map[Key]*cell, len(rows))
	for k, r := range rows {
		cells[k] = &cell{present: r.Live(nowMs), row: r, stored: true}
	}
	results := make([]store.KVResult, len(ops))
	for i := range ops {
		op := &ops[i]
		k := Key{op.Namespace, op.Key}
		c := cells[k]
		if c == nil {
			c = &cell{}
			cells[k] = c
		}
		res, err := apply(op, k, c, nowMs)
		if err != nil {
			err.Index = i
			return nil, nil, err
		}
		results[i] = res
	}
	var changes []Change
	for _, k := range Keys(ops) {
		c := cells[k]
		if !c.dirty || (!c.present && !c.stored) {
			continue
		}
		changes = append(changes, Change{Key: k, Present: c.present, Row: c.row, Stored: c.stored})
	}
	return results, changes, nil
}

// apply runs one operation on c. The conflict it returns has no Index yet.
func apply(op *store.KVOp, k Key, c *cell, nowMs int64) (store.KVResult, *store.KVConflictError) {
	res := store.KVResult{Kind: op.Kind}
	if op.Expect != nil && !Holds(op.Expect, c.present, c.row) {
		return res, conflict(k, c, api.KVReasonExpectation)
	}
	switch op.Kind {
	case store.KVOpGet:
		res.Found = c.present
		if c.present {
			res.Entry = c.row.Entry(k)
		}
	case store.KVOpSet:
		next := Row{Value: op.Value, Version: 1, CreatedAt: nowMs, UpdatedAt: nowMs}
		if c.present {
			next.Version, next.CreatedAt = c.row.Version+1, c.row.CreatedAt
		}
		if op.TTL > 0 {
			next.ExpiresAt = nowMs + op.TTL.Milliseconds()
		}
		c.present, c.row, c.dirty = true, next, true
		res.Found, res.Entry = true, next.Entry(k)
	case store.KVOpIncr:
		next := Row{Value: strconv.AppendInt(nil, op.By, 10), Version: 1, CreatedAt: nowMs, UpdatedAt: nowMs}
		if op.TTL > 0 {
			next.ExpiresAt = nowMs + op.TTL.Milliseconds()
		}
		if c.present {
			n, ok := Counter(c.row.Value)
			if !ok {
				return res, conflict(k, c, api.KVReasonNotCounter)
			}
			sum, ok := add(n, op.By)
			if !ok {
				return res, conflict(k, c, api.KVReasonOverflow)
			}
			next = c.row
			next.Value, next.Version, next.UpdatedAt = strconv.AppendInt(nil, sum, 10), c.row.Version+1, nowMs
		}
		c.present, c.row, c.dirty = true, next, true
		res.Found, res.Entry = true, next.Entry(k)
	case store.KVOpDelete:
		res.Found = c.present
		if c.present {
			c.present, c.dirty = false, true
		}
	default:
		panic(fmt.Sprintf("kvop: unknown operation %q", op.Kind)) // the decoder admits only the four
	}
	return res, nil
}

func conflict(k Key, c *cell, reason string) *store.KVConflictError {
	e := &store.KVConflictError{Reason: reason}
	if c.present {
		e.Current = c.row.Entry(k)
	}
	return e
}

// Holds reports whether the key's state (present with row, or absent)
// meets every condition of x.
func Holds(x *store.KVExpect, present bool, row Row) bool {
	if x.Exists != nil && *x.Exists != present {
		return false
	}
	if x.Version != nil {
		if *x.Version == 0 && present {
			return false
		}
		if *x.Version != 0 && (!present || row.Version != *x.Version) {
			return false
		}
	}
	if x.Value != nil && (!present || !EqualJSON(x.Value, row.Value)) {
		return false
	}
	return true
}

// Counter reads a value as a counter: a JSON integer that fits in 64 bits.
func Counter(value []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
	return n, err == nil
}

// add returns a+b, false when it overflows.
func add(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// EqualJSON reports whether a and b are the same JSON value: objects are
// equal whatever the order of their keys, and numbers by value (1, 1.0 and
// 1e0 are equal; integers of any size compare exactly).
func EqualJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, ok := decode(a)
	if !ok {
		return false
	}
	vb, ok := decode(b)
	if !ok {
		return false
	}
	return equal(va, vb)
}

func decode(data []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TxAbort is the abort of a transaction whose KV operation op (at position
// index of the transaction's operations) met a conflict.
func TxAbort(index int, op store.KVOp, ce *store.KVConflictError) *store.TxAbortError {
	return &store.TxAbortError{Reason: fmt.Sprintf("kv %s of key %q in namespace %q (operations[%d]) failed: %s",
		op.Kind, op.Key, op.Namespace, index, ce.Reason)}
}

// PrefixEnd returns the smallest string greater than every string that
// starts with prefix, in byte-wise order (UTF-8's byte order is code point
// order): the prefix with its last code point incremented. A listing by
// prefix reads the key range [prefix, PrefixEnd(prefix)), which an index
// serves as one range. It returns "" when there is no such bound (an empty
// prefix, or one of U+10FFFF only): every key from prefix on matches then.
func PrefixEnd(prefix string) string {
	runes := []rune(prefix)
	for len(runes) > 0 {
		last := runes[len(runes)-1]
		switch {
		case last == 0xD7FF:
			runes[len(runes)-1] = 0xE000 // skip the surrogates, which UTF-8 cannot encode
			return string(runes)
		case last < 0x10FFFF:
			runes[len(runes)-1] = last + 1
			return string(runes)
		}
		runes = runes[:len(runes)-1]
	}
	return ""
}

// TxOps gathers the key/value operations of a transaction (store.TxRun).
// Drivers apply them together after the transaction's pushes and acks, so
// that key rows are the last locks a transaction takes (no lock cycle with
// partitions and lanes), and put each result in the slot the operation has
// among the transaction's results.
type TxOps struct {
	Ops   []store.KVOp
	index []int // position of each operation in the transaction
	slot  []int // position of its result
}

// Add records op, operation index of the transaction, whose result goes to
// slot.
func (x *TxOps) Add(index, slot int, op store.KVOp) {
	x.Ops = append(x.Ops, op)
	x.index = append(x.index, index)
	x.slot = append(x.slot, slot)
}

// Finish takes what applying x.Ops returned: it fills the results' slots of
// out, or turns a conflict into the transaction's abort.
func (x *TxOps) Finish(res []store.KVResult, err error, out []store.TxOpResult) error {
	var ce *store.KVConflictError
	if errors.As(err, &ce) {
		return TxAbort(x.index[ce.Index], x.Ops[ce.Index], ce)
	}
	if err != nil {
		return err
	}
	for j := range res {
		out[x.slot[j]].KV = &res[j]
	}
	return nil
}
