package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/api"
)

// checkBadRequest fails unless err is a 400 whose text speaks JSON, not Go.
func checkBadRequest(t *testing.T, body []byte, err error) {
	t.Helper()
	var he *api.Error
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest {
		t.Fatalf("body %q: error %v (%T) is not a 400", body, err, err)
	}
	msg := quoted.ReplaceAllString(err.Error(), `""`)
	for _, typ := range []string{"httpapi.", "store.", "broker.", "*string", "*int", "[]", "struct", "json.", "map["} {
		if strings.Contains(msg, typ) {
			t.Fatalf("body %q: error text %q names a Go type (%q)", body, err, typ)
		}
	}
}

func FuzzDecodeKVBatch(f *testing.F) {
	for _, s := range []string{
		`{"ops":[{"op":"set","namespace":"n","key":"k","value":{"a":1},"ttlSeconds":60,"expect":{"version":0}}]}`,
		`{"ops":[{"op":"incr","namespace":"n","key":"k","by":-3},{"op":"get","namespace":"n","key":"k"}]}`,
		`{"ops":[{"op":"delete","namespace":"n","key":"k","expect":{"value":null}}]}`,
		`{"ops":[{"op":"set","namespace":"n","key":"k"}]}`, `{"ops":null}`, `{"ops":[1]}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ops, err := DecodeKVBatch(body)
		if err != nil {
			checkBadRequest(t, body, err)
			return
		}
		for _, op := range ops {
			if op.Kind == "set" && len(op.Value) == 0 {
				t.Fatalf("body %q: a set without a value decoded", body)
			}
		}
	})
}

func FuzzDecodeTimers(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"queue":"q","payload":1,"delaySeconds":1.5,"transactionId":"t"}]}`,
		`{"items":[{"queue":"q","partition":"p","payload":null,"fireAt":"2030-01-01T00:00:00.123Z"}]}`,
		`{"items":[{"queue":"q","payload":1,"delaySeconds":-1}]}`, `{"items":[]}`, `{"items":[{}]}`, `{}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reqs, err := DecodeTimers(body)
		if err != nil {
			checkBadRequest(t, body, err)
			return
		}
		for _, r := range reqs {
			if r.Queue == "" || len(r.Payload) == 0 || (r.Delay != nil && *r.Delay < 0) {
				t.Fatalf("body %q: decoded %+v", body, r)
			}
		}
	})
}
