-- How a message's payload is sealed (encryption at rest, store.Seal): 0 the
-- client's payload as given, never opened whatever its shape; 1 Queen's
-- seal, which binds nothing (imported rows); 2 sealed by this broker, bound
-- to the tenant and the queue. The broker opens a payload by this column,
-- never by its shape, so a sealed blob pushed by a client stays opaque.
-- A timer keeps the seal of the message it will push.
ALTER TABLE messages ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE timers ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;

-- Rows written before this column, by builds that sealed without binding
-- and opened by shape: on a queue that encrypts, a payload of the sealed
-- shape was sealed by the broker (a client's blob that its keys did not
-- open was sealed again), so it is marked as an unbound seal and stays
-- readable. Elsewhere the shape proves nothing and the row stays 0. (Payloads
-- are stored compacted: an object's first character is its brace.)
UPDATE messages SET sealed = 1
WHERE partition_id IN (
        SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
        WHERE json_extract(q.options, '$.encryptionEnabled') = 1)
    AND substr(payload, 1, 1) = '{'
    AND instr(payload, '"authTag"') > 0 AND instr(payload, '"encrypted"') > 0 AND instr(payload, '"iv"') > 0;
UPDATE timers SET sealed = 1
WHERE status = 'scheduled'
    AND EXISTS (SELECT 1 FROM queues q WHERE q.tenant = timers.tenant AND q.name = timers.queue
        AND json_extract(q.options, '$.encryptionEnabled') = 1)
    AND substr(payload, 1, 1) = '{'
    AND instr(payload, '"authTag"') > 0 AND instr(payload, '"encrypted"') > 0 AND instr(payload, '"iv"') > 0;
