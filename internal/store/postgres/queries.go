package postgres

// The driver's SQL, one constant per statement, named after what it does.
// Statements take whole batches as arrays (unnest), so that the number of
// round trips of an operation does not depend on its size.

// The join lock is the first key of the advisory locks that order "a group
// joins a queue" against "a push creates a partition of that queue": the
// join takes it exclusively, partition creation shares it, so every
// (partition, group) pair gets its lane row from one side or the other.
// The class is 20805 (0x5145, "QE"), written literally in the statements.

// Queues and partitions.
const (
	// Queues created by a push get default options; ON CONFLICT waits for a
	// concurrent creator, and sqlQueuesByName (a later statement, so a later
	// snapshot) then sees its row.
	sqlQueuesInsert = `INSERT INTO queues (uuid, tenant, name, namespace, task, priority, options, created_at)
		SELECT u.uuid, u.tenant, u.name, u.namespace, u.task, 0, $6::jsonb, u.at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $7::bigint[])
			AS u(uuid, tenant, name, namespace, task, at)
		ORDER BY u.tenant, u.name
		ON CONFLICT (tenant, name) DO NOTHING`
	sqlQueuesByName = `SELECT q.id, q.uuid, q.tenant, q.name
		FROM queues q JOIN unnest($1::text[], $2::text[]) AS u(tenant, name)
			ON q.tenant = u.tenant AND q.name = u.name`

	sqlQueueUpsert = `INSERT INTO queues (uuid, tenant, name, namespace, task, priority, options, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant, name) DO UPDATE SET namespace = excluded.namespace, task = excluded.task,
			priority = excluded.priority, options = excluded.options
		RETURNING id, uuid`
	sqlQueueByName    = `SELECT id, uuid FROM queues WHERE tenant = $1 AND name = $2`
	sqlQueuesMatching = `SELECT name, id FROM queues
		WHERE tenant = $1 AND ($2 = '' OR namespace = $2) AND ($3 = '' OR task = $3)
		ORDER BY priority DESC, name`
	sqlQueueLockByName = `SELECT id FROM queues WHERE tenant = $1 AND name = $2 FOR UPDATE`

	sqlPartitionsInsert = `INSERT INTO partitions (uuid, queue_id, name, created_at)
		SELECT u.uuid, u.queue_id, u.name, u.at
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS u(uuid, queue_id, name, at)
		ORDER BY u.queue_id, u.name
		ON CONFLICT (queue_id, name) DO NOTHING
		RETURNING id`
	sqlPartitionsByName = `SELECT p.id, p.uuid, p.queue_id, p.name
		FROM partitions p JOIN unnest($1::bigint[], $2::text[]) AS u(queue_id, name)
			ON p.queue_id = u.queue_id AND p.name = u.name`
	// New partitions get a lane for every group that has joined their queue,
	// under the shared join lock (see the top of this file).
	sqlJoinLockShared = `SELECT pg_advisory_xact_lock_shared(20805, (q % 2147483647)::int)
		FROM (SELECT DISTINCT unnest($1::bigint[]) AS q ORDER BY 1) x`
	sqlLanesForNewPartitions = `INSERT INTO lanes (partition_id, consumer_group, queue_id)
		SELECT p.id, g.consumer_group, p.queue_id
		FROM partitions p JOIN consumer_groups g ON g.queue_id = p.queue_id
		WHERE p.id = ANY($1::bigint[])
		ORDER BY 1, 2
		ON CONFLICT DO NOTHING`
)

