package delivery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/store"
)

// Outcomes of one POST.
const (
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
	StatusTimeout   = "timeout"
	StatusRefused   = "refused"
	StatusError     = "error"
)

// Outcomes of a delivery.
const (
	OutcomeDelivered = "delivered"
	OutcomeRetrying  = "retrying"
	OutcomeDLQ       = "dlq"
)

// extendEvery is how often a worker renews its lease while it delivers;
// leaseRenewal how far.
const (
	extendEvery  = 20 * time.Second
	leaseRenewal = 60
)

// work pops the target's partitions one at a time and delivers their
// messages in order until ctx ends.
func (s *Service) work(ctx context.Context, t *target) {
	c := broker.Caller{Tenant: t.tenant}
	req := broker.PopRequest{Queue: t.doc.Queue, ConsumerGroup: t.doc.ConsumerGroup, Batch: s.cfg.Batch, Wait: true,
		Timeout: s.cfg.PollWait, SubscriptionMode: broker.SubscribeTimestamp, SubscriptionFrom: t.created}
	failures := 0
	for ctx.Err() == nil {
		res, err := s.b.Pop(ctx, c, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			s.log.Warn("delivery pop failed", "target", t.id, "err", err)
			sleep(ctx, min(time.Duration(failures)*time.Second, 30*time.Second))
			continue
		}
		failures = 0
		if res == nil || len(res.Messages) == 0 {
			continue
		}
		s.deliverBatch(ctx, c, t, res)
	}
}

// deliverBatch delivers a leased batch of one partition in order, acking
// each; it stops at a message that fails (the rest comes back after it)
// and, when the service stops, hands the rest back at once.
func (s *Service) deliverBatch(ctx context.Context, c broker.Caller, t *target, res *broker.PopResponse) {
	extended := time.Now()
	for i := range res.Messages {
		m := &res.Messages[i]
		if ctx.Err() != nil {
			s.release(c, t, res, m)
			return
		}
		if time.Since(extended) > extendEvery {
			if _, err := s.b.ExtendLease(ctx, c, res.LeaseID, leaseRenewal); err != nil && ctx.Err() == nil {
				s.log.Warn("delivery lease not renewed", "target", t.id, "err", err)
			}
			extended = time.Now()
		}
		rec := s.loadAttempts(ctx, t, m)
		ok, lastErr := s.deliver(ctx, t, m, rec, func() {
			if time.Since(extended) > extendEvery {
				_, _ = s.b.ExtendLease(ctx, c, res.LeaseID, leaseRenewal)
				extended = time.Now()
			}
		})
		if !ok && ctx.Err() != nil {
			// Stopping: the message was not given up on, only left.
			s.saveAttempts(t, m, rec, OutcomeRetrying)
			s.release(c, t, res, m)
			return
		}
		a := store.Ack{ConsumerGroup: t.doc.ConsumerGroup, LeaseID: res.LeaseID, PartitionID: m.PartitionID,
			TransactionID: m.TransactionID, Status: store.AckCompleted}
		expect := OutcomeDelivered
		if !ok {
			a.Status, a.Error = store.AckFailed, lastErr
			expect = OutcomeRetrying
		}
		// The attempts are recorded while the lease holds, before the ack
		// lets a redelivery (on any broker) read them again.
		s.saveAttempts(t, m, rec, expect)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		out, err := s.b.Ack(actx, c, []store.Ack{a})
		cancel()
		outcome := OutcomeDelivered
		switch {
		case err != nil || len(out) != 1:
			s.log.Warn("delivery ack failed; the message comes back when the lease ends", "target", t.id,
				"message", m.ID, "err", err)
			outcome = OutcomeRetrying
		case !out[0].Success && !out[0].DLQ:
			s.log.Warn("delivery ack refused", "target", t.id, "message", m.ID, "error", out[0].Error)
			outcome = OutcomeRetrying
		case ok:
			s.m.latency.Observe(s.cfg.Now().Sub(m.CreatedAt).Seconds())
		case out[0].DLQ:
			outcome = OutcomeDLQ
		default:
			outcome = OutcomeRetrying
		}
		s.m.deliveries.WithLabelValues(outcome).Inc()
		if outcome != expect {
			s.saveAttempts(t, m, rec, outcome)
		}
		if !ok || outcome == OutcomeRetrying {
			return // the lease was released (or is lost): the rest comes back
		}
	}
}

