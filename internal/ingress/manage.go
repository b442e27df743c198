package ingress

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/store"
)

// The management routes: admin level, for the caller's tenant. The ingress
// route itself serves the default tenant's queues.

const maxManageBody = 64 << 10

func tenantOf(r *http.Request) string { return store.TenantOrDefault(httpapi.Caller(r).Tenant) }

func badBody(err error) error { return api.ErrBadRequest.Withf("bad body: %v", err) }

// decodeQueue decodes and checks the body of PUT
// /api/v1/ingress/queues/{queue}.
func decodeQueue(body []byte) (*queueDoc, error) {
	var q api.IngressQueue
	if err := json.Unmarshal(body, &q); err != nil {
		return nil, badBody(err)
	}
	switch q.Auth {
	case AuthAPIKey, AuthHMAC:
	case "":
		q.Auth = AuthAPIKey
	default:
		return nil, api.ErrBadRequest.Withf("bad body: auth must be %q or %q", AuthAPIKey, AuthHMAC)
	}
	for _, s := range q.AllowIPs {
		if _, err := netip.ParsePrefix(s); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(s); err != nil {
			return nil, api.ErrBadRequest.Withf("bad body: allowIps: %q is neither an address nor a CIDR range", s)
		}
	}
	if len(q.PartitionHeader) > 128 || len(q.PartitionField) > 128 {
		return nil, api.ErrBadRequest.With("bad body: partitionHeader and partitionField are at most 128 bytes")
	}
	if len(q.Forward) > 32 {
		return nil, api.ErrBadRequest.With("bad body: forward has at most 32 entries")
	}
	seen := map[string]bool{}
	for _, f := range q.Forward {
		switch {
		case f.From != "header" && f.From != "query" && f.From != "body":
			return nil, api.ErrBadRequest.Withf("bad body: forward: from must be header, query or body, not %q", f.From)
		case f.Name == "" || len(f.Name) > 128:
			return nil, api.ErrBadRequest.With("bad body: forward: name must be 1 to 128 bytes")
		case !ValidHeaderName(f.As):
			return nil, api.ErrBadRequest.Withf("bad body: forward: %q is not a header name", f.As)
		case NeverForward(f.As):
			return nil, api.ErrBadRequest.Withf("bad body: forward: %s can never be forwarded", f.As)
		case f.From == "header" && NeverForward(f.Name):
			return nil, api.ErrBadRequest.Withf("bad body: forward: %s can never be forwarded", f.Name)
		case seen[http.CanonicalHeaderKey(f.As)]:
			return nil, api.ErrBadRequest.Withf("bad body: forward: %s named twice", f.As)
		}
		seen[http.CanonicalHeaderKey(f.As)] = true
	}
	return &queueDoc{Auth: q.Auth, AllowIPs: q.AllowIPs, PartitionHeader: q.PartitionHeader,
		PartitionField: q.PartitionField, Paused: q.Paused, Forward: q.Forward}, nil
}

func wire(queue string, q *queueDoc) api.IngressQueue {
	allow := q.AllowIPs
	if allow == nil {
		allow = []string{}
	}
	return api.IngressQueue{Queue: queue, Auth: q.Auth, AllowIPs: allow, PartitionHeader: q.PartitionHeader,
		PartitionField: q.PartitionField, Paused: q.Paused, Forward: q.Forward}
}

func checkQueueName(queue string) error {
	if !partitionName.MatchString(queue) {
		return api.ErrBadRequest.With("queue name must be 1 to 255 characters without control characters")
	}
	return nil
}

func (in *Ingress) saveQueue(r *http.Request, queue string, q *queueDoc) error {
	doc, _ := json.Marshal(q)
	return in.st.WebhookPut(r.Context(), &store.WebhookPutParams{WebhookKey: store.WebhookKey{Tenant: tenantOf(r),
		Kind: KindQueue, ID: queue}, Queue: queue, Doc: doc, Now: in.cfg.Now()})
}

func (in *Ingress) putQueue(w http.ResponseWriter, r *http.Request) error {
	queue := r.PathValue("queue")
	if err := checkQueueName(queue); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxManageBody))
	if err != nil {
		return api.ErrBadRequest.Withf("read body: %v", err)
	}
	q, err := decodeQueue(body)
	if err != nil {
		return err
	}
	if err := in.saveQueue(r, queue, q); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, wire(queue, q))
	return nil
}

func notFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return api.ErrNotFound.With(what + " not found")
	}
	return err
}

func (in *Ingress) getQueue(w http.ResponseWriter, r *http.Request) error {
	queue := r.PathValue("queue")
	q, err := in.queueConfig(r.Context(), tenantOf(r), queue)
	if err != nil {
		return notFound(err, "ingress of queue "+queue)
	}
	httpapi.WriteJSON(w, http.StatusOK, wire(queue, q))
	return nil
}

