package api

// Texts clients read: the messages of answers and the reasons of per-item
// verdicts, as Queen words them (its clients compare some of them).
const (
	// TextMessageNotFound answers a control-plane route naming a message
	// that does not exist, and is the reason of a requeue or a cycle ack
	// whose message is not there.
	TextMessageNotFound = "Message not found"
	// TextMessageDeleted is the message of a message deletion that deleted
	// one.
	TextMessageDeleted = "Message deleted successfully"

	// The 404 texts of the entities a request may name.
	TextQueueNotFound     = "Queue not found"
	TextPartitionNotFound = "Partition not found"
	TextGroupNotFound     = "Consumer group not found"
	TextTimerNotFound     = "Timer not found"
	TextEphemeralNotFound = "Ephemeral queue not found"
	TextQueryNotFound     = "Query not found"
	TextKeyNotFound       = "key not found"

	// The 409 texts of states that forbid a request.
	TextTimerFired          = "timer already fired"
	TextEphemeralExists     = "ephemeral queue already exists"
	TextNotDeadLettered     = "message is not in the dead letter queue"
	TextAlreadyDeadLettered = "message is already in the dead letter queue"

	// The 403 texts of the features configuration turns off.
	TextKVDisabled        = "kv disabled for tenant"
	TextTimersDisabled    = "timers disabled"
	TextEphemeralDisabled = "ephemeral queues disabled"
)

// Reasons of per-item failures inside a 2xx answer.
const (
	// The reasons of an ack verdict that did not commit (AckVerdict.Error):
	// a lease that is not held, a message acknowledged already, an
	// acknowledgement cancelled by a negative ack at a lower offset in the
	// same call, and a transactionId the partition does not hold.
	ReasonInvalidLease     = "invalid or expired lease"
	ReasonAlreadyCommitted = "already committed"
	ReasonCancelled        = "cancelled by a negative ack at a lower offset"
	ReasonUnresolvable     = "unresolvable"

	// ReasonCycleLease is why a stream cycle whose ack names a lease that
	// is not held failed; a cycle naming an unknown query fails with
	// TextQueryNotFound, one whose ack names an unknown message with
	// TextMessageNotFound.
	ReasonCycleLease = "Invalid or expired lease"
	// ReasonCycleLeased and ReasonCycleStateGone are why a stream cycle
	// without an ack (an idle flush) failed: the partition's lane is leased
	// (the lease holder's cycle decides its windows), or a key it deletes
	// is gone (another cycle closed that window since the flush read it).
	ReasonCycleLeased    = "partition leased: a cycle without an ack gives way to the lease holder's cycle"
	ReasonCycleStateGone = "state changed since it was read"
	// ReasonQueueFull and ReasonQueueNotFound are why an ephemeral push
	// item failed: its queue is at its maxMessages, or does not exist (or
	// has expired).
	ReasonQueueFull     = "queue full"
	ReasonQueueNotFound = "queue not found"
	// The reasons of a key/value conflict (KVConflict.Error): an expect
	// that did not hold, an incr of a value that is not an integer, an
	// incr past the int64 range.
	KVReasonExpectation = "expectation failed"
	KVReasonNotCounter  = "not a counter"
	KVReasonOverflow    = "counter overflow"

	// ReasonSpoolFull is why a push item failed when the broker, not
	// writing to the database (an outage or push maintenance), would have
	// spooled it past the spool's size cap (FILE_BUFFER_MAX_BYTES).
	ReasonSpoolFull = "the broker is not writing to the database and its disk buffer is full (FILE_BUFFER_MAX_BYTES): the item is stored nowhere; retry later"
	// ReasonSpoolWrite is why a push item failed when the spool write
	// failed (the broker's log names the file and the error).
	ReasonSpoolWrite = "database unavailable and the disk buffer could not be written; the broker's log has the details"
)

// PushStatus is the verdict on one pushed item.
type PushStatus string

// The push verdicts. A push answers 201 whatever its items' verdicts.
const (
	// PushBuffered: the database was unreachable; the item is on the
	// broker's disk spool and is replayed, in order, when it is back.
	PushBuffered PushStatus = "buffered"
	// PushDuplicate: the partition already holds the item's transactionId;
	// MessageID is the stored message's.
	PushDuplicate PushStatus = "duplicate"
	// PushError: Queen's verdict for an item whose write failed; Error
	// says why. queen-go spools such items (PushBuffered) or fails them.
	PushError PushStatus = "error"
	// PushFailed: the item is stored nowhere (the spool refused it, its
	// queue needs an encryption key the broker lacks, an ephemeral queue is
	// full …); Error says why.
	PushFailed PushStatus = "failed"
	// PushQueued: the item is stored.
	PushQueued PushStatus = "queued"
)

// AckStatus is what an acknowledgement says of its message. The broker
// reads completed, success, acked and ok (and an absent or null status) as
// AckCompleted, retry and dlq as themselves, and any other text at all (""
// included) as AckFailed, so that a typo nacks rather than errors.
type AckStatus string

// The acknowledgement statuses.
const (
	// AckCompleted commits the message.
	AckCompleted AckStatus = "completed"
	// AckFailed counts a failed attempt: the message is redelivered after
	// the queue's retryDelay, or dead-lettered after retryLimit attempts.
	AckFailed AckStatus = "failed"
	// AckRetry redelivers the message (after the queue's retryDelay)
	// without using its retry budget.
	AckRetry AckStatus = "retry"
	// AckDLQ moves the message to the dead-letter queue at once.
	AckDLQ AckStatus = "dlq"
)
