-- Queen's stream queries (/streams/v1/*): registrations, the state each
-- query keeps per source partition, and the size of that state.
--
-- A query's state rows are keyed by its state_key, not by its id: resetting
-- a query (a new config hash with reset) gives it a new state_key, which
-- makes the old state unreachable in one row write; the old rows are then
-- freed in bounded steps (streams_purge).
CREATE TABLE streams_queries (
    id           bigserial PRIMARY KEY,
    uuid         text COLLATE "C" NOT NULL UNIQUE,
    tenant       text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    source_queue text   NOT NULL,
    sink_queue   text   NOT NULL DEFAULT '',
    config_hash  text   NOT NULL,
    state_key    bigint NOT NULL,
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL,
    UNIQUE (tenant, name)
);

CREATE SEQUENCE streams_state_keys;

-- One row per (state_key, source partition) a cycle touched: how many state
-- rows it holds and their bytes (key plus JSON value), kept by every cycle,
-- so the control plane reads a query's state size without reading its state.
-- A cycle upserts its shard's row first: that row lock is what serialises
-- the cycles of one (query, partition), without an advisory lock whose hash
-- could collide with another shard's. partition_id is the partition's uuid
-- as clients send it (no reference: a cycle without an ack may name any
-- partition). Updated by every cycle: leave room for HOT updates.
CREATE TABLE streams_shards (
    state_key    bigint NOT NULL,
    partition_id text COLLATE "C" NOT NULL,
    rows         bigint NOT NULL DEFAULT 0,
    bytes        bigint NOT NULL DEFAULT 0,
    updated_at   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (state_key, partition_id)
) WITH (fillfactor = 50);
CREATE INDEX streams_shards_partition ON streams_shards (partition_id);

-- The state: one row per key. value is the JSON as sent (bytea, as message
-- payloads: no parse on write, returned byte for byte); window_end is its
-- numeric "windowEnd" when it has one, indexed for ripe_at_or_before (the
-- idle flush of windows). Keys compare byte-wise ("C"), so a key prefix is
-- an index range.
CREATE TABLE streams_state (
    state_key    bigint NOT NULL,
    partition_id text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    value        bytea  NOT NULL,
    window_end   double precision,
    updated_at   bigint NOT NULL,
    PRIMARY KEY (state_key, partition_id, key)
);
CREATE INDEX streams_state_ripe ON streams_state (state_key, partition_id, window_end)
    WHERE window_end IS NOT NULL;

-- State no query can reach, to be freed: a whole state_key (partition_id
-- '') or one shard of it.
CREATE TABLE streams_purge (
    state_key    bigint NOT NULL,
    partition_id text COLLATE "C" NOT NULL,
    queued_at    bigint NOT NULL,
    PRIMARY KEY (state_key, partition_id)
);

-- Partitions are deleted with their queue, or alone when idle (retention):
-- their shards go with them in the same statement, so their state stops
-- counting at once and is freed by the purge. One statement-level trigger
-- per deletion, however many partitions it deletes.
CREATE FUNCTION streams_partitions_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO streams_purge (state_key, partition_id, queued_at)
        SELECT s.state_key, s.partition_id, 0 FROM streams_shards s JOIN gone g ON s.partition_id = g.uuid
        ORDER BY 1, 2
        ON CONFLICT DO NOTHING;
    DELETE FROM streams_shards s USING gone g WHERE s.partition_id = g.uuid;
    RETURN NULL;
END;
$$;
CREATE TRIGGER streams_partitions_deleted AFTER DELETE ON partitions
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION streams_partitions_deleted();
