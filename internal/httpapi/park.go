package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/service"
)

// Parking is where the connections of long polls wait outside net/http.
//
// A long poll that found nothing may sleep for a minute. Served by net/http
// it holds, for that minute, the connection's 4 KiB reader and 4 KiB writer,
// a 2 KiB response buffer, its handler's goroutine with the stack the look
// grew, and net/http's goroutine watching for the client going away. With
// Parking set, the pop handler instead takes the connection over (hijacks
// it), keeps it in a parkedPoll with one shallow goroutine blocked in a
// one-byte read (which learns that the client left) until the broker wakes
// it, writes the answer itself exactly as net/http would have (see
// appendResponse), and hands the connection back for its next request.
//
// The server (internal/server) implements it: it counts parked connections
// so that its shutdown waits for their answers, and serves the connections
// handed back as if it had just accepted them.
type Parking interface {
	// Park counts c, taken over from net/http, until Resume.
	Park(c net.Conn)
	// Closing reports whether the server is stopping: answers then close
	// their connection, as net/http's do while it shuts down.
	Closing() bool
	// Idle says c was answered and waits for its client's next request;
	// a stopping server may close it then. False when the server is
	// stopping: close c.
	Idle(c net.Conn) bool
	// Resume ends c's parking: the server serves next (c itself, or c with
	// bytes read ahead put back) from its next request on; nil means c was
	// closed.
	Resume(c, next net.Conn)
}

// bufferBeforeChunking is net/http's: an answer whose whole body the
// handler wrote before returning is sent with a Content-Length when it is
// at most this long, and chunked otherwise.
const bufferBeforeChunking = 2048

// aLongTimeAgo is a read deadline that interrupts a pending read now.
var aLongTimeAgo = time.Unix(1, 0)

// parkedPoll is a long poll whose connection was taken over from net/http:
// everything its answer needs and nothing of the request besides.
type parkedPoll struct {
	a      *adapter
	conn   net.Conn
	e      *exchange // ResponseWriter is the recorder once parked
	rec    answerRecorder
	pp     *broker.Parked
	shape  requestShape
	method string
	ahead  []byte // bytes of the client's next request, read while parked

	// How far the answer got, for a panic's recovery (recoverPanic).
	written  bool // the answer's bytes went to the connection (or it was gone)
	finished bool // the request was counted
	resumed  bool // the connection was handed back or closed
}

// requestShape is what of a request decides how its answer is framed and
// whether its connection stays open.
type requestShape struct {
	http11       bool // at least HTTP/1.1: may chunk, says "Connection: close"
	wantsClose   bool // "Connection: close", or HTTP/1.0 without keep-alive
	wants10Alive bool // HTTP/1.0 with "Connection: keep-alive"
}

func shapeOf(r *http.Request) requestShape {
	conn := r.Header.Get("Connection")
	return requestShape{
		http11:       r.ProtoAtLeast(1, 1),
		wantsClose:   r.Close || hasToken(conn, "close"),
		wants10Alive: r.ProtoMajor == 1 && r.ProtoMinor == 0 && hasToken(conn, "keep-alive"),
	}
}

// park takes over the connection of a long poll that must sleep and
// reports whether it did; when it did not (HTTP/2, a request with a body,
// parking off), the handler waits as before. The answer is written later,
// from the parked poll's own goroutine.
func (a *adapter) park(w http.ResponseWriter, r *http.Request, pp *broker.Parked) bool {
	if a.parking == nil || r.ProtoMajor != 1 || (r.Body != nil && r.Body != http.NoBody) {
		return false
	}
	e, ok := w.(*exchange)
	if !ok {
		return false
	}
	conn, brw, err := http.NewResponseController(e.ResponseWriter).Hijack()
	if err != nil {
		return false
	}
	// The headers set so far (request id, CORS) are part of the answer;
	// net/http no longer uses the map once the connection is hijacked.
	k := &parkedPoll{a: a, conn: conn, e: e, rec: answerRecorder{h: w.Header()}, pp: pp, shape: shapeOf(r),
		method: r.Method}
	if n := brw.Reader.Buffered(); n > 0 {
		// A pipelined request arrived with this one: keep its bytes for
		// the server; net/http's buffers go.
		b, _ := brw.Reader.Peek(n)
		k.ahead = append([]byte(nil), b...)
	}
	e.ResponseWriter = &k.rec
	e.parked = true
	a.parking.Park(conn)
	go k.run()
	return true
}

