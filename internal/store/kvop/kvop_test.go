package kvop

import (
	"errors"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

func TestEqualJSON(t *testing.T) {
	for _, c := range []struct {
		a, b string
		eq   bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[1.0,2e0],"a":1}`, true},
		{`12345678901234567890`, `12345678901234567890.0`, true},
		{`12345678901234567890`, `12345678901234567891`, false},
		{`"x"`, `"x"`, true},
		{`null`, `false`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
	} {
		if got := EqualJSON([]byte(c.a), []byte(c.b)); got != c.eq {
			t.Errorf("EqualJSON(%s, %s) = %v, want %v", c.a, c.b, got, c.eq)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"": "", "user:": "user;", "a\uD7FF": "a\uE000", "a\U0010FFFF": "b",
		"\U0010FFFF": ""} {
		if got := PrefixEnd(in); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCounter(t *testing.T) {
	for in, ok := range map[string]bool{"0": true, "-7": true, "1.5": false, `"1"`: false, "1e3": false,
		"9223372036854775808": false} {
		if _, got := Counter([]byte(in)); got != ok {
			t.Errorf("Counter(%s) ok = %v, want %v", in, got, ok)
		}
	}
}

func TestPlanAppliesInOrderAndFailsWhole(t *testing.T) {
	k := Key{"ns", "k"}
	rows := map[Key]Row{k: {Value: []byte(`5`), Version: 3, CreatedAt: 1, UpdatedAt: 2}}
	v4 := int64(4)
	ops := []store.KVOp{
		{Kind: store.KVOpIncr, Namespace: "ns", Key: "k", By: 2},
		{Kind: store.KVOpSet, Namespace: "ns", Key: "k", Value: []byte(`"x"`), Expect: &store.KVExpect{Version: &v4}},
		{Kind: store.KVOpDelete, Namespace: "ns", Key: "other"},
	}
	res, changes, err := Plan(ops, rows, 10)
	if err != nil {
		t.Fatal(err)
	}
	if string(res[0].Entry.Value) != "7" || res[1].Entry.Version != 5 || res[2].Found {
		t.Fatalf("results %+v", res)
	}
	if len(changes) != 1 || !changes[0].Stored || string(changes[0].Row.Value) != `"x"` {
		t.Fatalf("changes %+v, want one update of ns/k (deleting an absent key writes nothing)", changes)
	}
	// Expired rows are absent: an expect of absence holds, a new set starts at 1.
	rows[k] = Row{Value: []byte(`1`), Version: 9, ExpiresAt: 10}
	zero := int64(0)
	res, _, err = Plan([]store.KVOp{{Kind: store.KVOpSet, Namespace: "ns", Key: "k", Value: []byte(`2`),
		Expect: &store.KVExpect{Version: &zero}}}, rows, 10)
	if err != nil || res[0].Entry.Version != 1 {
		t.Fatalf("set over an expired row: %+v %v", res, err)
	}
	_, _, err = Plan([]store.KVOp{ops[0], {Kind: store.KVOpIncr, Namespace: "ns", Key: "s", By: 1}},
		map[Key]Row{{"ns", "s"}: {Value: []byte(`"a"`), Version: 1}}, 10)
	var ce *store.KVConflictError
	if !errors.As(err, &ce) || ce.Index != 1 || ce.Reason != api.KVReasonNotCounter || ce.Current.Version != 1 {
		t.Fatalf("incr of a string: %v", err)
	}
}
