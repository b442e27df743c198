-- Key/value state, timers and ephemeral queues (docs/api.md). Every row
-- belongs to a tenant; times are Unix milliseconds, 0 meaning none.

-- Key/value state: one row per key. value is the JSON text as it was set
-- (compacted); version counts the key's writes since it was created (1 on
-- creation, so that an expected version of 0 means "absent"). A key past
-- expires_at is absent to every read and write; the sweeper deletes its row
-- later, so expiry does not wait for the sweep.
CREATE TABLE kv (
    tenant     TEXT    NOT NULL,
    namespace  TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, namespace, key)
) WITHOUT ROWID;
CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at > 0;

-- Timers: a message to push at fire_at. Everything the push needs is fixed
-- when the timer is scheduled (the message id included, minted then), so a
-- fire is a plain push of the stored row; the fire and the status change
-- commit together. (tenant, queue, partition, transaction_id) is the
-- message's dedup key, unique here too: scheduling the same transactionId
-- twice is idempotent, and a fire retried after a crash is a duplicate.
-- status: scheduled, fired, cancelled or failed (the push was refused);
-- finished_at is when it left scheduled.
CREATE TABLE timers (
    id             TEXT    PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    queue          TEXT    NOT NULL,
    partition      TEXT    NOT NULL,
    transaction_id TEXT    NOT NULL,
    message_id     TEXT    NOT NULL,
    namespace      TEXT    NOT NULL DEFAULT '',
    task           TEXT    NOT NULL DEFAULT '',
    producer_sub   TEXT,
    payload        TEXT    NOT NULL,
    fire_at        INTEGER NOT NULL,
    status         TEXT    NOT NULL,
    error          TEXT,
    created_at     INTEGER NOT NULL,
    finished_at    INTEGER NOT NULL DEFAULT 0,
    UNIQUE (tenant, queue, partition, transaction_id)
);
CREATE INDEX timers_due ON timers (fire_at, id) WHERE status = 'scheduled';
CREATE INDEX timers_finished ON timers (finished_at) WHERE status <> 'scheduled';
CREATE INDEX timers_tenant ON timers (tenant, fire_at, id);

-- Ephemeral queues: short-lived channels without partitions, cursors or
-- retention. A queue lives until expires_at (creation or the last keepalive
-- plus its TTL). Messages hang off the queue's id (never reused:
-- AUTOINCREMENT), so a queue deleted and created again under its name never
-- sees the old one's messages; seq is the delivery order. Delivery deletes.
CREATE TABLE ephemeral_queues (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    ttl_ms       INTEGER NOT NULL,
    max_messages INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    UNIQUE (tenant, name)
);
CREATE INDEX ephemeral_queues_expiry ON ephemeral_queues (expires_at);
CREATE TABLE ephemeral_messages (
    seq        INTEGER PRIMARY KEY,
    queue_id   INTEGER NOT NULL,
    id         TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX ephemeral_messages_queue ON ephemeral_messages (queue_id, seq);
