package store

import (
	"context"
	"time"
)

// WebhookStore keeps the entities of webhook ingress and delivery (ingress
// settings of a queue, API keys, signing secrets, delivery targets) as
// opaque documents the features own, and the single-use nonces of signed
// requests. The documents' formats are the features'; the store only keys
// them by (tenant, kind, id) and lists them by kind and queue.
type WebhookStore interface {
	// WebhookPut stores a document, replacing one with the same key (or,
	// with p.IfAbsent, leaving it).
	WebhookPut(ctx context.Context, p *WebhookPutParams) error
	// WebhookGet reads one document; ErrNotFound when absent.
	WebhookGet(ctx context.Context, p *WebhookKey) (*WebhookDoc, error)
	// WebhookList reads the documents of a kind, of one queue when
	// p.Queue is set, in id order; with p.AllTenants, of every tenant in
	// (tenant, id) order, p.Tenant and p.Queue ignored.
	WebhookList(ctx context.Context, p *WebhookListParams) ([]WebhookDoc, error)
	// WebhookDelete deletes one document; ErrNotFound when absent.
	WebhookDelete(ctx context.Context, p *WebhookKey) error
	// WebhookSweep deletes the documents of p.Kind, of every tenant, last
	// written before p.Before, and returns how many it deleted.
	WebhookSweep(ctx context.Context, p *WebhookSweepParams) (int, error)
	// WebhookNonceClaim records a nonce until p.Until and reports true, or
	// reports false when the same nonce is already recorded and has not
	// expired at p.Now (a replay). Expired nonces may be claimed again.
	WebhookNonceClaim(ctx context.Context, p *WebhookNonceParams) (bool, error)
	// WebhookNonceSweep deletes the nonces expired at p.Now and returns how
	// many it deleted.
	WebhookNonceSweep(ctx context.Context, p *WebhookNonceSweepParams) (int, error)
}

// WebhookKey names one document.
type WebhookKey struct {
	ID     string
	Kind   string
	Tenant string
}

// WebhookDoc is a stored document.
type WebhookDoc struct {
	WebhookKey
	CreatedAt time.Time
	Doc       []byte // the feature's JSON
	Queue     string // "" when the document belongs to no queue
	UpdatedAt time.Time
}

// WebhookPutParams stores Doc under Key.
type WebhookPutParams struct {
	WebhookKey
	Doc []byte
	// IfAbsent leaves a document already stored under the key as it is.
	IfAbsent bool
	Now      time.Time
	Queue    string
}

// WebhookListParams lists the documents of Kind (of Queue when set).
type WebhookListParams struct {
	AllTenants bool
	Kind       string
	Queue      string
	Tenant     string
}

// WebhookNonceParams claims Nonce of KeyID until Until.
type WebhookNonceParams struct {
	KeyID  string
	Nonce  string
	Now    time.Time
	Tenant string
	Until  time.Time
}

// WebhookNonceSweepParams sweeps the nonces expired at Now.
type WebhookNonceSweepParams struct {
	Now time.Time
}

// WebhookSweepParams sweeps the documents of Kind written before Before.
type WebhookSweepParams struct {
	Before time.Time
	Kind   string
}
