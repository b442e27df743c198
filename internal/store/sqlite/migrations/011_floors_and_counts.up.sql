-- One floor for the messages that are gone, and figures that leave out
-- every message that is gone (docs/decisions.md, "What the figures count").
--
-- partitions.cleared_offset: every message at or below it is gone, cleared
-- (DELETE /api/v1/queues/:queue/clear; its rows are freed afterwards) or
-- deleted by retention, which removes a prefix of the partition at once and
-- so advances the same floor. Nothing reads below it, the figures leave it
-- out, no cursor is below it. It replaces partitions.deleted_offset (008),
-- which meant the same for retention alone.
--
-- partitions.floor_offset: where a group joining later starts. It is at or
-- above cleared_offset; above it by what eviction moved to the dead-letter
-- queue, which stays readable there until retention deletes it.
UPDATE partitions SET cleared_offset = deleted_offset WHERE deleted_offset > cleared_offset;
UPDATE partitions SET floor_offset = cleared_offset WHERE floor_offset < cleared_offset;
ALTER TABLE partitions DROP COLUMN deleted_offset;

-- A seek to the beginning after retention could leave a cursor below what
-- retention deleted: lift it (it passes no message, so no count moves).
UPDATE lanes SET cursor = (SELECT p.cleared_offset FROM partitions p WHERE p.id = lanes.partition_id)
WHERE cursor < (SELECT p.cleared_offset FROM partitions p WHERE p.id = lanes.partition_id);

-- The counters of migration 006 kept counting what retention deleted and
-- what was deleted on its own: count the messages stored once more.
UPDATE partitions SET message_count =
    (SELECT count(*) FROM messages m WHERE m.partition_id = partitions.id AND m.seq > partitions.cleared_offset);
UPDATE lanes SET consumed = (SELECT count(*) FROM messages m JOIN partitions p ON p.id = m.partition_id
    WHERE m.partition_id = lanes.partition_id AND m.seq > p.cleared_offset AND m.seq <= lanes.cursor);

-- Rows that kept the largest rowid in use after the newest message was
-- deleted on its own (007). The writer hands out offsets from a counter
-- that starts above every partition's last_offset (008), which already
-- remembers those offsets: the rows are of no use.
DELETE FROM messages WHERE partition_id = 0;
