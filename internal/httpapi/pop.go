package httpapi

import (
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/broker"
)

// pop serves the three pop routes: a queue, one partition of it, or every
// queue of a namespace and/or task. It answers 200 with the pop envelope, or
// 204 with no body when nothing was delivered.
func (g *messageRoutes) pop(w http.ResponseWriter, r *http.Request) error {
	req, err := decodePop(r)
	if err != nil {
		return err
	}
	req.Timeout = g.a.clampPoll(req.Timeout)
	req.Queue, req.Partition = r.PathValue("queue"), r.PathValue("partition")
	for name, v := range map[string]string{"queue": req.Queue, "partition": req.Partition} {
		if v != "" {
			if err := checkPathText(name, v, kindName); err != nil {
				return err
			}
		}
	}
	if req.Queue != "" {
		req.Namespace, req.Task = "", ""
	}
	if req.Wait {
		// The answer may come only when the long poll ends.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(req.Timeout + g.a.writeTimeout))
	}
	res, parked, err := g.broker.StartPop(r.Context(), caller(r), req)
	if err != nil {
		return err
	}
	if parked != nil {
		if g.a.park(w, r, parked) {
			return nil // answered from the parked poll (park.go)
		}
		if res, err = parked.Wait(r.Context()); err != nil {
			return err
		}
	}
	writePop(w, res)
	return nil
}

// writePop writes a pop's answer: 200 with the envelope, or 204 when res is
// nil.
func writePop(w http.ResponseWriter, res *broker.PopResponse) {
	if res == nil {
		noContent(w)
		return
	}
	body := appendPopBody(make([]byte, 0, 512+len(res.Messages)*384), res)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// clampPoll bounds a long poll's wait by QUEEN_MAX_POLL_TIMEOUT_MS: a
// longer timeout is served as the maximum (an SDK asking for more gets an
// empty answer sooner and polls again), never refused.
func (a *adapter) clampPoll(d time.Duration) time.Duration {
	if a.maxPoll > 0 && d > a.maxPoll {
		return a.maxPoll
	}
	return d
}
