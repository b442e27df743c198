package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/timers"
)

// timerRoutes serve timers (rules and the timer service in package timers).
func (a *api) timerRoutes() []route {
	return []route{
		r(AccessWriteOnly, "POST", "/api/v1/timers", "timers_schedule", a.gated(featureTimers, a.timersSchedule)),
		r(AccessRead, "GET", "/api/v1/timers", "timers_list", a.gated(featureTimers, a.timersList)),
		r(AccessRead, "GET", "/api/v1/timers/{timerId}", "timer_get", a.gated(featureTimers, a.timerGet)),
		r(AccessReadWrite, "DELETE", "/api/v1/timers/{timerId}", "timer_cancel", a.gated(featureTimers, a.timerCancel)),
	}
}

type timerItemJSON struct {
	DelaySeconds  *float64        `json:"delaySeconds"`
	FireAt        *string         `json:"fireAt"`
	Partition     *string         `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	Queue         *string         `json:"queue"`
	TransactionID *string         `json:"transactionId"`
}

// DecodeTimers parses a POST /api/v1/timers body.
func DecodeTimers(body []byte) ([]timers.Request, error) {
	var b struct {
		Items *[]timerItemJSON `json:"items"`
	}
	if err := unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Items == nil {
		return nil, missing("items")
	}
	if len(*b.Items) == 0 {
		return nil, badRequest("items array cannot be empty")
	}
	out := make([]timers.Request, len(*b.Items))
	for i := range *b.Items {
		it, path := &(*b.Items)[i], elem("items", i)
		if state := presence(it.Queue); state != "" {
			return nil, fieldError(path, "queue", state, "")
		}
		if len(it.Payload) == 0 {
			return nil, fieldError(path, "payload", "missing", "null is a valid payload")
		}
		req := timers.Request{Queue: *it.Queue, Partition: deref(it.Partition), Payload: compactJSON(it.Payload),
			TransactionID: deref(it.TransactionID)}
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

type timerScheduledJSON struct {
	Index         int     `json:"index"`
	TimerID       *string `json:"timer_id"`
	TransactionID string  `json:"transaction_id"`
	QueueName     string  `json:"queueName"`
	FireAt        *string `json:"fireAt"`
	Status        string  `json:"status"`
	Error         string  `json:"error,omitempty"`
}

// timersSchedule answers 201 with one verdict per item, in request order
// (the casing mirrors a push's).
func (a *api) timersSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	reqs, err := DecodeTimers(body)
	if err != nil {
		return err
	}
	if err := a.timers.Check(reqs); err != nil {
		return err
	}
	if err := a.take(r, len(reqs)); err != nil {
		return err
	}
	res, err := a.timers.Schedule(r.Context(), caller(r), reqs)
	if err != nil {
		return err
	}
	out := make([]timerScheduledJSON, len(res))
	for i, s := range res {
		j := timerScheduledJSON{Index: i, QueueName: reqs[i].Queue, TransactionID: s.Timer.TransactionID}
		switch {
		case s.Error != "":
			j.Status, j.Error = "failed", s.Error
		case s.Duplicate:
			j.Status = "duplicate"
		default:
			j.Status = "scheduled"
		}
		if s.Timer.ID != "" {
			j.TimerID, j.FireAt = &s.Timer.ID, tsOrNull(s.Timer.FireAt)
		}
		out[i] = j
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

type timerJSON struct {
	ID            string  `json:"id"`
	Queue         string  `json:"queue"`
	Partition     string  `json:"partition"`
	TransactionID string  `json:"transactionId"`
	FireAt        string  `json:"fireAt"`
	Status        string  `json:"status"`
	MessageID     *string `json:"messageId"`
	CreatedAt     string  `json:"createdAt"`
	FiredAt       *string `json:"firedAt"`
	CancelledAt   *string `json:"cancelledAt,omitempty"`
	Error         string  `json:"error,omitempty"`
}

func timerOut(t *store.Timer) timerJSON {
	j := timerJSON{ID: t.ID, Queue: t.Queue, Partition: t.Partition, TransactionID: t.TransactionID,
		FireAt: timestamp(t.FireAt), Status: string(t.Status), CreatedAt: timestamp(t.CreatedAt), Error: t.Error}
	switch t.Status {
	case store.TimerFired:
		j.MessageID, j.FiredAt = nullable(t.MessageID), tsOrNull(t.FinishedAt)
	case store.TimerCancelled:
		j.CancelledAt = tsOrNull(t.FinishedAt)
	case store.TimerFailed:
		j.FiredAt = tsOrNull(t.FinishedAt)
	}
	return j
}

func (a *api) timersList(w http.ResponseWriter, r *http.Request) error {
	q := parseQuery(r)
	p := &store.TimerListParams{Queue: q.name("queue"), Status: store.TimerStatus(q.str("status")),
		Limit: q.int("limit", 100, intRange{1, 1000}), Offset: q.int("offset", 0, intRange{0, math.MaxInt32}),
		Tenant: caller(r).Tenant}
	if q.err != nil {
		return q.err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	res, err := a.timers.List(r.Context(), p)
	if err != nil {
		return err
	}
	out := struct {
		Timers     []timerJSON    `json:"timers"`
		Pagination map[string]int `json:"pagination"`
	}{Timers: make([]timerJSON, len(res.Timers)),
		Pagination: map[string]int{"limit": p.Limit, "offset": p.Offset, "total": res.Total}}
	for i := range res.Timers {
		out.Timers[i] = timerOut(&res.Timers[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) timerGet(w http.ResponseWriter, r *http.Request) error {
	if err := checkPathText("timerId", r.PathValue("timerId"), kindID); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	t, err := a.timers.Get(r.Context(), caller(r).Tenant, r.PathValue("timerId"))
	if err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, timerOut(t))
	return nil
}

// timerCancel cancels a scheduled timer; 409 once it has fired.
func (a *api) timerCancel(w http.ResponseWriter, r *http.Request) error {
	if err := checkPathText("timerId", r.PathValue("timerId"), kindID); err != nil {
		return err
	}
	if err := a.take(r, 1); err != nil {
		return err
	}
	if _, err := a.timers.Cancel(r.Context(), caller(r).Tenant, r.PathValue("timerId")); err != nil {
		return entity(err)
	}
	writeJSON(w, http.StatusOK, map[string]bool{"cancelled": true})
	return nil
}