// Push.
const (
	// Row locks on the partitions a push writes, in id order so that
	// concurrent pushes cannot deadlock. Holding them, the statements that
	// follow see every committed message of those partitions and no other
	// push can commit to them: the dedup check is exact and offsets are
	// allocated without gaps.
	sqlPartitionsLock = `SELECT id FROM partitions WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE`
	// maxSize: the queues of a push that have a cap are locked (advisory,
	// class 20806, in id order, after the partitions) so that two pushes to
	// different partitions of one capped queue count its unconsumed
	// messages one after the other. Queues without a cap cost a primary-key
	// read and take no lock.
	// It answers the ids of the capped queues.
	sqlQueuesCapLock = `SELECT id, pg_advisory_xact_lock(20806, (id % 2147483647)::int) FROM (
			SELECT id FROM queues WHERE id = ANY($1::bigint[]) AND COALESCE((options->>'maxSize')::bigint, 0) > 0
			ORDER BY id) x`
	// Insert a batch of messages (free of duplicates among themselves) in
	// one statement: find the transactionIds already stored, refuse what
	// does not fit in a capped queue, allocate one offset per new message
	// from each partition's counter, insert at base + rank, and return the
	// stored id of each duplicate and the cap of each refused item by
	// position. A queue's unconsumed messages are, per partition, those
	// after the slowest lane's cursor (after the floor when no group has
	// joined it): offsets have no gaps above the floor but those of messages
	// deleted on their own (message_gaps, looked at only for a partition
	// that has some), so that is last_offset minus that position, less those
	// gaps, summed over the queue's partitions.
	sqlMessagesInsertCapped = sqlPushRows + `, cap AS MATERIALIZED (
			SELECT q.id, (q.options->>'maxSize')::bigint AS max_size,
				(q.options->>'maxSize')::bigint - COALESCE((SELECT sum(p.last_offset - x.pos - CASE WHEN p.gaps = 0
						THEN 0 ELSE (SELECT count(*) FROM message_gaps g WHERE g.partition_id = p.id AND g.seq > x.pos) END)
					FROM partitions p CROSS JOIN LATERAL (SELECT COALESCE(
						(SELECT min(l.cursor) FROM lanes l WHERE l.partition_id = p.id), p.floor_offset) AS pos) x
					WHERE p.queue_id = q.id), 0) AS room
			FROM queues q
			WHERE q.id IN (SELECT DISTINCT queue_id FROM u) AND COALESCE((q.options->>'maxSize')::bigint, 0) > 0
		), over AS (
			SELECT f.idx, c.max_size FROM (
				SELECT u.idx, u.queue_id, row_number() OVER (PARTITION BY u.queue_id ORDER BY u.idx) AS qord
				FROM u WHERE u.queue_id IN (SELECT id FROM cap) AND u.idx NOT IN (SELECT idx FROM dup)) f
			JOIN cap c ON c.id = f.queue_id
			WHERE f.qord > c.room
		), fresh AS (
			SELECT u.*, row_number() OVER (PARTITION BY u.partition_id ORDER BY u.idx) AS ord
			FROM u WHERE u.idx NOT IN (SELECT idx FROM dup) AND u.idx NOT IN (SELECT idx FROM over)
		)` + sqlPushWrite + `
		SELECT idx, id, 0::bigint FROM dup
		UNION ALL SELECT idx, '', max_size FROM over`
	// The same insert for queues without a cap, the usual case: it costs
	// half the planning of the one above (planned afresh for every push,
	// see plan_cache_mode). It reads the queues' options in its own snapshot
	// as that one does, and when one of them has a cap after all (set since
	// this broker last looked) it writes nothing and answers a single row
	// of index 0: the push then runs the statement above.
	sqlMessagesInsert = sqlPushRows + `, capped AS MATERIALIZED (
			SELECT EXISTS (SELECT 1 FROM queues q WHERE q.id = ANY($8::bigint[])
				AND COALESCE((q.options->>'maxSize')::bigint, 0) > 0) AS yes
		), fresh AS (
			SELECT u.*, row_number() OVER (PARTITION BY u.partition_id ORDER BY u.idx) AS ord
			FROM u WHERE NOT (SELECT yes FROM capped) AND u.idx NOT IN (SELECT idx FROM dup)
		)` + sqlPushWrite + `
		SELECT idx, id, 0::bigint FROM dup WHERE NOT (SELECT yes FROM capped)
		UNION ALL SELECT 0, '', 0 FROM capped WHERE yes`
	// The rows of a push (by position: idx) and the ones whose
	// transactionId is stored already.
	sqlPushRows = `WITH u AS (
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
				$7::bigint[], $8::bigint[], $9::bool[], $10::smallint[]) WITH ORDINALITY
				AS u(partition_id, transaction_id, id, trace_id, producer_sub, payload, created_at, queue_id, probe,
					sealed, idx)
		), dup AS (
			-- One probe of messages_partition_txn per item, as a scalar
			-- subquery: as a join, stale statistics made the planner scan
			-- messages whole (or a partition by primary key) per push. A
			-- transactionId the broker minted cannot be stored already: no
			-- probe (about a sixth of the database's work on a push).
			SELECT idx, id FROM (SELECT u.idx, CASE WHEN u.probe THEN (SELECT m.id FROM messages m
				WHERE m.partition_id = u.partition_id AND m.transaction_id = u.transaction_id) END AS id FROM u) x
			WHERE id IS NOT NULL
		)`
	// Offsets for the fresh rows from their partitions' counters, and the
	// insert.
	sqlPushWrite = `, c AS (
			SELECT partition_id, count(*) AS n, max(created_at) AS at FROM fresh GROUP BY partition_id
		), a AS (
			UPDATE partitions p SET last_offset = p.last_offset + c.n,
				last_message_at = greatest(p.last_message_at, c.at)
			FROM c WHERE p.id = c.partition_id
			RETURNING p.id, p.last_offset - c.n AS base
		), ins AS (
			INSERT INTO messages (partition_id, seq, id, transaction_id, trace_id, producer_sub, payload, created_at,
				sealed)
			SELECT f.partition_id, a.base + f.ord, f.id, f.transaction_id, NULLIF(f.trace_id, ''),
				NULLIF(f.producer_sub, ''), f.payload, f.created_at, f.sealed
			FROM fresh f JOIN a ON a.id = f.partition_id
		)`
	// Mark ready the lanes of written partitions that now have unread
	// messages. Only lanes not ready yet are touched (usually none), locked
	// in key order. Every table is narrowed to the partitions by primary
	// key, not only through the join: stale statistics had the planner hash
	// the join against a scan of all lanes, or of all partitions.
	sqlLanesMarkReady = `UPDATE lanes l SET ready = true
		FROM (SELECT r.partition_id, r.consumer_group FROM lanes r JOIN partitions p ON p.id = r.partition_id
			WHERE r.partition_id = ANY($1::bigint[]) AND p.id = ANY($1::bigint[])
			  AND NOT r.ready AND r.cursor < p.last_offset
			ORDER BY 1, 2 FOR UPDATE OF r) r
		WHERE l.partition_id = ANY($1::bigint[])
		  AND l.partition_id = r.partition_id AND l.consumer_group = r.consumer_group`
	sqlNotify = `SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n`
)

