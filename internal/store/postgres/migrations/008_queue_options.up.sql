-- Queue options that act (retryDelay, retention, eviction, maxSize).
--
-- lanes.retry_at: after a negative ack on a queue with a retryDelay, the lane
-- is not claimed again before this time (Unix ms; 0 = at once). Not indexed,
-- so lane updates stay HOT.
ALTER TABLE lanes ADD COLUMN retry_at bigint NOT NULL DEFAULT 0;

-- partitions.floor_offset: the offset up to which retention has deleted or
-- eviction has evicted the partition's messages. A group that joins later
-- starts after it, so that it is not handed an evicted message; a partition
-- no group has joined counts its unconsumed messages from it (maxSize).
ALTER TABLE partitions ADD COLUMN floor_offset bigint NOT NULL DEFAULT 0;

-- partitions.deleted_offset: the offset up to which retention has deleted
-- every message of the partition. Retention reads on from there, so that no
-- step walks what earlier steps deleted (on PostgreSQL, index entries of
-- deleted rows stay until vacuum).
ALTER TABLE partitions ADD COLUMN deleted_offset bigint NOT NULL DEFAULT 0;

-- What the retention and eviction sweeps removed, per queue, kind
-- (retention, completed_retention, eviction) and minute (Unix ms of its
-- start), for the analytics routes. Rows name the queue rather than point at
-- it: the history outlives a deleted queue.
CREATE TABLE retention_history (
    tenant text COLLATE "C" NOT NULL,
    queue  text COLLATE "C" NOT NULL,
    kind   text COLLATE "C" NOT NULL,
    minute bigint NOT NULL,
    count  bigint NOT NULL,
    PRIMARY KEY (tenant, queue, kind, minute)
);
CREATE INDEX retention_history_minute ON retention_history (minute);

-- Retention deletes messages in bulk: let autovacuum visit the messages and
-- dead-letter tables after a few percent of them changed rather than the
-- default fifth, so that the space of deleted rows, in the table and in its
-- indexes, is reused before the table grows past it.
ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05);
ALTER TABLE dead_letters SET (autovacuum_vacuum_scale_factor = 0.05);