// release hands the rest of a batch back, from m on, without counting a
// failure: the lease is cleared and the messages are delivered again.
func (s *Service) release(c broker.Caller, t *target, res *broker.PopResponse, m *store.Message) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.b.Ack(ctx, c, []store.Ack{{ConsumerGroup: t.doc.ConsumerGroup, LeaseID: res.LeaseID,
		PartitionID: m.PartitionID, TransactionID: m.TransactionID, Status: store.AckRetry}})
	if err != nil {
		s.log.Warn("delivery lease not handed back; it ends on its own", "target", t.id, "err", err)
	}
}

// deliver POSTs m until it is answered 2xx or the attempts run out,
// backing off between attempts (counting the attempts of earlier
// deliveries of m, so that a redelivery goes on backing off).
func (s *Service) deliver(ctx context.Context, t *target, m *store.Message, rec *record, renew func()) (bool, string) {
	ev, err := ingress.LoadEvent(ctx, s.st, t.tenant, m.Queue, m.Partition, m.TransactionID)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("event context not read; delivering without it", "message", m.ID, "err", err)
	}
	if ev == nil {
		ev = &ingress.Event{}
	}
	n := cmp.Or(t.doc.Attempts, s.cfg.Attempts)
	last := ""
	for i := range n {
		if rec.Total > 0 || i > 0 {
			if !sleep(ctx, s.backoff(rec.Total)) {
				return false, last
			}
		}
		renew()
		a := s.attempt(ctx, t, m, ev)
		if ctx.Err() != nil && a.Status != StatusDelivered {
			return false, last
		}
		rec.add(a, s.cfg.AttemptsKept)
		s.m.attempts.WithLabelValues(a.Status).Inc()
		s.m.attemptDur.Observe(a.LatencyMs / 1000)
		if a.Status == StatusDelivered {
			return true, ""
		}
		last = a.Status
		if a.Code != 0 {
			last = fmt.Sprintf("HTTP %d", a.Code)
		}
		if a.Error != "" {
			last += ": " + a.Error
		}
	}
	return false, last
}

// backoff is the wait before an attempt when n were made: base doubled n-1
// times, capped, with jitter (between half and all of it).
func (s *Service) backoff(n int) time.Duration {
	d := s.cfg.BackoffBase
	for i := 1; i < n && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// attempt is one POST of m to t.
func (s *Service) attempt(ctx context.Context, t *target, m *store.Message, ev *ingress.Event) api.DeliveryAttempt {
	start := s.cfg.Now()
	a := api.DeliveryAttempt{At: start.UTC().Format(time.RFC3339Nano)}
	done := func(status string, err error) api.DeliveryAttempt {
		a.Status = status
		if err != nil {
			a.Error = truncate(err.Error(), 256)
		}
		a.LatencyMs = float64(s.cfg.Now().Sub(start).Microseconds()) / 1000
		return a
	}
	timeout := s.cfg.Timeout
	if t.doc.TimeoutMs > 0 {
		timeout = time.Duration(t.doc.TimeoutMs) * time.Millisecond
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := s.request(actx, t, m, ev)
	if err != nil {
		return done(StatusError, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, ErrDenied):
			return done(StatusRefused, ErrDenied)
		case errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil && ctx.Err() == nil:
			return done(StatusTimeout, fmt.Errorf("no answer within %s", timeout))
		}
		return done(StatusError, err)
	}
	head := make([]byte, 256)
	k, _ := io.ReadFull(resp.Body, head)
	// The rest of the answer is read up to the cap (so that the
	// connection can be reused) and dropped; once the status came, a body
	// that does not finish changes nothing.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, s.cfg.MaxResponseBytes))
	resp.Body.Close()
	a.Code = resp.StatusCode
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return done(StatusDelivered, nil)
	}
	var e error
	if k > 0 {
		e = errors.New(strings.ToValidUTF8(string(head[:k]), "?"))
	}
	return done(StatusFailed, e)
}

