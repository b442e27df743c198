package ingress

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/store"
)

// Envelope is the error body of the ingress routes,
// {"error":{"code","message"}}.
var Envelope = &httpapi.Envelope{Name: "ingress", Write: func(w http.ResponseWriter, e *api.Error) {
	httpapi.WriteJSON(w, e.Status, api.IngressErrorBody{Error: api.IngressError{Code: e.Code, Message: e.Message}})
}}

// Routes implements httpapi.Group.
func (in *Ingress) Routes() []httpapi.Route {
	gate := &httpapi.Gate{Name: "ingress", Disabled: "ingress disabled", Enabled: func() bool { return !in.cfg.Disabled },
		Unable: in.b.Unable}
	r := func(access httpapi.Access, method, pattern, name string, h httpapi.Handler) httpapi.Route {
		return httpapi.Route{RouteInfo: httpapi.RouteInfo{Access: access, Method: method, Pattern: pattern, Name: name},
			Handler: h}
	}
	const q = "/api/v1/ingress/queues/{queue}"
	return httpapi.Behind(gate, Envelope,
		r(httpapi.AccessPublic, "POST", "/ingress/v1/{queue}", "ingress_post", in.post).ProcessWide(),
		r(httpapi.AccessPublic, "POST", "/ingress/v1/{queue}/{partition}", "ingress_post_partition", in.post).ProcessWide(),
		r(httpapi.AccessAdmin, "GET", "/api/v1/ingress/queues", "ingress_queues", in.listQueues),
		r(httpapi.AccessAdmin, "PUT", q, "ingress_queue_put", in.putQueue),
		r(httpapi.AccessAdmin, "GET", q, "ingress_queue_get", in.getQueue),
		r(httpapi.AccessAdmin, "DELETE", q, "ingress_queue_delete", in.deleteQueue),
		r(httpapi.AccessAdmin, "POST", q+"/pause", "ingress_queue_pause", in.pause(true)),
		r(httpapi.AccessAdmin, "POST", q+"/resume", "ingress_queue_resume", in.pause(false)),
		r(httpapi.AccessAdmin, "POST", q+"/keys", "ingress_key_create", in.createCredential(KindAPIKey)),
		r(httpapi.AccessAdmin, "GET", q+"/keys", "ingress_key_list", in.listCredentials(KindAPIKey)),
		r(httpapi.AccessAdmin, "DELETE", q+"/keys/{keyId}", "ingress_key_delete", in.deleteCredential(KindAPIKey)),
		r(httpapi.AccessAdmin, "POST", q+"/secrets", "ingress_secret_create", in.createCredential(KindSecret)),
		r(httpapi.AccessAdmin, "GET", q+"/secrets", "ingress_secret_list", in.listCredentials(KindSecret)),
		r(httpapi.AccessAdmin, "DELETE", q+"/secrets/{keyId}", "ingress_secret_delete", in.deleteCredential(KindSecret)),
	)
}

// count counts an answer of the ingress route.
func (in *Ingress) count(err error, replayed bool) {
	code := "accepted"
	var e *api.Error
	switch {
	case errors.As(err, &e):
		code = string(e.Code)
	case err != nil:
		code = "internal"
	case replayed:
		code = "replayed"
	}
	in.requests.WithLabelValues(code).Inc()
}

// post is POST /ingress/v1/{queue}[/{partition}].
func (in *Ingress) post(w http.ResponseWriter, r *http.Request) error {
	res, err := in.accept(r)
	in.count(err, res != nil && res.Replayed)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusAccepted, res)
	return nil
}

