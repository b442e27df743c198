package bench

import (
	"encoding/json"
	"strconv"
)

// payload is what every message carries. Short keys keep the fixed part
// small, so -payload can go down to ~60 bytes.
type payload struct {
	Run      string `json:"r"` // run id: messages of another run are foreign
	Producer int    `json:"p"`
	Seq      int64  `json:"s"`
	SentAt   int64  `json:"t"` // Unix ns just before the push request was built
}

// appendPayload appends the JSON payload of one message, padded with 'x'
// so that it is size bytes long (or as short as possible if size is smaller
// than the fixed part).
func appendPayload(dst []byte, run string, producer int, seq, sentAt int64, size int) []byte {
	start := len(dst)
	dst = append(dst, `{"r":"`...)
	dst = append(dst, run...)
	dst = append(dst, `","p":`...)
	dst = strconv.AppendInt(dst, int64(producer), 10)
	dst = append(dst, `,"s":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"t":`...)
	dst = strconv.AppendInt(dst, sentAt, 10)
	const tail = `,"x":""}`
	pad := size - (len(dst) - start) - len(tail)
	dst = append(dst, `,"x":"`...)
	for range max(pad, 0) {
		dst = append(dst, 'x')
	}
	return append(dst, `"}`...)
}

// transactionID is the idempotency key of a message: retrying a push whose
// outcome is unknown cannot then store it twice.
func appendTransactionID(dst []byte, run string, producer int, seq int64) []byte {
	dst = append(dst, run...)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, int64(producer), 10)
	dst = append(dst, '-')
	return strconv.AppendInt(dst, seq, 10)
}

// pushBodyBuilder writes /api/v1/push bodies by hand: on a two-core machine
// shared with the broker, encoding/json's reflection in the load generator
// would take CPU the broker needs.
type pushBodyBuilder struct {
	queueJSON  []byte   // the queue name as a JSON string
	partitions [][]byte // partition names as JSON strings
	run        string
	size       int
}

func newPushBodyBuilder(queue, run string, partitions, size int) *pushBodyBuilder {
	b := &pushBodyBuilder{run: run, size: size}
	b.queueJSON, _ = json.Marshal(queue)
	for k := range partitions {
		name, _ := json.Marshal(PartitionName(k))
		b.partitions = append(b.partitions, name)
	}
	return b
}

// build appends the body pushing sequences first..first+n-1 of producer.
func (b *pushBodyBuilder) build(dst []byte, producer int, first int64, n int, sentAt int64) []byte {
	dst = append(dst, `{"items":[`...)
	for i := range n {
		seq := first + int64(i)
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"queue":`...)
		dst = append(dst, b.queueJSON...)
		dst = append(dst, `,"partition":`...)
		dst = append(dst, b.partitions[PartitionFor(producer, seq, len(b.partitions))]...)
		dst = append(dst, `,"transactionId":"`...)
		dst = appendTransactionID(dst, b.run, producer, seq)
		dst = append(dst, `","payload":`...)
		dst = appendPayload(dst, b.run, producer, seq, sentAt, b.size)
		dst = append(dst, '}')
	}
	return append(dst, `]}`...)
}