// Pop.
const (
	// A group's first pop from a queue: record it and create its lanes for
	// every existing partition, seeding cursors from the subscription time
	// ($3, 0 = from the beginning), never before the partition's floor (what
	// retention deleted or eviction evicted). The partitions rows are share-locked so
	// that no push is in flight on them: last_offset is exact and ready is
	// right.
	sqlJoinLock  = `SELECT pg_advisory_xact_lock(20805, ($1::bigint % 2147483647)::int)`
	sqlJoinGroup = `INSERT INTO consumer_groups (queue_id, consumer_group, subscribed_from, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`
	sqlJoinLanes = `INSERT INTO lanes (partition_id, consumer_group, queue_id, cursor, ready)
		SELECT p.id, $2, p.queue_id, s.cursor, p.last_offset > s.cursor
		FROM (SELECT id, queue_id, last_offset, last_message_at, floor_offset FROM partitions
			WHERE queue_id = $1 ORDER BY id FOR SHARE) p
		CROSS JOIN LATERAL (SELECT greatest(p.floor_offset, CASE
			WHEN $3::bigint = 0 THEN 0
			WHEN p.last_message_at <= $3 THEN p.last_offset
			ELSE COALESCE((SELECT m.seq FROM messages m WHERE m.partition_id = p.id AND m.created_at <= $3
				ORDER BY m.seq DESC LIMIT 1), 0)
			END) AS cursor) s
		ON CONFLICT DO NOTHING`

	// A pop's claim and read, in one statement: the queue's options and
	// whether the group has joined it (read fresh, since another broker may
	// reconfigure it; no row when the queue is gone), the candidate lanes
	// locked for this pop, and up to $6 messages after each one's cursor,
	// visible or not (the first is the head a stale lease is charged to).
	// One row per message, or per candidate without messages, or one row
	// without candidate (partition_id 0) when there are none.
	//
	// Candidate lanes of a queue ($1) for a group ($2): ready, not under a
	// live lease ($3 = now), outside the window buffer, not tried yet ($4),
	// least recently claimed first, skipping lanes another transaction holds
	// and lanes a retry delay holds back (retry_at); none before the group
	// has joined. Served by the partial index lanes_ready. On a queue with
	// delayedProcessing the head message (the first after the cursor:
	// usually cursor + 1, but a message deleted by the control plane or by
	// retention leaves a gap) must be due, so that lanes holding only
	// delayed messages do not crowd out due ones; a scalar subquery, because
	// the planner would turn EXISTS into a hashed scan of all messages.
	sqlPopClaim = sqlPopQueue + `, c AS MATERIALIZED (
			SELECT l.partition_id, p.uuid, p.name, p.last_offset, l.cursor, l.lease_id, l.lease_expires_at,
				l.batch_end, l.head_attempts, l.last_claimed_at, l.retry_at
			FROM lanes l JOIN partitions p ON p.id = l.partition_id
			WHERE l.queue_id = $1 AND l.consumer_group = $2 AND l.ready AND (SELECT joined FROM q)
			  AND (l.lease_id IS NULL OR l.lease_expires_at <= $3) AND l.retry_at <= $3
			  AND p.last_message_at <= $3 - (SELECT window_buffer FROM q) * 1000
			  AND l.partition_id <> ALL($4::bigint[])
			  AND ((SELECT delayed FROM q) = 0 OR (SELECT m.created_at FROM messages m
				WHERE m.partition_id = l.partition_id AND m.seq > l.cursor ORDER BY m.seq LIMIT 1)
				<= $3 - (SELECT delayed FROM q) * 1000)
			ORDER BY l.last_claimed_at
			LIMIT $5
			FOR UPDATE OF l SKIP LOCKED
		)` + sqlPopRead + `LIMIT $6` + sqlPopOrder
	// The same for one named partition ($4).
	sqlPopClaimPinned = sqlPopQueue + `, c AS MATERIALIZED (
			SELECT l.partition_id, p.uuid, p.name, p.last_offset, l.cursor, l.lease_id, l.lease_expires_at,
				l.batch_end, l.head_attempts, l.last_claimed_at, l.retry_at
			FROM partitions p JOIN lanes l ON l.partition_id = p.id AND l.consumer_group = $2
			WHERE p.queue_id = $1 AND p.name = $4 AND l.ready AND (SELECT joined FROM q)
			  AND (l.lease_id IS NULL OR l.lease_expires_at <= $3) AND l.retry_at <= $3
			  AND p.last_message_at <= $3 - (SELECT window_buffer FROM q) * 1000
			FOR UPDATE OF l SKIP LOCKED
		)` + sqlPopRead + `LIMIT $5` + sqlPopOrder

	// When the first lane of a queue (tenant $1, name $2) for a group ($3;
	// only partition $4 when not '') that has unread messages may be
	// claimed, in Unix milliseconds (0: none waits for a deadline): per lane
	// the latest of the lease's expiry, the retry delay, the window buffer's
	// end and the delayed head's due time, then the earliest over the lanes.
	sqlLaneNextReady = `WITH q AS (
			SELECT id, COALESCE((options->>'windowBuffer')::bigint, 0) AS window_buffer,
				COALESCE((options->>'delayedProcessing')::bigint, 0) AS delayed
			FROM queues WHERE tenant = $1 AND name = $2
		)
		SELECT COALESCE(min(greatest(
			CASE WHEN l.lease_id IS NULL THEN 0 ELSE l.lease_expires_at END,
			l.retry_at,
			p.last_message_at + q.window_buffer * 1000,
			CASE WHEN q.delayed = 0 THEN 0 ELSE COALESCE((SELECT m.created_at FROM messages m
				WHERE m.partition_id = l.partition_id AND m.seq > l.cursor ORDER BY m.seq LIMIT 1), 0)
				+ q.delayed * 1000 END)), 0)::bigint
		FROM q CROSS JOIN lanes l JOIN partitions p ON p.id = l.partition_id
		WHERE l.queue_id = q.id AND l.consumer_group = $3 AND l.ready AND l.cursor < p.last_offset
		  AND ($4::text = '' OR p.name = $4)`

	sqlPopQueue = `WITH q AS MATERIALIZED (
			SELECT COALESCE((q.options->>'windowBuffer')::bigint, 0) AS window_buffer,
				COALESCE((q.options->>'delayedProcessing')::bigint, 0) AS delayed,
				COALESCE((q.options->>'retryLimit')::bigint, 0) AS retry_limit,
				COALESCE((q.options->>'leaseTime')::bigint, 0) AS lease_time,
				COALESCE((q.options->>'maxWaitTimeSeconds')::bigint, 0) AS max_wait,
				EXISTS (SELECT 1 FROM consumer_groups g WHERE g.queue_id = q.id AND g.consumer_group = $2) AS joined
			FROM queues q WHERE q.id = $1
		)`
	sqlPopRead = `
		SELECT q.window_buffer, q.delayed, q.retry_limit, q.lease_time, q.max_wait, q.joined,
			COALESCE(c.partition_id, 0), COALESCE(c.uuid, ''), COALESCE(c.name, ''), COALESCE(c.last_offset, 0),
			COALESCE(c.cursor, 0), COALESCE(c.lease_id, ''), COALESCE(c.lease_expires_at, 0),
			COALESCE(c.batch_end, 0), COALESCE(c.head_attempts, 0), COALESCE(c.retry_at, 0),
			COALESCE(m.seq, 0), COALESCE(m.id, ''), COALESCE(m.transaction_id, ''), COALESCE(m.trace_id, ''),
			COALESCE(m.producer_sub, ''), COALESCE(m.payload, ''::bytea), COALESCE(m.created_at, 0),
			COALESCE(m.sealed, 0)
		FROM q LEFT JOIN c ON true
		LEFT JOIN LATERAL (SELECT * FROM messages WHERE partition_id = c.partition_id AND seq > c.cursor
			ORDER BY seq `
	sqlPopOrder = `) m ON true
		ORDER BY c.last_claimed_at, c.partition_id, m.seq`
	// A locked lane's messages after an offset, offsets and created times
	// only, and then whole, read when every message the claim read had
	// waited longer than maxWaitTimeSeconds (pop.go, evictExpired).
	sqlPopExpiredAfter = `SELECT seq, created_at FROM messages WHERE partition_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3`
	sqlPopReadMore = `SELECT seq, id, transaction_id, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), payload,
			created_at, sealed
		FROM messages WHERE partition_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`
)

