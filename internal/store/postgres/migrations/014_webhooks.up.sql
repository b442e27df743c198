-- Webhook ingress and delivery: the features' documents (a queue's ingress
-- settings, API keys, signing secrets, delivery targets) keyed by
-- (tenant, kind, id), and the single-use nonces of signed requests, each
-- remembered until the end of its timestamp's skew window.
CREATE TABLE webhook_docs (
    tenant     text COLLATE "C" NOT NULL,
    kind       text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    queue      text COLLATE "C" NOT NULL DEFAULT '',
    doc        bytea  NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (tenant, kind, id)
);
CREATE INDEX webhook_docs_queue ON webhook_docs (tenant, kind, queue, id);

CREATE TABLE webhook_nonces (
    tenant     text COLLATE "C" NOT NULL,
    key_id     text COLLATE "C" NOT NULL,
    nonce      text COLLATE "C" NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (tenant, key_id, nonce)
);
CREATE INDEX webhook_nonces_expiry ON webhook_nonces (expires_at);
