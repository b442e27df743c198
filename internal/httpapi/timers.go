package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/timers"
)

// timerRoutes serve timers (rules and the timer service in package
// timers), behind the timers gate and the tenants' buckets.
type timerRoutes struct {
	bucket
	gate   *Gate
	timers *timers.Timers
}

func newTimerRoutes(t *timers.Timers, b bucket, br *broker.Broker) *timerRoutes {
	return &timerRoutes{bucket: b, timers: t,
		gate: featureGate("timers", api.TextTimersDisabled, func() bool { return t != nil && t.Enabled() }, br)}
}

func (g *timerRoutes) Routes() []Route {
	return Behind(g.gate, nil,
		row(AccessWriteOnly, "POST", "/api/v1/timers", "timers_schedule", g.timersSchedule),
		row(AccessRead, "GET", "/api/v1/timers", "timers_list", g.timersList),
		row(AccessRead, "GET", "/api/v1/timers/{timerId}", "timer_get", g.timerGet),
		row(AccessReadWrite, "DELETE", "/api/v1/timers/{timerId}", "timer_cancel", g.timerCancel),
	)
}

// DecodeTimers parses a POST /api/v1/timers body.
func DecodeTimers(body []byte) ([]timers.Request, error) {
	var b api.TimersRequest
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Items == nil {
		return nil, missing("items")
	}
	if len(b.Items) == 0 {
		return nil, badRequest("items array cannot be empty")
	}
	out := make([]timers.Request, len(b.Items))
	for i := range b.Items {
		it, path := &b.Items[i], elem("items", i)
		if it.Queue == "" {
			return nil, fieldError(path, "queue", presence(body, path, "queue"), "")
		}
		if len(it.Payload) == 0 {
			return nil, fieldError(path, "payload", "missing", "null is a valid payload")
		}
		req := timers.Request{Queue: it.Queue, Partition: it.Partition, Payload: compactJSON(it.Payload),
			TransactionID: it.TransactionID}
		for key, v := range map[string]string{"queue": req.Queue, "partition": req.Partition, "transactionId": req.TransactionID} {
			if v != "" {
				if err := checkBodyText(v, kindName, at(path, key)); err != nil {
					return nil, err
				}
			}
		}
		if it.FireAt != nil {
			at, err := time.Parse(time.RFC3339Nano, *it.FireAt)
			if err != nil {
				return nil, badBody("%s: expected an RFC 3339 time, got %q", join(path, "fireAt"), *it.FireAt)
			}
			req.FireAt = &at
		}
		if it.DelaySeconds != nil {
			d := *it.DelaySeconds
			if math.IsNaN(d) || d < 0 || d > float64(rangeSeconds.max) {
				return nil, badBody("%s: out of range (0 to %d)", join(path, "delaySeconds"), rangeSeconds.max)
			}
			delay := time.Duration(d * float64(time.Second))
			req.Delay = &delay
		}
		out[i] = req
	}
	return out, nil
}

// timersSchedule answers 201 with one verdict per item, in request order
// (the casing mirrors a push's).
func (g *timerRoutes) timersSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	reqs, err := DecodeTimers(body)
	if err != nil {
		return err
	}
	if err := g.timers.Check(reqs); err != nil {
		return err
	}
	if err := g.take(r, len(reqs)); err != nil {
		return err
	}
	res, err := g.timers.Schedule(r.Context(), caller(r), reqs)
	if err != nil {
		return err
	}
	out := make([]api.TimerScheduled, len(res))
	for i, s := range res {
		j := api.TimerScheduled{Index: i, QueueName: reqs[i].Queue, TransactionID: s.Timer.TransactionID}
		switch {
		case s.Error != "":
			j.Status, j.Error = api.TimerVerdictFailed, s.Error
		case s.Duplicate:
			j.Status = api.TimerVerdictDuplicate
		default:
			j.Status = api.TimerVerdictScheduled
		}
		if s.Timer.ID != "" {
			j.TimerID, j.FireAt = &s.Timer.ID, timeOrNull(s.Timer.FireAt)
		}
		out[i] = j
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func timerOut(t *store.Timer) api.Timer {
	j := api.Timer{ID: t.ID, Queue: t.Queue, Partition: t.Partition, TransactionID: t.TransactionID,
		FireAt: api.TimeOf(t.FireAt), Status: string(t.Status), CreatedAt: api.TimeOf(t.CreatedAt), Error: t.Error}
	switch t.Status {
	case store.TimerFired:
		j.MessageID, j.FiredAt = nullable(t.MessageID), timeOrNull(t.FinishedAt)
	case store.TimerCancelled:
		j.CancelledAt = timeOrNull(t.FinishedAt)
	case store.TimerFailed:
		j.FiredAt = timeOrNull(t.FinishedAt)
	}
	return j
}

func (g *timerRoutes) timersList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	p := &store.TimerListParams{Queue: q.name("queue"), Status: store.TimerStatus(q.str("status")),
		Limit: q.limit(100, MaxListLimit), Offset: q.int("offset", 0, intRange{0, math.MaxInt32}),
		Tenant: caller(r).Tenant}
	if q.err != nil {
		return q.err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	res, err := g.timers.List(r.Context(), p)
	if err != nil {
		return err
	}
	out := api.TimerList{Timers: make([]api.Timer, len(res.Timers)), Pagination: pagination(p.Limit, p.Offset, res.Total)}
	for i := range res.Timers {
		out.Timers[i] = timerOut(&res.Timers[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *timerRoutes) timerGet(w http.ResponseWriter, r *http.Request) error {
	if err := checkPathText("timerId", r.PathValue("timerId"), kindID); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	t, err := g.timers.Get(r.Context(), caller(r).Tenant, r.PathValue("timerId"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, timerOut(t))
	return nil
}

// timerCancel cancels a scheduled timer; 409 once it has fired.
func (g *timerRoutes) timerCancel(w http.ResponseWriter, r *http.Request) error {
	if err := checkPathText("timerId", r.PathValue("timerId"), kindID); err != nil {
		return err
	}
	if err := g.take(r, 1); err != nil {
		return err
	}
	if _, err := g.timers.Cancel(r.Context(), caller(r).Tenant, r.PathValue("timerId")); err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, api.TimerCancelled{Cancelled: true})
	return nil
}
