package transfer

// Statements reading a Queen database; %s is the quoted schema. Each reads
// only the columns an import needs, in Queen's order, and pages by keyset.
const (
	sqlQueenTables = `SELECT count(*) FROM information_schema.tables
WHERE table_schema = $1 AND table_name = ANY($2::text[])`

	sqlQueenQueues = `SELECT id::text, name, namespace, task, coalesce(priority, 0), coalesce(lease_time, 300),
	coalesce(retry_limit, 3), coalesce(retry_delay, 1000), coalesce(ttl, 3600), coalesce(dead_letter_queue, false),
	coalesce(dlq_after_max_retries, false), coalesce(delayed_processing, 0), coalesce(window_buffer, 0),
	coalesce(retention_seconds, 0), coalesce(completed_retention_seconds, 0), coalesce(retention_enabled, false),
	coalesce(encryption_enabled, false), coalesce(max_wait_time_seconds, 0), coalesce(max_queue_size, 0), created_at
FROM %s.queues ORDER BY name`

	sqlQueenPartitions = `SELECT id::text, queue_id::text, name, created_at
FROM %s.partitions WHERE queue_id = $1::uuid ORDER BY name`

	sqlQueenMessagesFirst = `SELECT id::text, partition_id::text, transaction_id, trace_id::text, payload::text, created_at,
	coalesce(is_encrypted, false), producer_sub
FROM %s.messages WHERE partition_id = $1::uuid ORDER BY created_at, id LIMIT $2`

	sqlQueenMessagesAfter = `SELECT id::text, partition_id::text, transaction_id, trace_id::text, payload::text, created_at,
	coalesce(is_encrypted, false), producer_sub
FROM %s.messages WHERE partition_id = $1::uuid AND (created_at, id) > ($2, $3::uuid)
ORDER BY created_at, id LIMIT $4`

	sqlQueenPositions = `SELECT pc.partition_id::text, pc.consumer_group, coalesce(pc.last_consumed_id::text, ''),
	pc.last_consumed_created_at, pc.lease_expires_at
FROM %[1]s.partition_consumers pc JOIN %[1]s.partitions p ON p.id = pc.partition_id
WHERE p.queue_id = $1::uuid ORDER BY p.name, pc.consumer_group`

	sqlQueenSubscriptions = `SELECT consumer_group, queue_name, subscription_mode, subscription_timestamp
FROM %s.consumer_groups_metadata ORDER BY consumer_group, queue_name, created_at`

	sqlQueenDeadLetters = `SELECT d.id::text, d.partition_id::text, d.consumer_group, d.error_message, d.retry_count, d.failed_at,
	m.id::text, m.transaction_id, m.trace_id::text, m.payload::text, m.created_at, coalesce(m.is_encrypted, false), m.producer_sub
FROM %[1]s.dead_letter_queue d
JOIN %[1]s.partitions p ON p.id = d.partition_id
JOIN %[1]s.messages m ON m.id = d.message_id
WHERE p.queue_id = $1::uuid AND (d.failed_at, d.id) > ($2, $3::uuid)
ORDER BY d.failed_at, d.id LIMIT $4`

	sqlQueenCounts = `SELECT (SELECT count(*) FROM %[1]s.queues), (SELECT count(*) FROM %[1]s.partitions),
	(SELECT count(*) FROM %[1]s.messages), (SELECT count(*) FROM %[1]s.dead_letter_queue),
	(SELECT count(*) FROM %[1]s.partition_consumers)`
)
