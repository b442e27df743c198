package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/queen-go/queen/internal/store"
)

// deadLetterJSON is one entry of GET /api/v1/dlq: exactly Queen's keys.
// id and createdAt are the message's.
type deadLetterJSON struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	FailedAt      string          `json:"failedAt"`
}

// pageJSON is the pagination echo of the DLQ and trace listings.
type pageJSON struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

type dlqListJSON struct {
	Messages   []deadLetterJSON `json:"messages"`
	Pagination pageJSON         `json:"pagination"`
}

// dlqFilter reads the filters GET and DELETE /api/v1/dlq share.
func dlqFilter(q *query) store.DLQFilter {
	return store.DLQFilter{Queue: q.name("queue"), ConsumerGroup: q.name("consumerGroup"),
		Partition: q.name("partition")}
}

func (a *api) listDLQ(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	p := store.DLQListParams{DLQFilter: dlqFilter(q), Limit: q.int("limit", 100, rangeListLimit),
		Offset: q.int("offset", 0, rangeListOffset), Tenant: caller(r).Tenant}
	p.From, p.To = q.time("from"), q.time("to")
	if q.err != nil {
		return q.err
	}
	dl, err := a.control.ListDLQ(r.Context(), p)
	if err != nil {
		return err
	}
	out := dlqListJSON{Messages: make([]deadLetterJSON, len(dl)), Pagination: pageJSON{p.Limit, p.Offset}}
	for i, d := range dl {
		out.Messages[i] = deadLetterJSON{
			ID: d.MessageID, TransactionID: d.TransactionID, PartitionID: d.PartitionID, Queue: d.Queue,
			Partition: d.Partition, ConsumerGroup: d.ConsumerGroup, ErrorMessage: d.Error, RetryCount: d.RetryCount,
			Data: rawJSON(d.Payload), ProducerSub: nullable(d.ProducerSub), CreatedAt: timestamp(d.CreatedAt),
			FailedAt: timestamp(d.FailedAt),
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// dlqRetryBody selects dead-lettered messages to requeue: by ids, or by
// filter (the oldest failures first), up to limit.
type dlqRetryBody struct {
	ConsumerGroup *string `json:"consumerGroup"`
	IDs           *[]struct {
		PartitionID   *string `json:"partitionId"`
		TransactionID *string `json:"transactionId"`
	} `json:"ids"`
	Limit     *int    `json:"limit"`
	Partition *string `json:"partition"`
	Queue     *string `json:"queue"`
}

// DecodeDLQRetry parses a POST /api/v1/dlq/retry body; an empty body
// selects every dead letter (up to the default limit).
func DecodeDLQRetry(body []byte) (*store.DLQRequeueParams, error) {
	var b dlqRetryBody
	if len(bytes.TrimSpace(body)) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return nil, err
		}
	}
	p := &store.DLQRequeueParams{Limit: 1000}
	for key, v := range map[string]*string{"queue": b.Queue, "consumerGroup": b.ConsumerGroup, "partition": b.Partition} {
		if v != nil && *v != "" {
			if err := checkBodyText(*v, kindName, at("", key)); err != nil {
				return nil, err
			}
		}
	}
	p.Queue, p.ConsumerGroup, p.Partition = deref(b.Queue), deref(b.ConsumerGroup), deref(b.Partition)
	if b.Limit != nil {
		if err := rangeRequeueLimit.check(func() string { return "bad body: limit" }, *b.Limit); err != nil {
			return nil, err
		}
		p.Limit = *b.Limit
	}
	if b.IDs != nil {
		if len(*b.IDs) > maxRequeueIDs {
			return nil, badBody("ids holds %d entries, the limit is %d", len(*b.IDs), maxRequeueIDs)
		}
		for i, id := range *b.IDs {
			if state := presence(id.PartitionID); state != "" {
				return nil, fieldError(elem("ids", i), "partitionId", state, "")
			}
			if state := presence(id.TransactionID); state != "" {
				return nil, fieldError(elem("ids", i), "transactionId", state, "")
			}
			pid, err := parsePartitionID(*id.PartitionID)
			if err != nil {
				return nil, badBody("%s.partitionId %s", elem("ids", i), err.Error())
			}
			if err := checkBodyText(*id.TransactionID, kindName, at(elem("ids", i), "transactionId")); err != nil {
				return nil, err
			}
			p.Refs = append(p.Refs, store.MessageRef{PartitionID: pid, TransactionID: *id.TransactionID})
		}
		if len(p.Refs) == 0 {
			return nil, badBody("ids is empty: name at least one message, or leave ids out to select by filter")
		}
	}
	return p, nil
}

type requeuedJSON struct {
	PartitionID           string `json:"partitionId"`
	TransactionID         string `json:"transactionId"`
	MessageID             string `json:"messageId"`
	OriginalTransactionID string `json:"originalTransactionId"`
}

type requeueFailureJSON struct {
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Error         string `json:"error"`
}

type dlqRetryJSON struct {
	Requeued int                  `json:"requeued"`
	Failed   []requeueFailureJSON `json:"failed"`
	Messages []requeuedJSON       `json:"messages"`
}

func (a *api) retryDLQ(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	p, err := DecodeDLQRetry(body)
	if err != nil {
		return err
	}
	p.Tenant = caller(r).Tenant
	res, err := a.control.RetryDLQ(r.Context(), *p)
	if err != nil {
		return err
	}
	out := dlqRetryJSON{Requeued: len(res.Requeued), Failed: make([]requeueFailureJSON, len(res.Failed)),
		Messages: make([]requeuedJSON, len(res.Requeued))}
	for i, f := range res.Failed {
		out.Failed[i] = requeueFailureJSON{PartitionID: f.PartitionID, TransactionID: f.TransactionID, Error: f.Error}
	}
	for i, q := range res.Requeued {
		out.Messages[i] = requeuedJSON{PartitionID: q.PartitionID, TransactionID: q.TransactionID,
			MessageID: q.MessageID, OriginalTransactionID: q.OriginalTransactionID}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type dlqDeleteJSON struct {
	Deleted int `json:"deleted"`
}

func (a *api) deleteDLQ(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	f := dlqFilter(q)
	f.To = q.time("before")
	if q.err != nil {
		return q.err
	}
	n, err := a.control.DeleteDLQ(r.Context(), caller(r).Tenant, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, dlqDeleteJSON{Deleted: n})
	return nil
}
