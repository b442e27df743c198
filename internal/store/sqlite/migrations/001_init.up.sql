-- Queues: options are kept as the JSON of store.QueueOptions (full replace on
-- configure); priority is duplicated as a column because namespace/task pops
-- order by it.
CREATE TABLE queues (
    id         INTEGER PRIMARY KEY,
    uuid       TEXT    NOT NULL UNIQUE,
    name       TEXT    NOT NULL UNIQUE,
    namespace  TEXT    NOT NULL DEFAULT '',
    task       TEXT    NOT NULL DEFAULT '',
    priority   INTEGER NOT NULL DEFAULT 0,
    options    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX queues_namespace_task ON queues (namespace, task);

-- Partitions: last_offset is the offset of the newest message, so a pop can
-- tell a lane has unread messages without touching the messages table.
CREATE TABLE partitions (
    id              INTEGER PRIMARY KEY,
    uuid            TEXT    NOT NULL UNIQUE,
    queue_id        INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    last_offset     INTEGER NOT NULL DEFAULT 0,
    last_message_at INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    UNIQUE (queue_id, name)
);

-- Messages: the rowid is the offset. SQLite has one writer at a time, so
-- rowids grow in commit order and are a valid per-partition offset.
CREATE TABLE messages (
    seq            INTEGER PRIMARY KEY,
    partition_id   INTEGER NOT NULL,
    id             TEXT    NOT NULL,
    transaction_id TEXT    NOT NULL,
    trace_id       TEXT,
    producer_sub   TEXT,
    payload        TEXT    NOT NULL,
    created_at     INTEGER NOT NULL
);
-- (partition_id) also carries the rowid, so it serves "seq > cursor" scans.
CREATE INDEX messages_partition ON messages (partition_id);
CREATE UNIQUE INDEX messages_partition_txn ON messages (partition_id, transaction_id);

-- Lanes: one row per (partition, consumer group): cursor, lease, retries.
CREATE TABLE lanes (
    partition_id     INTEGER NOT NULL,
    consumer_group   TEXT    NOT NULL,
    cursor           INTEGER NOT NULL DEFAULT 0,
    lease_id         TEXT,
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    batch_end        INTEGER NOT NULL DEFAULT 0,
    head_attempts    INTEGER NOT NULL DEFAULT 0,
    last_claimed_at  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, consumer_group)
) WITHOUT ROWID;
CREATE INDEX lanes_lease ON lanes (lease_id) WHERE lease_id IS NOT NULL;

-- Consumer groups: where a group started reading a queue (first join wins).
-- subscribed_from is Unix ms; 0 means from the beginning.
CREATE TABLE consumer_groups (
    queue_id        INTEGER NOT NULL,
    consumer_group  TEXT    NOT NULL,
    subscribed_from INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (queue_id, consumer_group)
) WITHOUT ROWID;

-- Dead letters: the message itself stays in messages.
CREATE TABLE dead_letters (
    id                  INTEGER PRIMARY KEY,
    partition_id        INTEGER NOT NULL,
    message_seq         INTEGER NOT NULL,
    consumer_group      TEXT    NOT NULL,
    error               TEXT    NOT NULL,
    retry_count         INTEGER NOT NULL,
    failed_at           INTEGER NOT NULL
);
CREATE INDEX dead_letters_partition ON dead_letters (partition_id);