func (in *Ingress) listQueues(w http.ResponseWriter, r *http.Request) error {
	docs, err := in.st.WebhookList(r.Context(), &store.WebhookListParams{Tenant: tenantOf(r), Kind: KindQueue})
	if err != nil {
		return err
	}
	out := struct {
		Queues []api.IngressQueue `json:"queues"`
	}{Queues: []api.IngressQueue{}}
	for _, d := range docs {
		var q queueDoc
		if json.Unmarshal(d.Doc, &q) == nil {
			out.Queues = append(out.Queues, wire(d.ID, &q))
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// deleteQueue closes a queue's ingress and deletes its keys and secrets.
func (in *Ingress) deleteQueue(w http.ResponseWriter, r *http.Request) error {
	queue, tenant := r.PathValue("queue"), tenantOf(r)
	if err := in.st.WebhookDelete(r.Context(), &store.WebhookKey{Tenant: tenant, Kind: KindQueue, ID: queue}); err != nil {
		return notFound(err, "ingress of queue "+queue)
	}
	for _, kind := range []string{KindAPIKey, KindSecret} {
		docs, err := in.st.WebhookList(r.Context(), &store.WebhookListParams{Tenant: tenant, Kind: kind, Queue: queue})
		if err != nil {
			return err
		}
		for _, d := range docs {
			if err := in.st.WebhookDelete(r.Context(), &d.WebhookKey); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (in *Ingress) pause(paused bool) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		queue := r.PathValue("queue")
		q, err := in.queueConfig(r.Context(), tenantOf(r), queue)
		if err != nil {
			return notFound(err, "ingress of queue "+queue)
		}
		q.Paused = paused
		if err := in.saveQueue(r, queue, q); err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, wire(queue, q))
		return nil
	}
}

func credentialKind(kind string) string {
	if kind == KindAPIKey {
		return "api_key"
	}
	return "signing_secret"
}

// createCredential mints an API key or a signing secret for a queue whose
// ingress is open and answers it once.
func (in *Ingress) createCredential(kind string) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		queue, tenant := r.PathValue("queue"), tenantOf(r)
		if _, err := in.queueConfig(r.Context(), tenant, queue); err != nil {
			return notFound(err, "ingress of queue "+queue)
		}
		keyID, secret := newID(8), newID(32)
		now := in.cfg.Now().UTC()
		out := api.IngressCredential{KeyID: keyID, Kind: credentialKind(kind), Queue: queue,
			CreatedAt: now.Format(time.RFC3339Nano)}
		var doc []byte
		if kind == KindAPIKey {
			sum := sha256.Sum256([]byte(secret))
			doc, _ = json.Marshal(keyDoc{SecretSHA256: hex.EncodeToString(sum[:])})
			out.APIKey = "qak_" + keyID + "." + secret
		} else {
			s := secretDoc{Secret: secret}
			if in.cfg.Encryption != nil {
				sealed, err := in.cfg.Encryption.Seal([]byte(secret))
				if err != nil {
					return err
				}
				s = secretDoc{Secret: string(sealed), Sealed: true}
			}
			doc, _ = json.Marshal(s)
			out.Secret = secret
		}
		if err := in.st.WebhookPut(r.Context(), &store.WebhookPutParams{WebhookKey: store.WebhookKey{Tenant: tenant,
			Kind: kind, ID: keyID}, Queue: queue, Doc: doc, Now: now}); err != nil {
			return err
		}
		in.log.Info("ingress credential created", "queue", queue, "kind", out.Kind, "keyId", keyID)
		httpapi.WriteJSON(w, http.StatusCreated, out)
		return nil
	}
}

func (in *Ingress) listCredentials(kind string) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		queue := r.PathValue("queue")
		docs, err := in.st.WebhookList(r.Context(), &store.WebhookListParams{Tenant: tenantOf(r), Kind: kind, Queue: queue})
		if err != nil {
			return err
		}
		out := struct {
			Keys []api.IngressCredential `json:"keys"`
		}{Keys: []api.IngressCredential{}}
		for _, d := range docs {
			out.Keys = append(out.Keys, api.IngressCredential{KeyID: d.ID, Kind: credentialKind(kind), Queue: d.Queue,
				CreatedAt: d.CreatedAt.Format(time.RFC3339Nano)})
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
		return nil
	}
}

func (in *Ingress) deleteCredential(kind string) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		queue, key := r.PathValue("queue"), store.WebhookKey{Tenant: tenantOf(r), Kind: kind, ID: r.PathValue("keyId")}
		d, err := in.st.WebhookGet(r.Context(), &key)
		if err == nil && d.Queue != queue {
			err = store.ErrNotFound
		}
		if err == nil {
			err = in.st.WebhookDelete(r.Context(), &key)
		}
		if err != nil {
			return notFound(err, credentialKind(kind)+" "+key.ID)
		}
		in.log.Info("ingress credential deleted", "queue", queue, "kind", credentialKind(kind), "keyId", key.ID)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
