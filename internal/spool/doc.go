// Package spool is the broker's disk buffer for pushes it cannot write to
// the database: during an outage or in push maintenance mode, accepted
// messages are appended here (and fsynced before the client hears 201), and
// replayed into the store in order once it is reachable again.
//
// # Segments
//
// Records are appended to one open segment file (*.open); concurrent
// appends share fsyncs. Replay seals it (*.spool) and feeds every sealed
// segment to the store in file order and in batches, deleting a segment
// only once all of its records were stored or dead-lettered. Records carry
// the ids minted when the push was accepted, so replay is idempotent: the
// store answers an item it already has as a duplicate of its
// transactionId. That is what crash safety rests on: a record cut short by
// a crash reads as the end of its segment (its client never heard 201), and
// a segment whose replay a crash interrupted is replayed from its start. A
// replay stopped by an outage resumes at the batch that failed.
//
// # Size cap
//
// OpenMax bounds the bytes the segments hold on disk: an Append that would
// pass the cap is refused whole with ErrFull, and replay frees a segment's
// bytes as it deletes it. The count starts from the segments found at open.
//
// # Record format
//
// A record is a 4-byte big-endian length followed by a JSON object holding
// one item. The format is defined in this package, not by store.PushItem,
// so that renaming a Go field cannot break replaying a spool written by an
// earlier build, and it is versioned:
//
//   - Version 3 (written now): "v":3 and the keys tenant, queue, partition,
//     messageId, transactionId, traceId, producerSub, namespace, task,
//     sealed (the item's store.Seal: 0 as the client gave it, 2 sealed by
//     the broker for its queue before it was spooled) and payload, the
//     payload being the message's raw JSON, byte for byte.
//   - Version 2 (read only): version 3 without "sealed". Such items come
//     back as store.SealUnknown, which the broker resolves at replay (a
//     build of the time sealed without binding and recorded nothing).
//   - Version 1 (read only): no "v" key; encoding/json applied to the
//     PushItem of the time, so Go field names as keys (MessageID,
//     Namespace, Partition, Payload, ProducerSub, Queue, Task, TraceID,
//     TransactionID, and Tenant in the last builds before version 2) and
//     the payload in base64. Without Tenant it belongs to
//     store.DefaultTenant. Its items are store.SealUnknown too.
//
// A record of a newer version stops Open (and Replay) with
// ErrUnknownVersion: only a newer broker can replay it. testdata holds a
// segment of each version; tests replay them all and check that Append still
// writes the version 3 one byte for byte.
//
// # Dead letters
//
// An item the store refuses for good (push returns it as a Refusal, as
// opposed to an outage error) would otherwise block every item behind it
// forever. Replay appends it to dead-letter.jsonl in the spool directory,
// fsynced, and goes on. Each line is a JSON object: time (RFC 3339, UTC),
// reason, segment (the file it came from) and item (the record in the
// version 3 format, whatever version it was spooled in). A record that
// cannot be decoded at all is set aside the same way, with its bytes in
// raw (base64) instead of item. DeadLettered counts the lines, across
// restarts. A crash in mid-segment replays the items set aside before it
// once more (the segment restarts), so one may appear in the file twice.
//
// # Per-partition counts
//
// Once the database answers again, the broker writes fresh pushes straight
// to it, except to partitions that still have spooled records, which would
// be overtaken. So the spool keeps, in memory, the number of records not
// yet replayed per partition (tenant, queue, partition): built at Open
// from the sealed segments, raised by Append before its records can be
// replayed, lowered as each replayed batch is confirmed or dead-lettered,
// and dropped from the map at zero. PendingIn asks about a set of
// partitions; WaitClear blocks until they are clear, woken by every drop
// rather than by polling.
package spool