// run sleeps in a one-byte read of the connection, which returns when the
// client goes away (an error), when it sends its next request early (a
// byte, kept for the server), or at the read deadline: the poll's next look,
// or at once when the broker wakes the poll (Notify moves the deadline to
// the past). One goroutine per parked poll, blocked where it costs least.
func (k *parkedPoll) run() {
	defer k.recoverPanic()
	pp, conn := k.pp, k.conn
	// The client's departure is seen by the read, between looks; a look
	// runs to its end, as the first one did.
	ctx := context.Background()
	if len(k.ahead) > 0 {
		// Nothing to read: the next request is here. Wait the plain way.
		res, err := pp.Wait(ctx)
		k.answer(res, err, false)
		return
	}
	pp.Notify(func() { _ = conn.SetReadDeadline(aLongTimeAgo) })
	var b [1]byte
	for {
		_ = conn.SetReadDeadline(time.Now().Add(pp.Sleep()))
		if !pp.Due() {
			n, err := conn.Read(b[:])
			if n == 1 {
				k.ahead = append(k.ahead, b[0])
				_ = conn.SetReadDeadline(time.Time{})
				res, err := pp.Wait(ctx)
				k.answer(res, err, false)
				return
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				// The client went away: nothing was looked at for it.
				pp.Leave()
				k.answer(nil, nil, true)
				return
			}
		}
		res, sleep, err := pp.Look(ctx)
		if !sleep {
			_ = conn.SetReadDeadline(time.Time{})
			k.answer(res, err, false)
			return
		}
	}
}

// answer writes the poll's answer and gives the connection back to the
// server, or closes it. gone says the client went away.
func (k *parkedPoll) answer(res *broker.PopResponse, err error, gone bool) {
	a, e := k.a, k.e
	// The request's context ended when net/http let the connection go;
	// this one carries the exchange as the request's did.
	ctx := context.WithValue(context.Background(), exchangeKey{}, e)
	if err != nil {
		r := (&http.Request{Method: k.method}).WithContext(ctx)
		a.writeError(e, r, e.rt, err, e.rt.Envelope)
	} else {
		writePop(e, res)
	}
	out, closeAfter := appendResponse(nil, k.shape, !a.parking.Closing(), k.rec.status, k.rec.h, k.rec.body)
	k.written = true
	if !gone {
		_ = k.conn.SetWriteDeadline(time.Now().Add(a.writeTimeout))
		if _, werr := k.conn.Write(out); werr != nil {
			closeAfter = true
		}
		_ = k.conn.SetWriteDeadline(time.Time{})
	}
	k.finished = true
	a.finish(ctx, e, k.method)
	if gone || closeAfter || !k.awaitNext() {
		k.resumed = true
		_ = k.conn.Close()
		a.parking.Resume(k.conn, nil)
		return
	}
	k.resumed = true
	a.parking.Resume(k.conn, replayOf(k.conn, k.ahead))
}

// errParkedPanic is the error a parked poll that panicked answers: a 500,
// its detail in the log.
var errParkedPanic = errors.New("panic in a parked long poll (the log has its stack)")

