package httpapi

import (
	"bytes"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// dlqFilter reads the filters GET and DELETE /api/v1/dlq share.
func dlqFilter(q *query) store.DLQFilter {
	return store.DLQFilter{Queue: q.name("queue"), ConsumerGroup: q.name("consumerGroup"),
		Partition: q.name("partition")}
}

// listDLQ answers exactly Queen's keys; id and createdAt are the
// message's.
func (g *messageControlRoutes) listDLQ(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	p := store.DLQListParams{DLQFilter: dlqFilter(q), Limit: q.limit(100, MaxListLimit),
		Offset: q.int("offset", 0, rangeListOffset), Tenant: caller(r).Tenant}
	p.From, p.To = q.time("from"), q.time("to")
	if q.err != nil {
		return q.err
	}
	dl, err := g.control.ListDLQ(r.Context(), p)
	if err != nil {
		return err
	}
	out := api.DLQList{Messages: make([]api.DeadLetter, len(dl)), Pagination: api.PageEcho{Limit: p.Limit, Offset: p.Offset}}
	for i, d := range dl {
		out.Messages[i] = api.DeadLetter{
			ID: d.MessageID, TransactionID: d.TransactionID, PartitionID: d.PartitionID, Queue: d.Queue,
			Partition: d.Partition, ConsumerGroup: d.ConsumerGroup, ErrorMessage: d.Error, RetryCount: d.RetryCount,
			Data: rawJSON(d.Payload), IsEncrypted: d.Sealed.Encrypted(), ProducerSub: nullable(d.ProducerSub),
			CreatedAt: api.TimeOf(d.CreatedAt),
			FailedAt:  api.TimeOf(d.FailedAt),
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// DecodeDLQRetry parses a POST /api/v1/dlq/retry body; an empty body
// selects every dead letter (up to the default limit).
func DecodeDLQRetry(body []byte) (*store.DLQRequeueParams, error) {
	var b api.DLQRetryRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := unmarshal(body, &b); err != nil {
			return nil, err
		}
	}
	p := &store.DLQRequeueParams{Limit: 1000}
	for key, v := range map[string]string{"queue": b.Queue, "consumerGroup": b.ConsumerGroup, "partition": b.Partition} {
		if v != "" {
			if err := checkBodyText(v, kindName, at("", key)); err != nil {
				return nil, err
			}
		}
	}
	p.Queue, p.ConsumerGroup, p.Partition = b.Queue, b.ConsumerGroup, b.Partition
	if b.Limit != nil {
		if err := rangeRequeueLimit.check(func() string { return "bad body: limit" }, *b.Limit); err != nil {
			return nil, err
		}
		p.Limit = *b.Limit
	}
	if b.IDs != nil {
		if len(b.IDs) > maxRequeueIDs {
			return nil, badBody("ids holds %d entries, the limit is %d", len(b.IDs), maxRequeueIDs)
		}
		for i, id := range b.IDs {
			path := elem("ids", i)
			if id.PartitionID == "" {
				return nil, fieldError(path, "partitionId", presence(body, path, "partitionId"), "")
			}
			if id.TransactionID == "" {
				return nil, fieldError(path, "transactionId", presence(body, path, "transactionId"), "")
			}
			pid, err := parsePartitionID(id.PartitionID)
			if err != nil {
				return nil, badBody("%s.partitionId %s", path, err.Error())
			}
			if err := checkBodyText(id.TransactionID, kindName, at(path, "transactionId")); err != nil {
				return nil, err
			}
			p.Refs = append(p.Refs, store.MessageRef{PartitionID: pid, TransactionID: id.TransactionID})
		}
		if len(p.Refs) == 0 {
			return nil, badBody("ids is empty: name at least one message, or leave ids out to select by filter")
		}
	}
	return p, nil
}

func (g *messageControlRoutes) retryDLQ(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	p, err := DecodeDLQRetry(body)
	if err != nil {
		return err
	}
	p.Tenant = caller(r).Tenant
	res, err := g.control.RetryDLQ(r.Context(), *p)
	if err != nil {
		return err
	}
	out := api.DLQRetryResponse{Requeued: len(res.Requeued), Failed: make([]api.RequeueFailure, len(res.Failed)),
		Messages: make([]api.Requeued, len(res.Requeued))}
	for i, f := range res.Failed {
		out.Failed[i] = api.RequeueFailure{PartitionID: f.PartitionID, TransactionID: f.TransactionID, Error: f.Error}
	}
	for i, rq := range res.Requeued {
		out.Messages[i] = api.Requeued{PartitionID: rq.PartitionID, TransactionID: rq.TransactionID,
			MessageID: rq.MessageID, OriginalTransactionID: rq.OriginalTransactionID}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *messageControlRoutes) deleteDLQ(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	f := dlqFilter(q)
	f.To = q.time("before")
	if q.err != nil {
		return q.err
	}
	n, err := g.control.DeleteDLQ(r.Context(), caller(r).Tenant, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.DLQDeleteResponse{Deleted: n})
	return nil
}