// Lane writes shared by pop and ack.
const (
	sqlLanesSave = `UPDATE lanes l SET cursor = u.cursor, lease_id = NULLIF(u.lease_id, ''),
			lease_expires_at = u.lease_expires_at, batch_end = u.batch_end, head_attempts = u.head_attempts,
			last_claimed_at = greatest(l.last_claimed_at, u.claimed_at), retry_at = u.retry_at
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::int[],
			$8::bigint[], $9::bigint[]) AS u(partition_id, consumer_group, cursor, lease_id, lease_expires_at,
			batch_end, head_attempts, claimed_at, retry_at)
		WHERE l.partition_id = u.partition_id AND l.consumer_group = u.consumer_group`
	// Clear ready on lanes whose cursor reached the partition's last offset.
	// A push in flight on the partition holds its row lock: SKIP LOCKED then
	// leaves the lane ready (a wasted visit later, never a lost message).
	// Holding the share lock, no push can commit before this transaction
	// does, so a push that follows sees ready = false and sets it again.
	sqlLanesSettle = `UPDATE lanes l SET ready = false
		FROM unnest($1::bigint[], $2::text[]) AS t(partition_id, consumer_group),
		LATERAL (SELECT last_offset FROM partitions p WHERE p.id = t.partition_id FOR SHARE SKIP LOCKED) p
		WHERE l.partition_id = t.partition_id AND l.consumer_group = t.consumer_group
		  AND l.ready AND l.cursor >= p.last_offset`
	sqlDeadLettersInsert = `INSERT INTO dead_letters
			(partition_id, message_seq, consumer_group, error, retry_count, failed_at)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::bigint[])`
)

