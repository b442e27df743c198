package httpapi

import (
	"net/http"
	"time"
)

// pop serves the three pop routes: a queue, one partition of it, or every
// queue of a namespace and/or task. It answers 200 with the pop envelope, or
// 204 with no body when nothing was delivered.
func (a *api) pop(w http.ResponseWriter, r *http.Request) error {
	req, err := decodePop(r)
	if err != nil {
		return err
	}
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
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(req.Timeout + a.writeTimeout))
	}
	res, err := a.broker.Pop(r.Context(), caller(r), req)
	if err != nil {
		return err
	}
	if res == nil {
		noContent(w)
		return nil
	}
	body := appendPopBody(make([]byte, 0, 512+len(res.Messages)*384), res)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}
