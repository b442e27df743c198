-- Key/value state, timers and ephemeral queues (docs/api.md). Every row
-- belongs to a tenant; times are Unix milliseconds, 0 meaning none.

-- Key/value state: one row per key. value is the JSON bytes as they were set
-- (compacted; bytea, so that a read echoes them exactly, where jsonb would
-- reorder keys and reformat numbers); version counts the key's writes since
-- it was created (1 on creation, so that an expected version of 0 means
-- "absent"). A key past expires_at is absent to every read and write; the
-- sweeper deletes its row later. A counter's row is updated in place: the
-- fill factor leaves room for HOT updates (value and version are not
-- indexed).
CREATE TABLE kv (
    tenant     text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      bytea  NOT NULL,
    version    bigint NOT NULL,
    expires_at bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (tenant, namespace, key)
) WITH (fillfactor = 70);
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
    id             text COLLATE "C" PRIMARY KEY,
    tenant         text COLLATE "C" NOT NULL,
    queue          text COLLATE "C" NOT NULL,
    partition      text COLLATE "C" NOT NULL,
    transaction_id text COLLATE "C" NOT NULL,
    message_id     text   NOT NULL,
    namespace      text COLLATE "C" NOT NULL DEFAULT '',
    task           text COLLATE "C" NOT NULL DEFAULT '',
    producer_sub   text,
    payload        bytea  NOT NULL,
    fire_at        bigint NOT NULL,
    status         text   NOT NULL,
    error          text,
    created_at     bigint NOT NULL,
    finished_at    bigint NOT NULL DEFAULT 0,
    UNIQUE (tenant, queue, partition, transaction_id)
);
CREATE INDEX timers_due ON timers (fire_at, id) WHERE status = 'scheduled';
CREATE INDEX timers_finished ON timers (finished_at) WHERE status <> 'scheduled';
CREATE INDEX timers_tenant ON timers (tenant, fire_at, id);

-- Ephemeral queues: short-lived channels without partitions, cursors or
-- retention. A queue lives until expires_at (creation or the last keepalive
-- plus its TTL). Messages hang off the queue's id, so a queue deleted and
-- created again under its name never sees the old one's messages; seq is
-- the delivery order (pushes to one queue serialise on its row, so seq
-- grows in commit order within a queue). Delivery deletes.
--
-- ephemeral_messages is UNLOGGED: its writes skip the WAL, so a push or a
-- pop costs no WAL flush, and PostgreSQL empties the table after a crash of
-- the database (not of a broker). An ephemeral message therefore does not
-- survive a database crash, by design; the queues (logged) do.
CREATE TABLE ephemeral_queues (
    id           bigserial PRIMARY KEY,
    tenant       text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    ttl_ms       bigint NOT NULL,
    max_messages int    NOT NULL,
    created_at   bigint NOT NULL,
    expires_at   bigint NOT NULL,
    UNIQUE (tenant, name)
);
CREATE INDEX ephemeral_queues_expiry ON ephemeral_queues (expires_at);
CREATE UNLOGGED TABLE ephemeral_messages (
    seq        bigserial PRIMARY KEY,
    queue_id   bigint NOT NULL,
    id         text   NOT NULL,
    payload    bytea  NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX ephemeral_messages_queue ON ephemeral_messages (queue_id, seq);
