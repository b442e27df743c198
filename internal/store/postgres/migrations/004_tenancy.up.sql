-- Tenancy: every queue belongs to a tenant (a UUID; the default tenant while
-- tenancy is off), and queue names are unique per tenant. Queues created
-- before tenancy belong to the default tenant. Partitions, lanes, groups and
-- messages hang off a queue, so they need no tenant of their own.
ALTER TABLE queues ADD COLUMN tenant text COLLATE "C" NOT NULL
    DEFAULT '00000000-0000-0000-0000-000000000000';
ALTER TABLE queues DROP CONSTRAINT queues_name_key;
ALTER TABLE queues ADD CONSTRAINT queues_tenant_name_key UNIQUE (tenant, name);
DROP INDEX queues_namespace_task;
CREATE INDEX queues_namespace_task ON queues (tenant, namespace, task);
