-- The duplicate check of a push looks a message up by (partition_id,
-- transaction_id). Keyed in that order, the index took one insertion point
-- per partition and per client's stream of ids: a commit merging 64
-- clients' pushes over 16 partitions wrote about one index page per message
-- into the WAL. Keyed by transaction id first, ids that grow over time
-- (a client's counter, UUIDv7, the ids the broker mints) share their
-- insertion points across partitions, and a commit writes far fewer pages.
-- The lookups are by both columns: either order serves them, and the
-- uniqueness is the same.
CREATE UNIQUE INDEX messages_txn_partition ON messages (transaction_id, partition_id);
DROP INDEX messages_partition_txn;