// Ack, lease extension, transactions.
const (
	// Resolve each (partitionId, transactionId) to its partition, queue and
	// offset (0 when the message is unknown); unknown partitions are absent.
	// The offset is a scalar subquery, one probe of messages_partition_txn
	// per ack: as a join, a fresh table's statistics led the planner to walk
	// the whole partition by primary key for every ack (seen: 250 acks
	// discarding 311,250 rows).
	sqlAckResolve = `SELECT a.ord, p.id, p.queue_id, p.last_offset, q.name, q.options,
			COALESCE((SELECT m.seq FROM messages m
				WHERE m.partition_id = p.id AND m.transaction_id = a.transaction_id), 0)
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS a(partition_uuid, transaction_id, ord)
		JOIN partitions p ON p.uuid = a.partition_uuid
		JOIN queues q ON q.id = p.queue_id AND q.tenant = $3`
	// Lock the lanes an ack batch touches, in key order (no deadlocks
	// between concurrent ack batches).
	sqlLanesLock = `SELECT l.partition_id, l.consumer_group, l.cursor, COALESCE(l.lease_id, ''),
			l.lease_expires_at, l.batch_end, l.head_attempts, l.retry_at
		FROM lanes l
		WHERE (l.partition_id, l.consumer_group) IN
			(SELECT p.id, a.consumer_group
			FROM unnest($1::text[], $2::text[]) AS a(partition_uuid, consumer_group)
			JOIN partitions p ON p.uuid = a.partition_uuid
			JOIN queues q ON q.id = p.queue_id AND q.tenant = $3)
		ORDER BY l.partition_id, l.consumer_group
		FOR UPDATE OF l`
	// Lanes acked by a group that never popped the queue. They start ready:
	// whether they have unread messages is settled by the first pop.
	sqlLanesCreate = `INSERT INTO lanes (partition_id, consumer_group, queue_id, ready)
		SELECT * , true FROM unnest($1::bigint[], $2::text[], $3::bigint[])
		ORDER BY 1, 2
		ON CONFLICT DO NOTHING`

	sqlLeaseExtend = `UPDATE lanes l SET lease_expires_at = greatest(l.lease_expires_at, $1)
		FROM (SELECT partition_id, consumer_group FROM lanes
			WHERE lease_id = $2 AND lease_expires_at > $3
			  AND queue_id IN (SELECT id FROM queues WHERE tenant = $4)
			ORDER BY 1, 2 FOR UPDATE) x
		WHERE l.partition_id = x.partition_id AND l.consumer_group = x.consumer_group
		RETURNING l.lease_expires_at`
	sqlLeasesLive = `SELECT DISTINCT lease_id FROM (
			SELECT lease_id FROM lanes WHERE lease_id = ANY($1::text[]) AND lease_expires_at > $2
			  AND queue_id IN (SELECT id FROM queues WHERE tenant = $3)
			ORDER BY partition_id, consumer_group FOR UPDATE) x`
)

