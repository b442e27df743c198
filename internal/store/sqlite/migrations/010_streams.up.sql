-- Queen's stream queries (/streams/v1/*): registrations, the state each
-- query keeps per source partition, and the size of that state.
--
-- A query's state rows are keyed by its state_key, not by its id: resetting
-- a query (a new config hash with reset) gives it a new state_key, which
-- makes the old state unreachable in one row write; the old rows are then
-- freed in bounded steps (streams_purge). Keys come from streams_state_keys,
-- whose AUTOINCREMENT never hands out a key twice.
CREATE TABLE streams_queries (
    id           INTEGER PRIMARY KEY,
    uuid         TEXT    NOT NULL UNIQUE,
    tenant       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    source_queue TEXT    NOT NULL,
    sink_queue   TEXT    NOT NULL DEFAULT '',
    config_hash  TEXT    NOT NULL,
    state_key    INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE streams_state_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT
);

-- One row per (state_key, source partition) a cycle touched: how many state
-- rows it holds and their bytes (key plus JSON value), kept by every cycle,
-- so the control plane reads a query's state size without reading its state.
-- partition_id is the partition's uuid as clients send it (no reference:
-- a cycle without an ack may name any partition).
CREATE TABLE streams_shards (
    state_key    INTEGER NOT NULL,
    partition_id TEXT    NOT NULL,
    rows         INTEGER NOT NULL DEFAULT 0,
    bytes        INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (state_key, partition_id)
) WITHOUT ROWID;
CREATE INDEX streams_shards_partition ON streams_shards (partition_id);

-- The state: one row per key, clustered by (state_key, partition, key) so
-- that a shard's keys, a key prefix and the keys in order are one range.
-- value is the JSON as sent; window_end is its numeric "windowEnd" when it
-- has one, indexed for ripe_at_or_before (the idle flush of windows).
CREATE TABLE streams_state (
    state_key    INTEGER NOT NULL,
    partition_id TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    value        BLOB    NOT NULL,
    window_end   REAL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (state_key, partition_id, key)
) WITHOUT ROWID;
CREATE INDEX streams_state_ripe ON streams_state (state_key, partition_id, window_end)
    WHERE window_end IS NOT NULL;

-- State no query can reach, to be freed: a whole state_key (partition_id
-- '') or one shard of it.
CREATE TABLE streams_purge (
    state_key    INTEGER NOT NULL,
    partition_id TEXT    NOT NULL,
    queued_at    INTEGER NOT NULL,
    PRIMARY KEY (state_key, partition_id)
) WITHOUT ROWID;

-- A partition that goes takes its shards with it, so its state stops
-- counting at once and is freed by the purge: a deleted queue's partitions
-- are detached (queue_id made negative) in the deletion's own job, and an
-- idle partition (retention) is deleted outright.
CREATE TRIGGER streams_partition_detached AFTER UPDATE OF queue_id ON partitions
WHEN NEW.queue_id < 0 AND OLD.queue_id > 0
BEGIN
    INSERT INTO streams_purge (state_key, partition_id, queued_at)
        SELECT state_key, partition_id, 0 FROM streams_shards WHERE partition_id = NEW.uuid
        ON CONFLICT DO NOTHING;
    DELETE FROM streams_shards WHERE partition_id = NEW.uuid;
END;
CREATE TRIGGER streams_partition_deleted AFTER DELETE ON partitions
WHEN OLD.queue_id > 0
BEGIN
    INSERT INTO streams_purge (state_key, partition_id, queued_at)
        SELECT state_key, partition_id, 0 FROM streams_shards WHERE partition_id = OLD.uuid
        ON CONFLICT DO NOTHING;
    DELETE FROM streams_shards WHERE partition_id = OLD.uuid;
END;
