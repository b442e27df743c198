-- Metrics: the per-minute series behind /api/v1/status and
-- /api/v1/analytics/*. Brokers count operations in memory (never a write on
-- the hot path); each broker's metrics sampler writes its own rows, named by
-- hostname and worker id, every METRICS_AGGREGATE_INTERVAL_S, replacing the
-- rows of a minute it already wrote, and sweeps rows older than
-- METRICS_RETENTION_DAYS in bounded steps. Rows name queues rather than
-- point at them: the history outlives a deleted queue. Minutes are Unix ms
-- of the minute's start.
--
-- Only what happened is written: a queue gets a metrics_queue row for a
-- minute in which it had requests (or parked long polls) at that broker, and
-- a metrics_queue_state row while it holds messages (the deepest queues
-- only, at most QUEEN_METRICS_MAX_QUEUES a minute). Every table is swept by
-- its minute column.

-- What one broker did for one queue in one minute. parked: long polls parked
-- on the queue at that broker, the most seen by the minute's samples.
CREATE TABLE metrics_queue (
    tenant        TEXT NOT NULL,
    queue         TEXT NOT NULL,
    minute        INTEGER NOT NULL,
    hostname      TEXT NOT NULL,
    worker_id     TEXT NOT NULL,
    push_requests INTEGER NOT NULL DEFAULT 0,
    push_messages INTEGER NOT NULL DEFAULT 0,
    pop_requests  INTEGER NOT NULL DEFAULT 0,
    pop_messages  INTEGER NOT NULL DEFAULT 0,
    pop_empty     INTEGER NOT NULL DEFAULT 0,
    ack_requests  INTEGER NOT NULL DEFAULT 0,
    ack_success   INTEGER NOT NULL DEFAULT 0,
    ack_failed    INTEGER NOT NULL DEFAULT 0,
    dlq           INTEGER NOT NULL DEFAULT 0,
    transactions  INTEGER NOT NULL DEFAULT 0,
    lag_count     INTEGER NOT NULL DEFAULT 0,
    lag_sum_ms    INTEGER NOT NULL DEFAULT 0,
    lag_max_ms    INTEGER NOT NULL DEFAULT 0,
    parked        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, minute, queue, hostname, worker_id)
) WITHOUT ROWID;
-- The primary key serves a tenant's window (status, analytics without a
-- queue filter) in the order the series sum it (minute, then queue); this
-- index one queue's window, and the next the sweep.
CREATE INDEX metrics_queue_queue ON metrics_queue (tenant, queue, minute);
CREATE INDEX metrics_queue_minute ON metrics_queue (minute);

-- metrics_queue summed over brokers into 15-minute slots (minute is the
-- slot's start; parked the most in one of its minutes, brokers together),
-- kept up to date by the broker holding the metrics job's lock. Windows
-- longer than 6 hours are read in buckets of 15, 60 or 360 minutes (Queen's
-- rule), which these rows serve: a day of a busy cluster is 96 rows a
-- queue instead of 1440 a queue and broker.
CREATE TABLE metrics_queue_15m (
    tenant        TEXT NOT NULL,
    minute        INTEGER NOT NULL,
    queue         TEXT NOT NULL,
    push_requests INTEGER NOT NULL DEFAULT 0,
    push_messages INTEGER NOT NULL DEFAULT 0,
    pop_requests  INTEGER NOT NULL DEFAULT 0,
    pop_messages  INTEGER NOT NULL DEFAULT 0,
    pop_empty     INTEGER NOT NULL DEFAULT 0,
    ack_requests  INTEGER NOT NULL DEFAULT 0,
    ack_success   INTEGER NOT NULL DEFAULT 0,
    ack_failed    INTEGER NOT NULL DEFAULT 0,
    dlq           INTEGER NOT NULL DEFAULT 0,
    transactions  INTEGER NOT NULL DEFAULT 0,
    lag_count     INTEGER NOT NULL DEFAULT 0,
    lag_sum_ms    INTEGER NOT NULL DEFAULT 0,
    lag_max_ms    INTEGER NOT NULL DEFAULT 0,
    parked        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, minute, queue)
) WITHOUT ROWID;
CREATE INDEX metrics_queue_15m_minute ON metrics_queue_15m (minute);

-- A queue's live figures at one minute, written by one broker of the cluster
-- (the holder of the metrics job's lock).
CREATE TABLE metrics_queue_state (
    tenant      TEXT NOT NULL,
    minute      INTEGER NOT NULL,
    queue       TEXT NOT NULL,
    pending     INTEGER NOT NULL DEFAULT 0,
    processing  INTEGER NOT NULL DEFAULT 0,
    dead_letter INTEGER NOT NULL DEFAULT 0,
    group_lag   INTEGER NOT NULL DEFAULT 0,
    partitions  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, minute, queue)
) WITHOUT ROWID;
CREATE INDEX metrics_queue_state_minute ON metrics_queue_state (minute);

-- What one broker did in one minute, over all queues, and how its process
-- fared: gauges is the JSON of the minute's samples, one
-- {"avg","min","max","last","n"} per gauge (CPU, memory, pool, parked long
-- polls, scheduling delay…), so that adding a gauge needs no migration.
-- db_errors: requests answered 500 or 503.
CREATE TABLE metrics_worker (
    hostname      TEXT NOT NULL,
    worker_id     TEXT NOT NULL,
    minute        INTEGER NOT NULL,
    pid           INTEGER NOT NULL DEFAULT 0,
    port          INTEGER NOT NULL DEFAULT 0,
    push_requests INTEGER NOT NULL DEFAULT 0,
    push_messages INTEGER NOT NULL DEFAULT 0,
    pop_requests  INTEGER NOT NULL DEFAULT 0,
    pop_messages  INTEGER NOT NULL DEFAULT 0,
    pop_empty     INTEGER NOT NULL DEFAULT 0,
    ack_requests  INTEGER NOT NULL DEFAULT 0,
    ack_success   INTEGER NOT NULL DEFAULT 0,
    ack_failed    INTEGER NOT NULL DEFAULT 0,
    dlq           INTEGER NOT NULL DEFAULT 0,
    transactions  INTEGER NOT NULL DEFAULT 0,
    lag_count     INTEGER NOT NULL DEFAULT 0,
    lag_sum_ms    INTEGER NOT NULL DEFAULT 0,
    lag_max_ms    INTEGER NOT NULL DEFAULT 0,
    db_errors     INTEGER NOT NULL DEFAULT 0,
    gauges        TEXT NOT NULL,
    PRIMARY KEY (hostname, worker_id, minute)
) WITHOUT ROWID;
CREATE INDEX metrics_worker_minute ON metrics_worker (minute);