// request builds the POST of m to t. Headers go on in the order of their
// precedence, lowest first, each overriding what came before: the
// forwarded headers and the GroupKey, the broker's own, the target's
// static headers, the auth, the signature.
func (s *Service) request(ctx context.Context, t *target, m *store.Message, ev *ingress.Event) (*http.Request, error) {
	body := m.Payload
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.doc.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	for k, v := range ev.Headers {
		if !ingress.NeverForward(k) {
			h.Set(k, v)
		}
	}
	if t.doc.GroupKeyHeader != "" {
		h.Set(t.doc.GroupKeyHeader, m.Partition)
	}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "queen-delivery")
	h.Set(ingress.HeaderIdempotency, m.TransactionID)
	h.Set(ingress.HeaderEventID, m.ID)
	h.Set(ingress.HeaderPath, strings.Join(append(append([]string(nil), ev.Path...), s.cfg.Node+":"+m.Queue), ","))
	for k, v := range t.doc.Headers {
		h.Set(k, v)
	}
	switch t.doc.Auth.Mode {
	case AuthBearer:
		h.Set("Authorization", "Bearer "+t.doc.Auth.Token)
	case AuthBasic:
		req.SetBasicAuth(t.doc.Auth.Username, t.doc.Auth.Password)
	case AuthOAuth2:
		tok, err := t.tokens.Token()
		if err != nil {
			return nil, fmt.Errorf("oauth2 token: %w", err)
		}
		tok.SetAuthHeader(req)
	}
	if t.doc.SigningKeyID != "" {
		ingress.SignRequest(req, body, t.doc.SigningKeyID, t.doc.SigningSecret, s.cfg.Now().Unix(), newID(16))
	}
	return req, nil
}

// record is a message's attempts to one target.
type record struct {
	api.DeliveryAttempts
}

func (r *record) add(a api.DeliveryAttempt, keep int) {
	r.Attempts = append(r.Attempts, a)
	if len(r.Attempts) > keep {
		r.Attempts = append(r.Attempts[:0], r.Attempts[len(r.Attempts)-keep:]...)
	}
	r.Total++
}

// attemptKey is the document id of a message's attempts to a target.
func attemptKey(target, message string) string { return target + "/" + message }

func (s *Service) loadAttempts(ctx context.Context, t *target, m *store.Message) *record {
	r := &record{api.DeliveryAttempts{Target: t.id, MessageID: m.ID, Queue: m.Queue, Partition: m.Partition}}
	d, err := s.st.WebhookGet(ctx, &store.WebhookKey{Tenant: t.tenant, Kind: KindAttempt, ID: attemptKey(t.id, m.ID)})
	if err == nil {
		_ = json.Unmarshal(d.Doc, &r.DeliveryAttempts)
	}
	return r
}

func (s *Service) saveAttempts(t *target, m *store.Message, r *record, outcome string) {
	r.Outcome = outcome
	doc, _ := json.Marshal(r.DeliveryAttempts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.st.WebhookPut(ctx, &store.WebhookPutParams{WebhookKey: store.WebhookKey{Tenant: t.tenant,
		Kind: KindAttempt, ID: attemptKey(t.id, m.ID)}, Queue: m.Queue, Doc: doc, Now: s.cfg.Now()}); err != nil {
		s.log.Warn("delivery attempts not recorded", "message", m.ID, "err", err)
	}
}

// Attempts returns a message's attempts to each target of its queue
// (targetID "" : every target that has some).
func (s *Service) Attempts(ctx context.Context, tenant, queue, messageID, targetID string) ([]api.DeliveryAttempts, error) {
	targets, err := s.List(ctx, tenant, queue)
	if err != nil {
		return nil, err
	}
	out := []api.DeliveryAttempts{}
	for _, t := range targets {
		if targetID != "" && t.ID != targetID {
			continue
		}
		d, err := s.st.WebhookGet(ctx, &store.WebhookKey{Tenant: store.TenantOrDefault(tenant), Kind: KindAttempt,
			ID: attemptKey(t.ID, messageID)})
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		var r api.DeliveryAttempts
		if json.Unmarshal(d.Doc, &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
