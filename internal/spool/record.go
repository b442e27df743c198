package spool

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
)

// recordVersion is the version Append writes. Readers accept every older
// version, so a spool written before an upgrade replays after it.
const recordVersion = 3

// ErrUnknownVersion is returned (wrapped) for a record written in a format
// newer than this build understands: it was written by a newer broker, and
// only a newer broker can replay it. It is never dead-lettered, since the
// record is not bad, only ahead of us.
var ErrUnknownVersion = errors.New("spool record version unknown to this build")

// recordHead is a version 3 record without its payload (version 2 had no
// "sealed"). Its keys are fixed here, not derived from store.PushItem, so
// that renaming a Go field cannot change the disk format. Field order is
// the key order on disk.
type recordHead struct {
	V             int    `json:"v"`
	Tenant        string `json:"tenant"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	MessageID     string `json:"messageId"`
	TransactionID string `json:"transactionId"`
	TraceID       string `json:"traceId"`
	ProducerSub   string `json:"producerSub"`
	Namespace     string `json:"namespace"`
	Task          string `json:"task"`
	// Sealed is the item's store.Seal: how its payload was sealed before it
	// was spooled (version 3).
	Sealed int `json:"sealed"`
}

// recordV2 is a whole version 2 or 3 record as read back.
type recordV2 struct {
	recordHead
	Payload json.RawMessage `json:"payload"`
}

// recordV1 is the format written before versioning: encoding/json applied to
// store.PushItem as it was then, so Go field names as keys and the payload
// in base64. Tenant did not exist at first (such records belong to the
// default tenant); builds between the tenant change and version 2 wrote it.
type recordV1 struct {
	MessageID     string
	Namespace     string
	Partition     string
	Payload       []byte
	ProducerSub   string
	Queue         string
	Task          string
	Tenant        string
	TraceID       string
	TransactionID string
}

// appendRecord appends one framed version 3 record: a 4-byte big-endian
// length, then the JSON. The payload is spliced in as is rather than passed
// through encoding/json, which would re-validate it and escape <, > and &:
// payloads arrive validated and compacted, and pop copies them out as
// stored, so a spooled message must reach the store byte for byte as a
// directly pushed one would.
func appendRecord(dst []byte, it *store.PushItem) ([]byte, error) {
	// A record that does not decode would be dead-lettered at replay; refuse
	// it here instead, before the client is told it was accepted.
	if !json.Valid(it.Payload) {
		return dst, fmt.Errorf("payload of %s is not valid JSON", it.TransactionID)
	}
	head, err := json.Marshal(&recordHead{
		V:             recordVersion,
		Tenant:        store.TenantOrDefault(it.Tenant),
		Queue:         it.Queue,
		Partition:     it.Partition,
		MessageID:     it.MessageID,
		TransactionID: it.TransactionID,
		TraceID:       it.TraceID,
		ProducerSub:   it.ProducerSub,
		Namespace:     it.Namespace,
		Task:          it.Task,
		Sealed:        int(it.Sealed),
	})
	if err != nil {
		return dst, err
	}
	const payloadKey = `,"payload":`
	n := len(head) - 1 + len(payloadKey) + len(it.Payload) + 1
	if n > maxRecord {
		// Replay would refuse to read it back.
		return dst, fmt.Errorf("record of %d bytes exceeds the %d byte limit", n, maxRecord)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, head[:len(head)-1]...) // drop the closing brace
	dst = append(dst, payloadKey...)
	dst = append(dst, it.Payload...)
	return append(dst, '}'), nil
}

// encodeRecord returns the version 3 JSON of it, without framing.
func encodeRecord(it *store.PushItem) ([]byte, error) {
	rec, err := appendRecord(nil, it)
	if err != nil {
		return nil, err
	}
	return rec[4:], nil
}

// decodeRecord decodes one record of any known version. An error wrapping
// ErrUnknownVersion means the record is intact but too new; any other error
// means it is damaged.
func decodeRecord(rec []byte) (store.PushItem, error) {
	// encoding/json matches keys case-insensitively, so a version 1 record
	// also fills most of recordV2; only the "v" key, which version 1 never
	// wrote, tells the formats apart.
	var r recordV2
	if err := json.Unmarshal(rec, &r); err != nil {
		return store.PushItem{}, fmt.Errorf("decode: %w", err)
	}
	switch r.V {
	case 0: // no "v" key
		return decodeV1(rec)
	case 2, 3:
		sealed := store.SealUnknown // version 2 did not record it
		if r.V == 3 {
			switch s := store.Seal(r.Sealed); {
			case r.Sealed < 0 || r.Sealed > 255:
				return store.PushItem{}, fmt.Errorf("decode: sealed %d out of range", r.Sealed)
			case s == store.SealNone, s == store.SealQueen, s == store.SealBound:
				sealed = s
			default:
				return store.PushItem{}, fmt.Errorf("decode: unknown seal %d", r.Sealed)
			}
		}
		return store.PushItem{
			Sealed:        sealed,
			MessageID:     r.MessageID,
			Namespace:     r.Namespace,
			Partition:     r.Partition,
			Payload:       []byte(r.Payload),
			ProducerSub:   r.ProducerSub,
			Queue:         r.Queue,
			Task:          r.Task,
			Tenant:        store.TenantOrDefault(r.Tenant),
			TraceID:       r.TraceID,
			TransactionID: r.TransactionID,
		}, nil
	default:
		return store.PushItem{}, fmt.Errorf("%w: version %d, this build reads up to %d; replay it with a newer broker",
			ErrUnknownVersion, r.V, recordVersion)
	}
}

func decodeV1(rec []byte) (store.PushItem, error) {
	var r recordV1
	if err := json.Unmarshal(rec, &r); err != nil {
		return store.PushItem{}, fmt.Errorf("decode version 1: %w", err)
	}
	// Version 1 did not check; version 2 (and the dead-letter file) can
	// only hold a JSON payload.
	if !json.Valid(r.Payload) {
		return store.PushItem{}, errors.New("decode version 1: payload is not valid JSON")
	}
	return store.PushItem{
		Sealed:        store.SealUnknown, // not recorded before version 3
		MessageID:     r.MessageID,
		Namespace:     r.Namespace,
		Partition:     r.Partition,
		Payload:       r.Payload,
		ProducerSub:   r.ProducerSub,
		Queue:         r.Queue,
		Task:          r.Task,
		Tenant:        store.TenantOrDefault(r.Tenant),
		TraceID:       r.TraceID,
		TransactionID: r.TransactionID,
	}, nil
}
