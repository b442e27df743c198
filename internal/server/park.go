package server

import (
	"context"
	"errors"
	"net"
	"runtime/debug"
	"sync"
	"time"
)

// parkLot is the server's side of httpapi.Parking: it counts the
// connections of long polls taken off net/http, so that Shutdown waits for
// their answers, and gives the connections handed back to the HTTP server
// through its listener (see listener), which serves them like accepted ones.
type parkLot struct {
	mu      sync.Mutex
	conns   map[net.Conn]bool // parked → answered and idle, waiting for the next request
	closing bool
	drained chan struct{} // closed once closing and no connection is left

	back   chan net.Conn // handed back, taken by the listener's Accept
	closed chan struct{} // closed with the listener: nothing takes from back any more
	once   sync.Once

	// After a burst of parking (see settle).
	base    int         // connections parked at the last collection, or fewer since
	armedAt int         // connections parked when the settle timer was armed
	settleT *time.Timer // nil when not armed
	collect func()      // debug.FreeOSMemory; tests may count calls instead

	// conns learns when a parked connection waits idle for its next
	// request (it may then be closed for room) and when it is handed back
	// in a request; nil in tests of the lot alone.
	limiter *connLimiter
}

// A rise of burstParks parked connections, followed by burstQuiet in which
// their number grows by less than 1 %, is a parking burst (clients
// reconnecting after a restart, a fleet of consumers starting): see settle.
const (
	burstParks = 1000
	burstQuiet = time.Second
)

func newParkLot() *parkLot {
	return &parkLot{conns: make(map[net.Conn]bool), drained: make(chan struct{}), back: make(chan net.Conn),
		closed: make(chan struct{}), collect: debug.FreeOSMemory}
}

// Park implements httpapi.Parking.
func (p *parkLot) Park(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = false
	if n := len(p.conns); n >= p.base+burstParks && p.settleT == nil {
		p.armedAt = n
		p.settleT = time.AfterFunc(burstQuiet, p.settle)
	}
}

// settle runs once a parking burst is over. Parking thousands of polls
// at once leaves behind the garbage of their requests (net/http's buffers,
// the handlers' grown stacks): nearly half the process's memory, which Go
// would collect only at its next cycle, up to two minutes later with
// nothing else allocating, and return to the system later still. One
// collection that also returns the free memory costs a few tens of
// milliseconds once per burst, and a broker holding 10,000 parked polls
// then stays well under half the memory it would otherwise show.
func (p *parkLot) settle() {
	p.mu.Lock()
	n := len(p.conns)
	if n > p.armedAt+p.armedAt/100 {
		p.armedAt = n // still parking
		p.settleT.Reset(burstQuiet)
		p.mu.Unlock()
		return
	}
	p.settleT = nil
	p.base = n
	closing := p.closing
	p.mu.Unlock()
	if !closing {
		p.collect()
	}
}

// Closing implements httpapi.Parking.
func (p *parkLot) Closing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// Idle implements httpapi.Parking.
func (p *parkLot) Idle(c net.Conn) bool {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return false
	}
	p.conns[c] = true
	p.mu.Unlock()
	if p.limiter != nil {
		p.limiter.idled(c)
	}
	return true
}

// Resume implements httpapi.Parking. While the server stops, a connection
// is closed instead of served again, as net/http closes its idle ones.
func (p *parkLot) Resume(c, next net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.base = min(p.base, len(p.conns))
	closing := p.closing
	if closing && len(p.conns) == 0 {
		p.drainedLocked()
	}
	p.mu.Unlock()
	if next == nil {
		return
	}
	if closing {
		_ = c.Close()
		return
	}
	if p.limiter != nil {
		p.limiter.handBack(c, next)
	}
	select {
	case p.back <- next:
	case <-p.closed:
		_ = c.Close()
	}
}

func (p *parkLot) drainedLocked() {
	select {
	case <-p.drained:
	default:
		close(p.drained)
	}
}

// shutdown closes the idle connections and waits until every parked poll
// was answered (the broker stopping wakes them) and its connection closed;
// when ctx ends first, it closes the rest.
func (p *parkLot) shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	var idle []net.Conn
	for c, isIdle := range p.conns {
		if isIdle {
			idle = append(idle, c)
		}
	}
	if len(p.conns) == 0 {
		p.drainedLocked()
	}
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.Close() // its goroutine's read fails, and it resumes with nil
	}
	select {
	case <-p.drained:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	return ctx.Err()
}

// listener wraps ln: its Accept also returns the connections handed back.
func (p *parkLot) listener(ln net.Listener) net.Listener {
	return &lotListener{Listener: ln, lot: p, accepted: make(chan accepted)}
}

type lotListener struct {
	net.Listener
	lot      *parkLot
	start    sync.Once
	accepted chan accepted
}

type accepted struct {
	c   net.Conn
	err error
}

// Accept returns the next connection accepted by the wrapped listener or
// handed back after a parked poll. The wrapped listener's Accept runs on a
// goroutine of its own, since one Accept call must wait for both.
func (l *lotListener) Accept() (net.Conn, error) {
	l.start.Do(func() { go l.acceptLoop() })
	select {
	case c := <-l.lot.back:
		return c, nil
	case a := <-l.accepted:
		return a.c, a.err
	case <-l.lot.closed:
		return nil, net.ErrClosed
	}
}

func (l *lotListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.lot.closed:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Close closes the wrapped listener; connections handed back from now on
// are closed.
func (l *lotListener) Close() error {
	l.lot.once.Do(func() { close(l.lot.closed) })
	return l.Listener.Close()
}
