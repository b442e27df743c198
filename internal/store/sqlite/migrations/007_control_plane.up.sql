-- The control plane's dead letters and traces.
--
-- Messages get no index here: GET /api/v1/messages merges the partitions'
-- primary-key ranges, newest first, in the order of partitions.last_message_at
-- (see package listing), so pushes pay nothing for it.

-- Dead letters by message, for a message's status, a requeue, and the purge
-- of a deleted partition (the old index on partition_id alone is its prefix),
-- and by failure time for GET /api/v1/dlq (newest failure first). Dead
-- letters are written only when retries run out: these cost the hot path
-- nothing.
DROP INDEX dead_letters_partition;
CREATE INDEX dead_letters_message ON dead_letters (partition_id, message_seq);
CREATE INDEX dead_letters_failed ON dead_letters (failed_at);

-- Traces: events a consumer attaches to a message, keyed by the message's
-- partition and transactionId (the message row may be requeued, deleted or
-- purged; the trace goes with it). data is the raw JSON sent; worker_id is
-- NULL unless the client named one.
CREATE TABLE traces (
    id             INTEGER PRIMARY KEY,
    uuid           TEXT    NOT NULL UNIQUE,
    partition_id   INTEGER NOT NULL,
    transaction_id TEXT    NOT NULL,
    consumer_group TEXT    NOT NULL,
    event_type     TEXT    NOT NULL,
    data           BLOB    NOT NULL,
    worker_id      TEXT,
    created_at     INTEGER NOT NULL
);
-- A message's traces in order; its prefix serves the purge of a partition.
CREATE INDEX traces_message ON traces (partition_id, transaction_id, created_at);

-- The names a trace was recorded under, with the tenant and the message
-- copied from the trace so that a name's traces are one index range.
CREATE TABLE trace_names (
    trace_id       INTEGER NOT NULL,
    tenant         TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    partition_id   INTEGER NOT NULL,
    transaction_id TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (trace_id, name)
) WITHOUT ROWID;
-- GET /api/v1/traces/by-name/{name}: oldest first, one range per name.
CREATE INDEX trace_names_by_name ON trace_names (tenant, name, created_at, trace_id);
-- Whether a name already traces a message (message_count).
CREATE INDEX trace_names_message ON trace_names (tenant, name, partition_id, transaction_id);

-- One row per trace name: counts kept up to date by every write, so that
-- GET /api/v1/traces/names reads a page of names, never the traces.
-- last_seen is the last time a trace was recorded under the name.
CREATE TABLE trace_name_stats (
    tenant        TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    trace_count   INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;
CREATE INDEX trace_name_stats_recent ON trace_name_stats (tenant, last_seen, name);

-- How many trace names a tenant has (the names listing's total).
CREATE TABLE trace_totals (
    tenant TEXT    PRIMARY KEY,
    names  INTEGER NOT NULL
) WITHOUT ROWID;
