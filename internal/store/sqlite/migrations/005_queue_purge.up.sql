-- Deleted queues' partitions whose messages, lanes and dead letters are
-- still to be freed. Deleting a queue removes the queue, its partitions and
-- its groups at once and lists the partitions here; QueuePurge then frees
-- their rows in bounded steps, so that deleting a queue of millions of
-- messages never stalls other queues. Nothing listed here is reachable:
-- every lookup goes through the (deleted) queue or partition row.
CREATE TABLE purge_partitions (
    partition_id INTEGER PRIMARY KEY,
    queued_at    INTEGER NOT NULL
);
