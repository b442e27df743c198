-- Ready lanes (the PostgreSQL driver's design): every (partition, joined
-- group) pair has a lane row, created when the group first pops the queue
-- (for every partition then) or when a partition is created (for every group
-- that has joined its queue), so "unread lanes" never needs an anti-join of
-- partitions against lanes. Queue mode is recorded as a joined group too.
--
-- ready is 1 when the lane has messages after its cursor. A push sets it on
-- the lanes of the partitions it wrote; a pop or an ack clears it when the
-- cursor reaches the partition's last offset (the single writer makes both
-- exact). The partial index lanes_ready holds only lanes worth visiting,
-- least recently claimed first, so a pop finds its candidates with a short
-- index range scan however many partitions and however much acked history
-- the queue has; live leases (claimed recently) sit at the end of the range.
ALTER TABLE lanes ADD COLUMN queue_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lanes ADD COLUMN ready INTEGER NOT NULL DEFAULT 0;

UPDATE lanes SET queue_id = COALESCE((SELECT p.queue_id FROM partitions p WHERE p.id = lanes.partition_id), 0);

-- Queue mode was never recorded: a queue with a queue-mode lane was popped
-- in queue mode, so that mode has joined it (from the beginning).
INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at)
SELECT DISTINCT l.queue_id, l.consumer_group, 0, COALESCE((SELECT q.created_at FROM queues q WHERE q.id = l.queue_id), 0)
FROM lanes l
WHERE l.consumer_group = '__QUEUE_MODE__' AND l.queue_id <> 0
ON CONFLICT DO NOTHING;

-- The lanes the old schema left implicit: a joined group read a partition it
-- had no row for from its subscription time (partitions created after the
-- join hold only later messages; they read from their beginning).
INSERT INTO lanes (partition_id, consumer_group, queue_id, cursor)
SELECT p.id, g.consumer_group, p.queue_id,
    CASE
        WHEN g.subscribed_from = 0 OR p.created_at > g.created_at THEN 0
        WHEN p.last_message_at <= g.subscribed_from THEN p.last_offset
        ELSE COALESCE((SELECT max(m.seq) FROM messages m
            WHERE m.partition_id = p.id AND m.created_at <= g.subscribed_from), 0)
    END
FROM consumer_groups g JOIN partitions p ON p.queue_id = g.queue_id
WHERE true
ON CONFLICT (partition_id, consumer_group) DO NOTHING;

UPDATE lanes SET ready = 1
WHERE cursor < (SELECT p.last_offset FROM partitions p WHERE p.id = lanes.partition_id);

CREATE INDEX lanes_ready ON lanes (queue_id, consumer_group, last_claimed_at) WHERE ready;
