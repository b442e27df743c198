package store

import "fmt"

// A queue with maxSize > 0 holds at most that many unconsumed messages:
// messages after the cursor of its slowest consumer group, in flight or
// not, or, in a partition no group has joined yet, every message still
// stored after what retention deleted or eviction evicted. A push that
// would go past the cap stores the items that fit, in order, and answers
// the others PushFailed with QueueFullError; a duplicate is still answered
// as a duplicate. Engines compute the count on the push path only for
// queues that have a cap.

// QueueFullError is the error of a pushed item refused because its queue
// already holds maxSize unconsumed messages: "queue full (maxSize N)".
func QueueFullError(maxSize int) string {
	return fmt.Sprintf("queue full (maxSize %d)", maxSize)
}

// TxPushAbort is the abort of a transaction whose pushed item it was not
// queued (res): a duplicate, or a queue full.
func TxPushAbort(it PushItem, res PushResult) *TxAbortError {
	if res.Status == PushFailed {
		return &TxAbortError{Reason: fmt.Sprintf("push of transactionId %s to queue %s partition %s failed: %s",
			it.TransactionID, it.Queue, it.Partition, res.Error)}
	}
	return &TxAbortError{Reason: fmt.Sprintf(
		"duplicate transactionId %s in queue %s partition %s", it.TransactionID, it.Queue, it.Partition)}
}
