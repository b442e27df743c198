package httpapi

import (
	"strconv"
	"unicode/utf8"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
)

// appendPopBody appends the JSON of a non-empty pop answer: an
// api.PopResponse, exactly as encoding/json would write it (a test holds it
// to that). It is written by hand because the pop answer is the broker's hottest response and
// encoding/json re-validates every payload (json.RawMessage is compacted on
// output): payloads were validated and compacted when they were pushed, so
// they are copied as stored. Keys and their order are Queen's.
func appendPopBody(b []byte, res *broker.PopResponse) []byte {
	first := &res.Messages[0]
	b = append(b, `{"success":true,"queue":`...)
	b = appendString(b, first.Queue)
	b = append(b, `,"partition":`...)
	b = appendString(b, first.Partition)
	b = append(b, `,"partitionId":`...)
	b = appendString(b, first.PartitionID)
	b = append(b, `,"leaseId":`...)
	b = appendNullable(b, res.LeaseID)
	b = append(b, `,"consumerGroup":`...)
	b = appendString(b, res.ConsumerGroup)
	b = append(b, `,"messages":[`...)
	for i := range res.Messages {
		m := &res.Messages[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, m.ID)
		b = append(b, `,"transactionId":`...)
		b = appendString(b, m.TransactionID)
		b = append(b, `,"traceId":`...)
		b = appendNullable(b, m.TraceID)
		b = append(b, `,"data":`...)
		b = append(b, m.Payload...)
		b = append(b, `,"producerSub":`...)
		b = appendNullable(b, m.ProducerSub)
		b = append(b, `,"createdAt":"`...)
		b = m.CreatedAt.UTC().AppendFormat(b, api.TimeLayout)
		b = append(b, `","partitionId":`...)
		b = appendString(b, m.PartitionID)
		b = append(b, `,"partition":`...)
		b = appendString(b, m.Partition)
		b = append(b, `,"leaseId":`...)
		b = appendNullable(b, res.LeaseID)
		b = append(b, `,"consumerGroup":`...)
		b = appendString(b, res.ConsumerGroup)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendNullable appends s as a JSON string, or null when it is empty.
func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does
// (HTML-safe; invalid UTF-8 becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = strconv.AppendInt(b, int64(r&0xF), 16)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
