package apitest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/server"
)

// The ingress's signature scheme, written here from docs/webhooks.md and
// not taken from the ingress package, so that the two cannot share a
// mistake.

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// signedHeaders returns the header pairs of a request signed with secret.
func signedHeaders(secret, keyID, method, path, query string, body []byte, ts int64, nonce string) []string {
	canonical := strings.Join([]string{"QUEUEY-HMAC-SHA256", method, path, query, hexSHA256(body), keyID,
		strconv.FormatInt(ts, 10), nonce}, "\n")
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(canonical))
	return []string{"X-Queuey-Key-Id", keyID, "X-Queuey-Timestamp", strconv.FormatInt(ts, 10),
		"X-Queuey-Nonce", nonce, "X-Queuey-Content-SHA256", hexSHA256(body),
		"X-Queuey-Signature", hex.EncodeToString(m.Sum(nil))}
}

// wantIngressError checks an answer in the ingress envelope,
// {"error":{"code","message"}}, with exactly those keys.
func wantIngressError(t testing.TB, r *response, status int, code string) {
	t.Helper()
	var body map[string]map[string]any
	if r.Status != status || json.Unmarshal(r.Body, &body) != nil || len(body) != 1 {
		t.Fatalf("%s; want %d {\"error\":{\"code\":%q,…}}", r, status, code)
	}
	e := body["error"]
	if e["code"] != code || len(e) != 2 {
		t.Fatalf("%s; want code %q and a message only", r, code)
	}
	if m, _ := e["message"].(string); m == "" {
		t.Fatalf("%s: empty message", r)
	}
}

type ingressAccepted struct {
	EventID   string `json:"eventId"`
	Partition string `json:"partition"`
	Queue     string `json:"queue"`
	Replayed  bool   `json:"replayed"`
}

func wantAccepted(t testing.TB, r *response) ingressAccepted {
	t.Helper()
	var a ingressAccepted
	wantJSON(t, r, http.StatusAccepted, &a)
	wantUUIDv7(t, "eventId", a.EventID)
	return a
}

// openIngress opens queue's ingress with settings and returns the new
// credential's answer (an API key, or a signing secret for "hmac").
func (c *client) openIngress(t testing.TB, queue string, settings map[string]any) map[string]any {
	t.Helper()
	var q map[string]any
	wantJSON(t, c.do(t, "PUT", "/api/v1/ingress/queues/"+queue, settings), http.StatusOK, &q)
	if q["queue"] != queue {
		t.Fatalf("PUT ingress: %v", q)
	}
	path := "/keys"
	if settings["auth"] == "hmac" {
		path = "/secrets"
	}
	var cred map[string]any
	wantJSON(t, c.do(t, "POST", "/api/v1/ingress/queues/"+queue+path, nil), http.StatusCreated, &cred)
	return cred
}

// testIngress covers POST /ingress/v1/{queue}: every status and code, the
// signed-request failures, replay, the clock at the skew's boundary and
// Idempotency-Key, and the management routes.
func (s *suite) testIngress(t *testing.T) {
	t.Run("APIKey", func(t *testing.T) {
		t.Parallel()
		c := s.server(t)
		q := uniq("in-key")
		wantIngressError(t, c.do(t, "POST", "/ingress/v1/"+q, `{"a":1}`), 404, "not_found")
		cred := c.openIngress(t, q, map[string]any{"auth": "api_key"})
		key, _ := cred["apiKey"].(string)
		if !strings.HasPrefix(key, "qak_"+cred["keyId"].(string)+".") || cred["kind"] != "api_key" {
			t.Fatalf("created key: %v", cred)
		}
		var list struct {
			Keys []map[string]any `json:"keys"`
		}
		wantJSON(t, c.do(t, "GET", "/api/v1/ingress/queues/"+q+"/keys", nil), 200, &list)
		if len(list.Keys) != 1 || list.Keys[0]["apiKey"] != nil || list.Keys[0]["secret"] != nil {
			t.Fatalf("key list shows a secret or misses the key: %v", list.Keys)
		}

		wantIngressError(t, c.do(t, "POST", "/ingress/v1/"+q, `{"a":1}`), 401, "missing_api_key")
		for _, bad := range []string{"nope", "qak_", "qak_x", key + "x", "qak_ffffffffffffffff.abc"} {
			wantIngressError(t, c.with("X-Api-Key", bad).do(t, "POST", "/ingress/v1/"+q, `{"a":1}`), 401, "invalid_api_key")
		}
		k := c.with("X-Api-Key", key)
		a := wantAccepted(t, k.do(t, "POST", "/ingress/v1/"+q, `{"order":42}`))
		if a.Queue != q || a.Partition != "Default" || a.Replayed {
			t.Fatalf("accepted: %+v", a)
		}
		p := c.popOK(t, queuePath(q))
		if len(p.Messages) != 1 || p.Messages[0].ID != a.EventID || string(p.Messages[0].Data) != `{"order":42}` {
			t.Fatalf("the event as popped: %+v", p.Messages)
		}
		// Another queue's key does not open this one.
		q2 := uniq("in-key2")
		other := c.openIngress(t, q2, map[string]any{})["apiKey"].(string)
		wantIngressError(t, c.with("X-Api-Key", other).do(t, "POST", "/ingress/v1/"+q, `{}`), 401, "invalid_api_key")

		// Idempotency-Key: the duplicate answers the first event.
		ik := k.with("Idempotency-Key", "evt-1")
		first := wantAccepted(t, ik.do(t, "POST", "/ingress/v1/"+q, `{"n":1}`))
		again := wantAccepted(t, ik.do(t, "POST", "/ingress/v1/"+q, `{"n":1}`))
		if first.Replayed || !again.Replayed || again.EventID != first.EventID {
			t.Fatalf("idempotency: first %+v, again %+v", first, again)
		}
		// Partitions: the path's, then a body field once configured.
		if a := wantAccepted(t, k.do(t, "POST", "/ingress/v1/"+q+"/p7", `{}`)); a.Partition != "p7" {
			t.Fatalf("partition of the path: %+v", a)
		}
		wantJSON(t, c.do(t, "PUT", "/api/v1/ingress/queues/"+q, map[string]any{"partitionField": "customer"}), 200, nil)
		if a := wantAccepted(t, k.do(t, "POST", "/ingress/v1/"+q, `{"customer":"c9"}`)); a.Partition != "c9" {
			t.Fatalf("partition of the body field: %+v", a)
		}
		// The body.
		wantIngressError(t, k.do(t, "POST", "/ingress/v1/"+q, `{"a":`), 400, "invalid_body")
		wantIngressError(t, k.do(t, "POST", "/ingress/v1/"+q, `{"big":"`+strings.Repeat("x", 1<<20)+`"}`), 413,
			"body_too_large")
		// Pause and resume.
		wantJSON(t, c.do(t, "POST", "/api/v1/ingress/queues/"+q+"/pause", nil), 200, nil)
		wantIngressError(t, k.do(t, "POST", "/ingress/v1/"+q, `{}`), 409, "queue_paused")
		wantJSON(t, c.do(t, "POST", "/api/v1/ingress/queues/"+q+"/resume", nil), 200, nil)
		wantAccepted(t, k.do(t, "POST", "/ingress/v1/"+q, `{}`))
		// Loops and the hop budget (8 by default).
		wantIngressError(t, k.with("X-Queuey-Path", "other:a, queen:"+q).do(t, "POST", "/ingress/v1/"+q, `{}`), 422,
			"loop_detected")
		hops := make([]string, 8)
		for i := range hops {
			hops[i] = fmt.Sprintf("cell%d:q", i)
		}
		wantIngressError(t, k.with("X-Queuey-Path", strings.Join(hops, ",")).do(t, "POST", "/ingress/v1/"+q, `{}`),
			422, "max_hops_exceeded")
		wantAccepted(t, k.with("X-Queuey-Path", strings.Join(hops[:7], ",")).do(t, "POST", "/ingress/v1/"+q, `{}`))
		// The address allow-list.
		wantJSON(t, c.do(t, "PUT", "/api/v1/ingress/queues/"+q, map[string]any{"allowIps": []string{"10.0.0.0/8"}}), 200, nil)
		wantIngressError(t, k.do(t, "POST", "/ingress/v1/"+q, `{}`), 403, "ip_not_allowed")
		wantJSON(t, c.do(t, "PUT", "/api/v1/ingress/queues/"+q, map[string]any{"allowIps": []string{"127.0.0.0/8", "::1"}}),
			200, nil)
		wantAccepted(t, k.do(t, "POST", "/ingress/v1/"+q, `{}`))
		// A deleted key no longer opens the queue.
		wantNoContent(t, c.do(t, "DELETE", "/api/v1/ingress/queues/"+q+"/keys/"+cred["keyId"].(string), nil))
		wantIngressError(t, k.do(t, "POST", "/ingress/v1/"+q, `{}`), 401, "invalid_api_key")
		// Management errors answer in the same envelope.
		wantIngressError(t, c.do(t, "GET", "/api/v1/ingress/queues/"+uniq("none"), nil), 404, "not_found")
		wantIngressError(t, c.do(t, "PUT", "/api/v1/ingress/queues/"+q, map[string]any{"auth": "magic"}), 400, "bad_request")
	})
	t.Run("Signed", func(t *testing.T) {
		t.Parallel()
		var offset atomic.Int64 // seconds the broker's clock is ahead of now0
		now0 := time.Now().Truncate(time.Second)
		c := s.serverWith(t, server.Config{Ingress: ingress.Config{
			Now: func() time.Time { return now0.Add(time.Duration(offset.Load()) * time.Second) }}})
		q := uniq("in-hmac")
		cred := c.openIngress(t, q, map[string]any{"auth": "hmac"})
		keyID, secret := cred["keyId"].(string), cred["secret"].(string)
		if len(secret) < 32 || cred["kind"] != "signing_secret" {
			t.Fatalf("created secret: %v", cred)
		}
		path := "/ingress/v1/" + q
		body := []byte(`{"amount":100}`)
		post := func(hdr []string, query string, body []byte) *response {
			t.Helper()
			u := path
			if query != "" {
				u += "?" + query
			}
			return c.with(hdr...).do(t, "POST", u, string(body))
		}
		ts := now0.Unix()
		a := wantAccepted(t, post(signedHeaders(secret, keyID, "POST", path, "", body, ts, "n1"), "", body))
		if a.Replayed {
			t.Fatalf("accepted: %+v", a)
		}
		wantIngressError(t, post(signedHeaders(secret, keyID, "POST", path, "", body, ts, "n1"), "", body), 401,
			"replayed_request")
		// The query is signed as sent.
		wantAccepted(t, post(signedHeaders(secret, keyID, "POST", path, "src=x&b=2", body, ts, "n2"), "src=x&b=2", body))
		wantIngressError(t, post(signedHeaders(secret, keyID, "POST", path, "src=x", body, ts, "n3"), "src=y", body), 401,
			"invalid_signature")
		// Each signed-request failure.
		good := signedHeaders(secret, keyID, "POST", path, "", body, ts, "n4")
		wantIngressError(t, post(good, "", []byte(`{"amount":999}`)), 401, "invalid_signature") // body changed
		wantIngressError(t, post(signedHeaders("wrong", keyID, "POST", path, "", body, ts, "n5"), "", body), 401,
			"invalid_signature")
		wantIngressError(t, post(signedHeaders(secret, "nokey", "POST", path, "", body, ts, "n6"), "", body), 401,
			"invalid_signature")
		wantIngressError(t, post(signedHeaders(secret, keyID, "POST", "/ingress/v1/other", "", body, ts, "n7"), "", body),
			401, "invalid_signature")
		for i := 0; i < len(good); i += 2 {
			h := append([]string(nil), good...)
			h[i+1] = "" // removes the header
			wantIngressError(t, post(h, "", body), 401, "invalid_signature")
		}
		h := append([]string(nil), good...)
		h[3] = "yesterday"
		wantIngressError(t, post(h, "", body), 401, "invalid_signature")
		// The signature was checked before the nonce: n4 is still unused.
		wantAccepted(t, post(good, "", body))
		// The clock: 300 s either way is in, 301 s out.
		for _, tc := range []struct {
			skew int64
			code string
		}{{300, ""}, {-300, ""}, {301, "timestamp_out_of_range"}, {-301, "timestamp_out_of_range"}} {
			hdr := signedHeaders(secret, keyID, "POST", path, "", body, ts+tc.skew, fmt.Sprintf("skew%d", tc.skew))
			if r := post(hdr, "", body); tc.code == "" {
				wantAccepted(t, r)
			} else {
				wantIngressError(t, r, 401, tc.code)
			}
		}
		// A nonce is remembered for the skew window: replayed while its
		// timestamp is in range, then refused by the clock.
		offset.Store(200)
		wantIngressError(t, post(signedHeaders(secret, keyID, "POST", path, "", body, ts, "n1"), "", body), 401,
			"replayed_request")
		offset.Store(301)
		wantIngressError(t, post(signedHeaders(secret, keyID, "POST", path, "", body, ts, "n1"), "", body), 401,
			"timestamp_out_of_range")
		// An API key does not open a signed queue.
		wantIngressError(t, c.with("X-Api-Key", "qak_a.b").do(t, "POST", path, `{}`), 401, "invalid_signature")
	})
	t.Run("Disabled", func(t *testing.T) {
		t.Parallel()
		c := s.serverWith(t, server.Config{Ingress: ingress.Config{Disabled: true}})
		wantIngressError(t, c.do(t, "POST", "/ingress/v1/q", `{}`), 403, "feature_disabled")
		wantIngressError(t, c.do(t, "GET", "/api/v1/ingress/queues", nil), 403, "feature_disabled")
	})
}
