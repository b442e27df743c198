-- Queue options that act (retryDelay, retention, eviction, maxSize).
--
-- lanes.retry_at: after a negative ack on a queue with a retryDelay, the lane
-- is not claimed again before this time (Unix ms; 0 = at once).
ALTER TABLE lanes ADD COLUMN retry_at INTEGER NOT NULL DEFAULT 0;

-- partitions.floor_offset: the offset up to which retention has deleted or
-- eviction has evicted the partition's messages. A group that joins later
-- starts after it, so that it is not handed an evicted message; a partition
-- no group has joined counts its unconsumed messages from it (maxSize).
ALTER TABLE partitions ADD COLUMN floor_offset INTEGER NOT NULL DEFAULT 0;

-- partitions.deleted_offset: the offset up to which retention has deleted
-- every message of the partition. Retention reads on from there, so that no
-- step walks what earlier steps deleted (on PostgreSQL, index entries of
-- deleted rows stay until vacuum).
ALTER TABLE partitions ADD COLUMN deleted_offset INTEGER NOT NULL DEFAULT 0;

-- What the retention and eviction sweeps removed, per queue, kind
-- (retention, completed_retention, eviction) and minute (Unix ms of its
-- start), for the analytics routes. Rows name the queue rather than point at
-- it: the history outlives a deleted queue.
CREATE TABLE retention_history (
    tenant TEXT    NOT NULL,
    queue  TEXT    NOT NULL,
    kind   TEXT    NOT NULL,
    minute INTEGER NOT NULL,
    count  INTEGER NOT NULL,
    PRIMARY KEY (tenant, queue, kind, minute)
) WITHOUT ROWID;
CREATE INDEX retention_history_minute ON retention_history (minute);
