// Package webhooksql holds the SQL of store.WebhookStore, written once for
// both engines: the statements are in PostgreSQL's numbered form ($1), and
// SQLite reads the same numbers as ?1 (see SQLite). Times are Unix
// milliseconds.
package webhooksql

import "strings"

// The statements.
const (
	// Put stores or replaces a document, keeping its created_at.
	Put = `INSERT INTO webhook_docs (tenant, kind, id, queue, doc, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (tenant, kind, id) DO UPDATE SET queue = excluded.queue, doc = excluded.doc,
			updated_at = excluded.updated_at`
	// PutNew stores a document unless one with the same key exists.
	PutNew = `INSERT INTO webhook_docs (tenant, kind, id, queue, doc, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (tenant, kind, id) DO NOTHING`
	Get = `SELECT queue, doc, created_at, updated_at FROM webhook_docs
		WHERE tenant = $1 AND kind = $2 AND id = $3`
	// List reads a kind's documents, of one queue when $3 is not ''.
	List = `SELECT id, queue, doc, created_at, updated_at FROM webhook_docs
		WHERE tenant = $1 AND kind = $2 AND ($3 = '' OR queue = $3) ORDER BY id`
	// ListAll reads a kind's documents of every tenant.
	ListAll = `SELECT tenant, id, queue, doc, created_at, updated_at FROM webhook_docs
		WHERE kind = $1 ORDER BY tenant, id`
	Delete = `DELETE FROM webhook_docs WHERE tenant = $1 AND kind = $2 AND id = $3`
	// Sweep deletes a kind's documents of every tenant last written before
	// $2.
	Sweep = `DELETE FROM webhook_docs WHERE kind = $1 AND updated_at < $2`
	// NonceClaim inserts a nonce, or takes over an expired one; it changes
	// no row when a live one exists (a replay).
	NonceClaim = `INSERT INTO webhook_nonces (tenant, key_id, nonce, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant, key_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
		WHERE webhook_nonces.expires_at <= $5`
	NonceSweep = `DELETE FROM webhook_nonces WHERE expires_at <= $1`
)

// SQLite returns q with SQLite's numbered parameters (?1 for $1).
func SQLite(q string) string { return strings.ReplaceAll(q, "$", "?") }
