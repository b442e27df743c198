-- Webhook ingress and delivery: the features' documents (a queue's ingress
-- settings, API keys, signing secrets, delivery targets) keyed by
-- (tenant, kind, id), and the single-use nonces of signed requests, each
-- remembered until the end of its timestamp's skew window.
CREATE TABLE webhook_docs (
    tenant     TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    queue      TEXT    NOT NULL DEFAULT '',
    doc        BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, kind, id)
) WITHOUT ROWID;
CREATE INDEX webhook_docs_queue ON webhook_docs (tenant, kind, queue, id);

CREATE TABLE webhook_nonces (
    tenant     TEXT    NOT NULL,
    key_id     TEXT    NOT NULL,
    nonce      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, key_id, nonce)
) WITHOUT ROWID;
CREATE INDEX webhook_nonces_expiry ON webhook_nonces (expires_at);
