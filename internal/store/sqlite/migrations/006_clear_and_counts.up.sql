-- Clearing queues, and the message figures of the control plane.
--
-- cleared_offset is the offset up to which a partition's messages were
-- cleared (DELETE /api/v1/queues/:queue/clear): every lane's cursor is at
-- or past it, so nothing reads them, and the figures leave them out. Their
-- rows are freed afterwards in bounded steps; clear_partitions lists the
-- partitions that still hold some, as purge_partitions does for deleted
-- queues.
ALTER TABLE partitions ADD COLUMN cleared_offset INTEGER NOT NULL DEFAULT 0;

CREATE TABLE clear_partitions (
    partition_id INTEGER PRIMARY KEY,
    queued_at    INTEGER NOT NULL
);

-- Offsets here are the rowids of one table shared by every partition, so
-- the distance between two offsets is not a number of messages. Two
-- counters give the figures without reading messages:
--
--   partitions.message_count  messages stored since the last clear;
--   lanes.consumed            of those, how many the lane has committed.
--
-- Triggers keep them, each counting only the offsets that just changed
-- hands, along the index on messages (partition_id): a push counts the
-- messages it added, an ack or a pop with autoAck the messages its cursor
-- passed. The control plane sets both itself when it clears or seeks
-- (changing consumed in the same statement as the cursor tells the
-- trigger to stay out). A message deleted on its own (not by a clear) is
-- not subtracted: the counters count messages stored, as PostgreSQL's
-- offsets do.
ALTER TABLE partitions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lanes ADD COLUMN consumed INTEGER NOT NULL DEFAULT 0;

-- Existing data is counted once, here.
UPDATE partitions SET message_count =
    (SELECT count(*) FROM messages m WHERE m.partition_id = partitions.id);
UPDATE lanes SET consumed =
    (SELECT count(*) FROM messages m WHERE m.partition_id = lanes.partition_id AND m.seq <= lanes.cursor)
WHERE cursor > 0;

-- A push advanced the partition's last offset: count what it added.
CREATE TRIGGER partitions_count AFTER UPDATE OF last_offset ON partitions
WHEN NEW.last_offset > OLD.last_offset
BEGIN
    UPDATE partitions SET message_count = message_count + (SELECT count(*) FROM messages
        WHERE partition_id = NEW.id AND seq > OLD.last_offset AND seq <= NEW.last_offset)
    WHERE id = NEW.id;
END;

-- A cursor moved forward (an ack, an autoAck pop, an expired lease that
-- dead-lettered): count the messages it passed, above the cleared offset.
CREATE TRIGGER lanes_consumed AFTER UPDATE OF cursor ON lanes
WHEN NEW.cursor > OLD.cursor AND NEW.consumed = OLD.consumed
BEGIN
    UPDATE lanes SET consumed = consumed + (SELECT count(*) FROM messages
        WHERE partition_id = NEW.partition_id
          AND seq > max(OLD.cursor, (SELECT cleared_offset FROM partitions WHERE id = NEW.partition_id))
          AND seq <= NEW.cursor)
    WHERE partition_id = NEW.partition_id AND consumer_group = NEW.consumer_group;
END;

-- A lane created past the beginning (a group joining with a subscription
-- time, an ack from a group that never popped): count what lies before its
-- cursor as the partition's count less what lies after it, which is what
-- the group has left to read (nothing, for a group subscribed to new
-- messages).
CREATE TRIGGER lanes_consumed_new AFTER INSERT ON lanes
WHEN NEW.cursor > 0
BEGIN
    UPDATE lanes SET consumed = COALESCE((SELECT CASE
            WHEN NEW.cursor <= p.cleared_offset THEN 0
            ELSE max(0, p.message_count - (SELECT count(*) FROM messages m
                WHERE m.partition_id = p.id AND m.seq > NEW.cursor))
            END
        FROM partitions p WHERE p.id = NEW.partition_id), 0)
    WHERE partition_id = NEW.partition_id AND consumer_group = NEW.consumer_group;
END;

-- A lane is never created below its partition's cleared offset (a group
-- joining from the beginning, or acking a partition it never popped): the
-- cleared messages not freed yet must never be read. (Moving the cursor up
-- to it passes no counted message.)
CREATE TRIGGER lanes_above_cleared AFTER INSERT ON lanes
WHEN NEW.cursor < (SELECT cleared_offset FROM partitions WHERE id = NEW.partition_id)
BEGIN
    UPDATE lanes SET cursor = (SELECT cleared_offset FROM partitions WHERE id = NEW.partition_id)
    WHERE partition_id = NEW.partition_id AND consumer_group = NEW.consumer_group;
END;
