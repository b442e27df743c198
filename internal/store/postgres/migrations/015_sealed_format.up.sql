-- How a message's payload is sealed (encryption at rest, store.Seal): 0 the
-- client's payload as given, never opened whatever its shape; 1 Queen's
-- seal, which binds nothing (imported rows); 2 sealed by this broker, bound
-- to the tenant and the queue. The broker opens a payload by this column,
-- never by its shape, so a sealed blob pushed by a client stays opaque.
-- A timer keeps the seal of the message it will push. A constant default
-- adds the column without rewriting the table.
ALTER TABLE messages ADD COLUMN sealed smallint NOT NULL DEFAULT 0;
ALTER TABLE timers ADD COLUMN sealed smallint NOT NULL DEFAULT 0;

-- Rows written before this column, by builds that sealed without binding
-- and opened by shape: on a queue that encrypts, a payload of the sealed
-- shape was sealed by the broker (a client's blob that its keys did not
-- open was sealed again), so it is marked as an unbound seal and stays
-- readable. Elsewhere the shape proves nothing and the row stays 0. (Payloads
-- are stored compacted: an object's first byte is its brace.)
UPDATE messages m SET sealed = 1
FROM partitions p JOIN queues q ON q.id = p.queue_id
WHERE m.partition_id = p.id AND (q.options ->> 'encryptionEnabled')::boolean IS TRUE
    AND position(convert_to('"authTag"', 'UTF8') IN m.payload) > 0
    AND position(convert_to('"encrypted"', 'UTF8') IN m.payload) > 0
    AND position(convert_to('"iv"', 'UTF8') IN m.payload) > 0
    AND substring(m.payload FROM 1 FOR 1) = '\x7b'::bytea;
UPDATE timers t SET sealed = 1
FROM queues q
WHERE t.status = 'scheduled' AND q.tenant = t.tenant AND q.name = t.queue
    AND (q.options ->> 'encryptionEnabled')::boolean IS TRUE
    AND position(convert_to('"authTag"', 'UTF8') IN t.payload) > 0
    AND position(convert_to('"encrypted"', 'UTF8') IN t.payload) > 0
    AND position(convert_to('"iv"', 'UTF8') IN t.payload) > 0
    AND substring(t.payload FROM 1 FOR 1) = '\x7b'::bytea;
