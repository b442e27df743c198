-- Tenancy: every queue belongs to a tenant (a UUID; the default tenant while
-- tenancy is off), and queue names are unique per tenant. Queues created
-- before tenancy belong to the default tenant. Partitions, lanes, groups and
-- messages hang off a queue, so they need no tenant of their own.
--
-- SQLite cannot drop the UNIQUE constraint on name in place: the table is
-- rebuilt with the same ids (foreign keys are off; other tables refer to
-- queues by id).
CREATE TABLE queues_tenancy (
    id         INTEGER PRIMARY KEY,
    uuid       TEXT    NOT NULL UNIQUE,
    tenant     TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    namespace  TEXT    NOT NULL DEFAULT '',
    task       TEXT    NOT NULL DEFAULT '',
    priority   INTEGER NOT NULL DEFAULT 0,
    options    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (tenant, name)
);
INSERT INTO queues_tenancy (id, uuid, tenant, name, namespace, task, priority, options, created_at)
SELECT id, uuid, '00000000-0000-0000-0000-000000000000', name, namespace, task, priority, options, created_at
FROM queues;
DROP TABLE queues;
ALTER TABLE queues_tenancy RENAME TO queues;
CREATE INDEX queues_namespace_task ON queues (tenant, namespace, task);
