-- Deleted queues' partitions whose messages, lanes and dead letters are
-- still to be freed. Deleting a queue removes the queue, its partitions and
-- its groups at once and lists the partitions here; QueuePurge then frees
-- their rows in bounded steps (one broker at a time, under a job lock), so
-- that deleting a queue of millions of messages is never one long
-- transaction. Nothing listed here is reachable: every lookup goes through
-- the (deleted) queue or partition row.
CREATE TABLE purge_partitions (
    partition_id bigint PRIMARY KEY,
    queued_at    bigint NOT NULL
);
