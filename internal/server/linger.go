package server

import (
	"bytes"
	"net"
	"sync/atomic"
	"time"
)

// An oversized header block (a 100 KB token, 10,000 headers) or URL is
// refused by net/http with a 431 written straight to the connection, which
// is then closed while the client may still be sending: the unread bytes
// make the kernel answer with a reset, and a client that writes its whole
// request before reading (Python's http.client, Node's fetch) sees
// ECONNRESET instead of the answer. lingerConn does what nginx's lingering
// close does: after that answer it stops writing, reads and discards what
// the client still sends, bounded in time and bytes, and only then closes.
// It also tells the two refusals apart: a request line that never ended
// within the limit is answered 414, a header block 431.

// Bounds of the discard after a refusal: a slow client cannot hold the
// connection longer than lingerTime, a fast one cannot make the broker read
// more than lingerBytes, and a quiet one is let go after lingerIdle.
const (
	lingerTime  = 5 * time.Second
	lingerIdle  = time.Second
	lingerBytes = 16 << 20
)

// refusedPrefix is how net/http's own 431 begins; a handler never writes
// to the connection directly, so only the server's refusal starts so.
var refusedPrefix = []byte("HTTP/1.1 431 ")

const uriTooLong = "414 URI Too Long"

var uriTooLongAnswer = []byte("HTTP/1.1 " + uriTooLong +
	"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" + uriTooLong)

// lingerListener wraps a listener's connections in lingerConns.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &lingerConn{Conn: c}
	lc.lineOpen.Store(true)
	return lc, nil
}

type lingerConn struct {
	net.Conn
	// lineOpen: the current request's first line has not ended yet. Set
	// when a response is written (the next request starts), cleared by the
	// first line break read after that.
	lineOpen atomic.Bool
	refused  atomic.Bool
}

func (c *lingerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.lineOpen.Load() && bytes.IndexByte(p[:n], '\n') >= 0 {
		c.lineOpen.Store(false)
	}
	return n, err
}

func (c *lingerConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, refusedPrefix) {
		c.refused.Store(true)
		if c.lineOpen.Load() {
			if _, err := c.Conn.Write(uriTooLongAnswer); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		return c.Conn.Write(p)
	}
	n, err := c.Conn.Write(p)
	c.lineOpen.Store(true)
	return n, err
}

// CloseWrite half-closes, as net/http does after its refusal, so the client
// reads the answer and then the end of it.
func (c *lingerConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection; after a refusal it first discards what the
// client still sends, within the bounds.
func (c *lingerConn) Close() error {
	if c.refused.Swap(false) {
		c.discard()
	}
	return c.Conn.Close()
}

func (c *lingerConn) discard() {
	_ = c.CloseWrite()
	end := time.Now().Add(lingerTime)
	buf := make([]byte, 32<<10)
	for read := 0; read < lingerBytes; {
		deadline := time.Now().Add(lingerIdle)
		if deadline.After(end) {
			deadline = end
		}
		_ = c.Conn.SetReadDeadline(deadline)
		n, err := c.Conn.Read(buf)
		read += n
		if err != nil || !time.Now().Before(end) {
			return
		}
	}
}
