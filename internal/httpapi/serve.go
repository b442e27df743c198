package httpapi

import (
	"net/http"
	"strconv"
	"time"
)

// exchange is the adapter's state of one request: the response writer that
// records the status.
type exchange struct {
	http.ResponseWriter
	status int
}

func (e *exchange) WriteHeader(code int) {
	if e.status == 0 {
		e.status = code
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *exchange) Write(b []byte) (int, error) {
	if e.status == 0 {
		e.status = http.StatusOK
	}
	return e.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *exchange) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// serve adapts a route's handler to net/http: it caps the body, runs the
// handler, answers the error it returns, and counts the request under the
// route's name. Its cost is per request, never per item.
func (a *api) serve(rt route) http.Handler {
	name := rt.Name
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		e := &exchange{ResponseWriter: w}
		var err error
		if r.ContentLength > a.maxBody {
			// Refused before the handler runs, unread.
			err = &http.MaxBytesError{Limit: a.maxBody}
		} else {
			if r.Body != nil && r.Body != http.NoBody {
				// The connection's own writer: MaxBytesReader tells it to
				// close the connection after the answer.
				r.Body = http.MaxBytesReader(w, r.Body, a.maxBody)
			}
			err = rt.handler(e, r)
		}
		if err != nil {
			a.writeError(e, r, rt, err)
		}
		if e.status == 0 {
			e.status = http.StatusOK
		}
		a.metrics.Request(name, statusCode(e.status), time.Since(start))
	})
}

// statusCodes holds the decimal text of every status code, so that counting
// a request does not format one.
var statusCodes = func() (s [600]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

func statusCode(code int) string {
	if code >= 0 && code < len(statusCodes) {
		return statusCodes[code]
	}
	return strconv.Itoa(code)
}