// accept checks a request in the order that tells a client the least it
// has no right to know: the queue, the address, the credentials, then the
// queue's state, the path and the body.
func (in *Ingress) accept(r *http.Request) (*api.IngressAccepted, error) {
	ctx, tenant, queue := r.Context(), store.DefaultTenant, r.PathValue("queue")
	cfg, err := in.queueConfig(ctx, tenant, queue)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.ErrNotFound.Withf("queue %q takes no ingress", queue)
	} else if err != nil {
		return nil, err
	}
	if len(cfg.AllowIPs) > 0 && !allowed(cfg.AllowIPs, r.RemoteAddr) {
		return nil, api.ErrIPNotAllowed
	}
	// The body is read before the credentials: a signature covers it.
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, int64(in.cfg.MaxBodyBytes)))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, api.ErrBodyTooLarge.Withf("request body too large (limit %d bytes)", in.cfg.MaxBodyBytes)
	} else if err != nil {
		return nil, api.ErrBadRequest.Withf("read body: %v", err)
	}
	switch cfg.Auth {
	case AuthHMAC:
		err = in.checkSigned(r, tenant, queue, body)
	default:
		err = in.checkAPIKey(r, tenant, queue)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Paused {
		return nil, api.ErrQueuePaused.Withf("ingress of queue %q is paused", queue)
	}
	path, err := in.checkPath(r.Header.Values(HeaderPath), queue)
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, api.ErrInvalidBody.With("body is not one JSON value")
	}
	partition, err := pickPartition(r, cfg, body)
	if err != nil {
		return nil, err
	}
	item := store.PushItem{Queue: queue, Partition: partition, Payload: body}
	if key := r.Header.Get(HeaderIdempotency); key != "" {
		if len(key) > 255 {
			return nil, api.ErrBadRequest.With("Idempotency-Key longer than 255 bytes")
		}
		item.TransactionID = key
	}
	// What delivery needs besides the body is kept before the push, keyed
	// by the transaction id (minted here when the producer sent none), so
	// that no delivery can pop the message before it. A repeated key keeps
	// the first event's.
	ev := Event{Path: path, Headers: snapshot(r, cfg.Forward, body)}
	if len(ev.Path) > 0 || len(ev.Headers) > 0 {
		if item.TransactionID == "" {
			item.TransactionID = newID(16)
		}
		doc, _ := json.Marshal(ev)
		if err := in.st.WebhookPut(ctx, &store.WebhookPutParams{WebhookKey: store.WebhookKey{Tenant: tenant,
			Kind: KindEvent, ID: EventKey(queue, partition, item.TransactionID)}, Queue: queue, Doc: doc,
			IfAbsent: true, Now: in.cfg.Now()}); err != nil {
			return nil, err
		}
	}
	verdicts, err := in.b.Push(ctx, broker.Caller{Tenant: tenant}, []store.PushItem{item})
	if err != nil {
		return nil, err
	}
	v := verdicts[0]
	switch v.Status {
	case store.PushQueued, store.PushBuffered, store.PushDuplicate:
	default:
		return nil, api.ErrBadRequest.With(cmpText(v.Error, "event refused"))
	}
	res := &api.IngressAccepted{EventID: v.MessageID, Queue: queue, Partition: partition,
		Replayed: v.Status == store.PushDuplicate}
	return res, nil
}

func cmpText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkAPIKey authenticates X-Api-Key against the queue's keys.
func (in *Ingress) checkAPIKey(r *http.Request, tenant, queue string) error {
	v := r.Header.Get(HeaderAPIKey)
	if v == "" {
		return api.ErrMissingAPIKey
	}
	keyID, secret, ok := ParseAPIKey(v)
	if !ok {
		return api.ErrInvalidAPIKey.With("X-Api-Key is not qak_<keyId>.<secret>")
	}
	d, err := in.st.WebhookGet(r.Context(), &store.WebhookKey{Tenant: tenant, Kind: KindAPIKey, ID: keyID})
	if errors.Is(err, store.ErrNotFound) {
		return api.ErrInvalidAPIKey
	} else if err != nil {
		return err
	}
	var k keyDoc
	if err := json.Unmarshal(d.Doc, &k); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(k.SecretSHA256)) != 1 || d.Queue != queue {
		return api.ErrInvalidAPIKey
	}
	return nil
}

// checkSigned authenticates a signed request: the headers, the clock, the
// signature, then the nonce (claimed only once the rest holds, so that
// requests nobody signed cannot use up nonces).
func (in *Ingress) checkSigned(r *http.Request, tenant, queue string, body []byte) error {
	s, err := ParseSigned(r.Header)
	if err != nil {
		return err
	}
	now := in.cfg.Now()
	at := time.Unix(s.Timestamp, 0)
	if d := now.Sub(at); d > in.cfg.Skew || d < -in.cfg.Skew {
		return api.ErrTimestampOutRange.Withf("%s is %s from the broker's clock (tolerance %s)", HeaderTimestamp,
			d.Truncate(time.Second), in.cfg.Skew)
	}
	secret, ok, err := in.secret(r.Context(), tenant, queue, s.KeyID)
	if err != nil {
		return err
	}
	if !ok || !s.Verify(secret, r.Method, r.URL.EscapedPath(), r.URL.RawQuery, body) {
		return api.ErrInvalidSignature
	}
	fresh, err := in.st.WebhookNonceClaim(r.Context(), &store.WebhookNonceParams{Tenant: tenant, KeyID: s.KeyID,
		Nonce: s.Nonce, Now: now, Until: at.Add(in.cfg.Skew + time.Second)})
	if err != nil {
		return err
	}
	if !fresh {
		return api.ErrReplayedRequest
	}
	return nil
}

