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
UPDATE partitions SET cleared_offset = greatest(cleared_offset, deleted_offset),
    floor_offset = greatest(floor_offset, cleared_offset, deleted_offset)
WHERE deleted_offset > cleared_offset OR floor_offset < cleared_offset;
ALTER TABLE partitions DROP COLUMN deleted_offset;

-- A seek to the beginning after retention could leave a cursor below what
-- retention deleted: lift it (it passes no message).
UPDATE lanes l SET cursor = p.cleared_offset FROM partitions p
WHERE p.id = l.partition_id AND l.cursor < p.cleared_offset;

-- Offsets here have no gaps but those of messages deleted on their own
-- (DELETE /api/v1/messages/...), so a difference of offsets is a number of
-- messages once they are taken off. message_gaps lists them above the
-- cleared offset (rows at or below it go as the floor passes them) and
-- partitions.gaps counts them, so that a partition without gaps, nearly
-- every one, pays nothing: its figures skip the look-up.
ALTER TABLE partitions ADD COLUMN gaps bigint NOT NULL DEFAULT 0;
CREATE TABLE message_gaps (
    partition_id bigint NOT NULL,
    seq          bigint NOT NULL,
    PRIMARY KEY (partition_id, seq)
);

-- Gaps left by deletes before this migration: the offsets above the floor
-- that hold no message (one pass over the messages' primary key).
INSERT INTO message_gaps (partition_id, seq)
SELECT p.id, s.seq FROM partitions p
CROSS JOIN LATERAL generate_series(p.cleared_offset + 1, p.last_offset) AS s(seq)
WHERE p.last_offset > p.cleared_offset
  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.partition_id = p.id AND m.seq = s.seq);
UPDATE partitions p SET gaps = g.n
FROM (SELECT partition_id, count(*) AS n FROM message_gaps GROUP BY partition_id) g
WHERE p.id = g.partition_id;
