-- Clearing queues, and the message figures of the control plane.
--
-- cleared_offset is the offset up to which a partition's messages were
-- cleared (DELETE /api/v1/queues/:queue/clear): every lane's cursor is at
-- or past it, so nothing reads them, and the figures leave them out. Their
-- rows are freed afterwards in bounded steps; clear_partitions lists the
-- partitions that still hold some, as purge_partitions does for deleted
-- queues.
--
-- Offsets have no gaps on this engine, so the figures need no counter: a
-- partition holds last_offset - cleared_offset messages, and a lane has
-- read greatest(cursor, cleared_offset) - cleared_offset of them.
ALTER TABLE partitions ADD COLUMN cleared_offset bigint NOT NULL DEFAULT 0;

CREATE TABLE clear_partitions (
    partition_id bigint PRIMARY KEY,
    queued_at    bigint NOT NULL
);

-- A lane is never created below its partition's cleared offset (a group
-- joining from the beginning, or acking a partition it never popped): the
-- cleared messages not freed yet must never be read.
CREATE FUNCTION lanes_above_cleared() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    NEW.cursor := greatest(NEW.cursor,
        COALESCE((SELECT cleared_offset FROM partitions WHERE id = NEW.partition_id), 0));
    RETURN NEW;
END $$;
CREATE TRIGGER lanes_above_cleared BEFORE INSERT ON lanes
    FOR EACH ROW EXECUTE FUNCTION lanes_above_cleared();
