package server

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/httpapi"
)

// DefaultHTTP2MaxStreams is the streams one HTTP/2 connection may have open
// at once; Go's default, 250, let four connections hold 1000 long polls
// under a cap of five connections.
const DefaultHTTP2MaxStreams = 100

// inFlight bounds the requests being handled at once, HTTP/2 streams
// included: the connection cap alone bounds HTTP/1.1, which has one request
// in flight per connection, but each HTTP/2 connection carries up to
// QUEEN_HTTP2_MAX_CONCURRENT_STREAMS.
//
// The first request of a connection is always let in: its connection's
// slot already bounds it, and so one client multiplexing a flood of
// streams cannot lock out every other client. Every further concurrent
// request on the same connection (an HTTP/2 stream beside another) is let
// in only while fewer than max requests are in flight broker-wide;
// otherwise it is answered 503 with Retry-After, and the client's other
// streams go on. A long poll counts while its handler waits (HTTP/2, or a
// poll not parked); a parked HTTP/1.1 poll has left its handler and is
// bounded by its connection's slot instead.
type inFlight struct {
	max     int64
	n       atomic.Int64
	next    http.Handler
	refused prometheus.Counter
}

func newInFlight(maxRequests int, next http.Handler, reg prometheus.Registerer) *inFlight {
	f := &inFlight{max: int64(maxRequests), next: next,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_http_requests_refused_busy_total",
			Help: "Requests answered 503 because QUEEN_HTTP_MAX_IN_FLIGHT requests were in flight (further HTTP/2 streams of a connection).",
		})}
	reg.MustRegister(f.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "queen_http_requests_in_flight",
		Help: "Requests being handled (HTTP/2 streams included; parked long polls excluded).",
	}, func() float64 { return float64(f.n.Load()) }))
	return f
}

// busyRetryAfter is the Retry-After of the 503, in seconds.
const busyRetryAfter = 1

// connRequests counts the requests in flight on one connection.
type connRequests struct{ n atomic.Int32 }

type connRequestsKey struct{}

// connContext is the http.Server's ConnContext hook: each connection's
// requests see its counter.
func connContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connRequestsKey{}, new(connRequests))
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	own := int32(1)
	if cr, ok := r.Context().Value(connRequestsKey{}).(*connRequests); ok {
		own = cr.n.Add(1)
		defer cr.n.Add(-1)
	}
	total := f.n.Add(1)
	defer f.n.Add(-1)
	if own > 1 && total > f.max {
		f.refused.Inc()
		e := api.ErrBusy.WithRetryAfter(busyRetryAfter)
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		httpapi.QueenEnvelope.Write(w, e)
		return
	}
	f.next.ServeHTTP(w, r)
}
