-- queen-go PostgreSQL schema. Every statement runs with search_path set to the
-- broker's schema, so names are unqualified. Times are Unix milliseconds
-- (bigint): lane.State works in milliseconds and outputs are millisecond UTC.
-- Text keys use the "C" collation: byte-wise comparison is what the API means
-- by equal and ordered (as SQLite's BINARY), and it keeps index maintenance
-- cheap whatever the database's default locale.

-- Queues: options are the JSON of store.QueueOptions (full replace on
-- configure); priority is duplicated as a column because namespace/task pops
-- order by it.
CREATE TABLE queues (
    id         bigserial PRIMARY KEY,
    uuid       text COLLATE "C" NOT NULL UNIQUE,
    name       text COLLATE "C" NOT NULL UNIQUE,
    namespace  text COLLATE "C" NOT NULL DEFAULT '',
    task       text COLLATE "C" NOT NULL DEFAULT '',
    priority   int    NOT NULL DEFAULT 0,
    options    jsonb  NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX queues_namespace_task ON queues (namespace, task);

-- Partitions: last_offset is the per-partition offset counter. A push
-- allocates offsets with UPDATE ... SET last_offset = last_offset + n while
-- holding the row lock until commit, so offsets grow in commit order (a
-- sequence would not: a consumer could commit past a message whose
-- transaction had not committed yet). It is also the offset of the newest
-- message, so a pop can tell a lane has unread messages without reading
-- messages. The row is hot: leave room for HOT updates.
CREATE TABLE partitions (
    id              bigserial PRIMARY KEY,
    uuid            text COLLATE "C" NOT NULL UNIQUE,
    queue_id        bigint NOT NULL REFERENCES queues (id) ON DELETE CASCADE,
    name            text COLLATE "C" NOT NULL,
    last_offset     bigint NOT NULL DEFAULT 0,
    last_message_at bigint NOT NULL DEFAULT 0,
    created_at      bigint NOT NULL,
    UNIQUE (queue_id, name)
) WITH (fillfactor = 50);

-- Messages: (partition_id, seq) is the log order. No foreign key: the
-- partition row is already locked by the push, and a per-row FK check would
-- cost an index probe per message. Payload is the raw JSON bytes as sent.
CREATE TABLE messages (
    partition_id   bigint NOT NULL,
    seq            bigint NOT NULL,
    id             text   NOT NULL,
    transaction_id text COLLATE "C" NOT NULL,
    trace_id       text,
    producer_sub   text,
    payload        bytea  NOT NULL,
    created_at     bigint NOT NULL,
    PRIMARY KEY (partition_id, seq)
);
CREATE UNIQUE INDEX messages_partition_txn ON messages (partition_id, transaction_id);

-- Lanes: one row per (partition, consumer group): cursor, lease, retries,
-- mirroring lane.State. A group's lanes are created for every partition of a
-- queue when the group first pops from it, and for every group when a
-- partition is created, so "unread lanes" never needs an anti-join.
--
-- ready is true when the lane may have messages after its cursor. A push
-- sets it on the lanes of the partitions it wrote; a pop or an ack clears it
-- when the cursor has reached the partition's last offset and no push to the
-- partition is in flight. The partial index lanes_ready therefore holds only
-- lanes worth visiting, ordered least recently claimed first: a pop finds its
-- candidates with a short index range scan however many partitions the queue
-- has, and live leases (claimed recently) sit at the end of the range.
CREATE TABLE lanes (
    partition_id     bigint  NOT NULL,
    consumer_group   text COLLATE "C" NOT NULL,
    queue_id         bigint  NOT NULL,
    cursor           bigint  NOT NULL DEFAULT 0,
    lease_id         text COLLATE "C",
    lease_expires_at bigint  NOT NULL DEFAULT 0,
    batch_end        bigint  NOT NULL DEFAULT 0,
    head_attempts    int     NOT NULL DEFAULT 0,
    last_claimed_at  bigint  NOT NULL DEFAULT 0,
    ready            boolean NOT NULL DEFAULT false,
    PRIMARY KEY (partition_id, consumer_group)
) WITH (fillfactor = 50);
CREATE INDEX lanes_ready ON lanes (queue_id, consumer_group, last_claimed_at) WHERE ready;
CREATE INDEX lanes_lease ON lanes (lease_id) WHERE lease_id IS NOT NULL;

-- Consumer groups: where a group started reading a queue (first join wins).
-- subscribed_from is Unix ms; 0 means from the beginning. Queue mode is
-- recorded too, so that pushes creating partitions know which lanes to add.
CREATE TABLE consumer_groups (
    queue_id        bigint NOT NULL,
    consumer_group  text COLLATE "C" NOT NULL,
    subscribed_from bigint NOT NULL DEFAULT 0,
    created_at      bigint NOT NULL,
    PRIMARY KEY (queue_id, consumer_group)
);

-- Dead letters: the message itself stays in messages.
CREATE TABLE dead_letters (
    id             bigserial PRIMARY KEY,
    partition_id   bigint NOT NULL,
    message_seq    bigint NOT NULL,
    consumer_group text   NOT NULL,
    error          text   NOT NULL,
    retry_count    int    NOT NULL,
    failed_at      bigint NOT NULL
);
CREATE INDEX dead_letters_partition ON dead_letters (partition_id);