// Deleting a queue: first its partitions (sqlPartitionsDelete, which waits
// for pushes in flight on them), listed for QueuePurge with their ids ($1)
// at $2; then its groups and the queue row ($1 = its id). Messages, lanes
// and dead letters of the partitions are freed later by QueuePurge in
// bounded steps; nothing reaches them meanwhile (every lookup goes through a
// partition or queue row, and ids are never reused).
const (
	sqlPartitionsDelete = `DELETE FROM partitions WHERE queue_id = $1 RETURNING id`
	sqlPurgeList        = `INSERT INTO purge_partitions (partition_id, queued_at)
		SELECT unnest($1::bigint[]), $2 ON CONFLICT DO NOTHING`
	sqlQueueDeleteGroups = `DELETE FROM consumer_groups WHERE queue_id = $1`
	sqlQueueDeleteRow    = `DELETE FROM queues WHERE id = $1`
)

// Purging deleted queues: a few listed partitions at a time (skipping those
// another broker's purge holds), each statement bounded by $2 rows.
const (
	sqlPurgeNext = `SELECT partition_id FROM purge_partitions ORDER BY partition_id LIMIT 16
		FOR UPDATE SKIP LOCKED`
	sqlPurgeMessages = `DELETE FROM messages WHERE partition_id = $1 AND seq IN
		(SELECT seq FROM messages WHERE partition_id = $1 ORDER BY seq LIMIT $2)`
	sqlPurgeDeadLetters = `DELETE FROM dead_letters WHERE id IN
		(SELECT id FROM dead_letters WHERE partition_id = $1 LIMIT $2)`
	// A partition has a lane per group that joined its queue: few rows.
	sqlPurgeLanes = `DELETE FROM lanes WHERE partition_id = $1`
	// And at most one gap per message deleted on its own.
	sqlPurgeGaps = `DELETE FROM message_gaps WHERE partition_id = $1`
	sqlPurgeDone = `DELETE FROM purge_partitions WHERE partition_id = $1`
	sqlPurgeMore = `SELECT EXISTS (SELECT 1 FROM purge_partitions)`
)