// recoverPanic contains a panic of the parked poll's goroutine, which
// net/http does not watch: logged with the request id and the stack, the
// poll taken off the broker's hub, a 500 answered if nothing was written
// yet, the request counted and the connection closed and handed back. The
// process and every other request go on.
func (k *parkedPoll) recoverPanic() {
	v := recover()
	if v == nil {
		return
	}
	a, e := k.a, k.e
	a.log.Error("panic recovered in a parked long poll", "requestId", e.id, "route", e.rt.Name,
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	// The recovery must not panic the process either.
	service.Protect(a.log, "parked-poll "+e.id, func() {
		k.pp.Leave()
		ctx := context.WithValue(context.Background(), exchangeKey{}, e)
		if !k.written {
			k.written = true
			// Whatever the answer held before the panic goes; the headers
			// set before parking (request id, CORS) stay.
			e.status, k.rec.status, k.rec.body = 0, 0, nil
			for _, h := range []string{"Content-Type", "Content-Length", "Transfer-Encoding"} {
				k.rec.h.Del(h)
			}
			r := (&http.Request{Method: k.method}).WithContext(ctx)
			a.writeError(e, r, e.rt, errParkedPanic, e.rt.Envelope)
			out, _ := appendResponse(nil, k.shape, false, k.rec.status, k.rec.h, k.rec.body)
			_ = k.conn.SetWriteDeadline(time.Now().Add(a.writeTimeout))
			_, _ = k.conn.Write(out)
		}
		if !k.finished {
			k.finished = true
			a.finish(ctx, e, k.method)
		}
	})
	if !k.resumed {
		k.resumed = true
		_ = k.conn.Close()
		a.parking.Resume(k.conn, nil)
	}
}

// awaitNext waits, up to the server's idle timeout as net/http does between
// requests, for the first byte of the client's next request; false when it
// did not come (the caller closes the connection).
func (k *parkedPoll) awaitNext() bool {
	if len(k.ahead) > 0 {
		return true
	}
	if !k.a.parking.Idle(k.conn) {
		return false
	}
	if k.a.idleTimeout > 0 {
		_ = k.conn.SetReadDeadline(time.Now().Add(k.a.idleTimeout))
	}
	var b [1]byte
	n, _ := k.conn.Read(b[:])
	_ = k.conn.SetReadDeadline(time.Time{})
	if n != 1 {
		return false
	}
	k.ahead = append(k.ahead, b[0])
	return true
}

// replayConn is a connection handed back to the server with the bytes of
// its next request that were read while it was parked.
type replayConn struct {
	net.Conn
	ahead []byte
}

// replayOf is c handed back with ahead to be read first. A connection that
// parks again is the replayConn of its previous parking (net/http hijacks
// what it was given): ahead goes in front of what that one still holds,
// instead of one more layer around it, so a keep-alive connection that
// parked ten thousand polls is still read through one layer.
func replayOf(c net.Conn, ahead []byte) net.Conn {
	if rc, ok := c.(*replayConn); ok {
		rc.ahead = append(ahead, rc.ahead...)
		return rc
	}
	return &replayConn{Conn: c, ahead: ahead}
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// answerRecorder keeps a parked poll's answer until it is framed.
type answerRecorder struct {
	h      http.Header
	status int
	body   []byte
}

func (w *answerRecorder) Header() http.Header { return w.h }

func (w *answerRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *answerRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, b...)
	return len(b), nil
}

// appendResponse appends the HTTP/1.x answer net/http writes for a request
// of shape rs whose handler wrote status, h and body before returning (see
// net/http's chunkWriter.writeHeader; the request has no body and is not a
// HEAD), and reports whether the connection must close after it.
// keepAlives is false while the server shuts down.
func appendResponse(b []byte, rs requestShape, keepAlives bool, status int, h http.Header, body []byte) ([]byte, bool) {
	if status == 0 {
		status = http.StatusOK
	}
	bodyAllowed := !(status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified)
	hasTE := h.Get("Transfer-Encoding") != ""
	var contentLength, contentType, connection, transferEncoding string
	hasCL := false
	if bodyAllowed && !hasTE && h.Get("Content-Length") == "" && len(body) <= bufferBeforeChunking {
		contentLength, hasCL = strconv.Itoa(len(body)), true
	} else if h.Get("Content-Length") != "" {
		hasCL = true
	}
	closeAfter := false
	if rs.wants10Alive && (hasCL || !bodyAllowed) {
		if _, set := h["Connection"]; !set {
			connection = "keep-alive"
		}
	} else if !rs.http11 || rs.wantsClose {
		closeAfter = true
	}
	if h.Get("Connection") == "close" || !keepAlives {
		closeAfter = true
	}
	if bodyAllowed {
		_, haveType := h["Content-Type"]
		if !haveType && !hasTE && h.Get("Content-Encoding") == "" && len(body) > 0 {
			contentType = http.DetectContentType(body)
		}
	} else {
		if status == http.StatusNotModified {
			h.Del("Content-Type")
		}
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
	}
	date := time.Now().UTC().AppendFormat(make([]byte, 0, len(http.TimeFormat)), http.TimeFormat)
	chunked := false
	switch {
	case !bodyAllowed || hasCL:
		h.Del("Transfer-Encoding")
	case rs.http11:
		chunked, transferEncoding = true, "chunked"
		h.Del("Transfer-Encoding")
	default:
		closeAfter = true
		h.Del("Transfer-Encoding")
	}
	if closeAfter && (!keepAlives || !hasToken(h.Get("Connection"), "close")) {
		h.Del("Connection")
		if rs.http11 {
			connection = "close"
		}
	}

	if rs.http11 {
		b = append(b, "HTTP/1.1 "...)
	} else {
		b = append(b, "HTTP/1.0 "...)
	}
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)
	var sb strings.Builder
	_ = h.Write(&sb) // sorted, values cleaned: net/http's own writer
	b = append(b, sb.String()...)
	b = append(b, "Date: "...)
	b = append(b, date...)
	b = append(b, "\r\n"...)
	if contentLength != "" {
		b = append(b, "Content-Length: "+contentLength+"\r\n"...)
	}
	for _, kv := range [...][2]string{{"Content-Type", contentType}, {"Connection", connection}, {"Transfer-Encoding", transferEncoding}} {
		if kv[1] != "" {
			b = append(b, kv[0]+": "+kv[1]+"\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	if !bodyAllowed {
		return b, closeAfter
	}
	if chunked {
		b = strconv.AppendInt(b, int64(len(body)), 16)
		b = append(b, "\r\n"...)
		b = append(b, body...)
		return append(b, "\r\n0\r\n\r\n"...), closeAfter
	}
	return append(b, body...), closeAfter
}

// hasToken reports whether token is one of the comma-separated elements of
// header value v, case-insensitively (net/http's rule).
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	if v == token {
		return true
	}
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !isTokenBoundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !isTokenBoundary(v[end]) {
			continue
		}
		if s := v[sp : sp+len(token)]; utf8.ValidString(s) && strings.EqualFold(s, token) {
			return true
		}
	}
	return false
}

func isTokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }
