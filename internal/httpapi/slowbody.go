package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/queen-go/queen/api"
)

// errSlowBody ends a request whose body stopped arriving, or arrives too
// slowly: 408, and the connection is closed.
var errSlowBody = api.ErrBodyTooSlow

// slowBody bounds how long a body may take: every read must bring bytes
// within idle, and once idle has passed since the request began the body
// must have averaged minRate bytes per second. Without it a client sending
// headers and then a byte a second would hold a connection, a goroutine and
// a file descriptor for as long as it liked.
type slowBody struct {
	body    io.ReadCloser
	rc      *http.ResponseController
	start   time.Time
	idle    time.Duration
	minRate int64 // bytes per second; <= 0: no minimum
	read    int64
	done    bool
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.done {
		return b.body.Read(p)
	}
	now := time.Now()
	if elapsed := now.Sub(b.start); b.minRate > 0 && elapsed > b.idle &&
		float64(b.read) < float64(b.minRate)*elapsed.Seconds() {
		return 0, errSlowBody
	}
	_ = b.rc.SetReadDeadline(now.Add(b.idle))
	n, err := b.body.Read(p)
	b.read += int64(n)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, errSlowBody
	case err != nil:
		// The body is over (or failed): lift the deadline, which would
		// otherwise fire during a long handler and, through the server's
		// check for a vanished client, cancel the request.
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *slowBody) Close() error { return b.body.Close() }