// Segment is the X-Queuey-Path segment of queue on this cell.
func (in *Ingress) Segment(queue string) string { return in.cfg.Node + ":" + queue }

// checkPath reads X-Queuey-Path (segments separated by commas, in one
// header or several) and refuses a cycle (the path already went through
// this queue of this cell) and a path past the hop budget.
func (in *Ingress) checkPath(values []string, queue string) ([]string, error) {
	path := ParsePath(values)
	if len(path) >= in.cfg.MaxHops {
		return nil, api.ErrMaxHopsExceeded.Withf("X-Queuey-Path has %d hops; the budget is %d", len(path), in.cfg.MaxHops)
	}
	own := in.Segment(queue)
	for _, s := range path {
		if s == own {
			return nil, api.ErrLoopDetected.Withf("X-Queuey-Path already went through %s", own)
		}
	}
	return path, nil
}

// ParsePath splits X-Queuey-Path values into segments, dropping empty ones.
func ParsePath(values []string) []string {
	var path []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				path = append(path, s)
			}
		}
	}
	return path
}

var partitionName = regexp.MustCompile(`^[^\x00-\x1f\x7f]{1,255}$`)

// pickPartition takes the partition from the path, else the configured
// header, else the configured top-level body field, else "Default".
func pickPartition(r *http.Request, cfg *queueDoc, body []byte) (string, error) {
	p := r.PathValue("partition")
	if p == "" && cfg.PartitionHeader != "" {
		p = r.Header.Get(cfg.PartitionHeader)
	}
	if p == "" && cfg.PartitionField != "" && len(body) > 0 && body[0] == '{' {
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) == nil {
			var s string
			if raw, ok := fields[cfg.PartitionField]; ok && json.Unmarshal(raw, &s) == nil {
				p = s
			}
		}
	}
	if p == "" {
		return "Default", nil
	}
	if !partitionName.MatchString(p) {
		return "", api.ErrBadRequest.With("partition name must be 1 to 255 characters without control characters")
	}
	return p, nil
}

// allowed reports whether the request's address is in the list.
func allowed(list []string, remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil && p.Contains(addr) {
			return true
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap() == addr {
			return true
		}
	}
	return false
}

// snapshot lifts the forwarded values off an accepted request.
func snapshot(r *http.Request, forward []api.IngressForward, body []byte) map[string]string {
	if len(forward) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	out := map[string]string{}
	for _, f := range forward {
		var v string
		switch f.From {
		case "header":
			v = r.Header.Get(f.Name)
		case "query":
			v = r.URL.Query().Get(f.Name)
		case "body":
			if fields == nil && len(body) > 0 && body[0] == '{' {
				_ = json.Unmarshal(body, &fields)
			}
			if raw, ok := fields[f.Name]; ok {
				if json.Unmarshal(raw, &v) != nil {
					v = string(raw) // a number or a literal as written
				}
			}
		}
		if v = strings.TrimSpace(v); v != "" && len(v) <= maxForwardValue && validHeaderValue(v) {
			out[http.CanonicalHeaderKey(f.As)] = v
		}
	}
	return out
}

// maxForwardValue caps a forwarded value.
const maxForwardValue = 1024

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// NeverForward reports whether a header name may never be forwarded (nor
// lifted off a request): the X-Queuey-* vocabulary, dedup identities,
// credentials and the transport's own headers.
func NeverForward(name string) bool {
	n := http.CanonicalHeaderKey(strings.TrimSpace(name))
	if strings.HasPrefix(n, "X-Queuey-") {
		return true
	}
	switch n {
	case "Idempotency-Key", "X-Idempotency-Key", "X-Delivery-Key",
		"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key",
		"Host", "Content-Type", "Content-Length", "Connection", "Transfer-Encoding", "Expect", "Upgrade", "Te":
		return true
	}
	return false
}

// Transport reports whether a header name belongs to the outbound
// request's transport (no configured header may set it).
func Transport(name string) bool {
	switch http.CanonicalHeaderKey(strings.TrimSpace(name)) {
	case "Host", "Content-Type", "Content-Length", "Connection", "Transfer-Encoding", "Expect", "Upgrade", "Te":
		return true
	}
	return false
}

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")

// ValidHeaderName reports whether s is a header name (an HTTP token).
func ValidHeaderName(s string) bool { return headerName.MatchString(s) }
