package server

import (
	"container/list"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// connLimiter bounds the connections the broker holds open, and makes
// those that do nothing give way to new ones when the bound is near.
//
// netutil.LimitListener alone let anyone fill the cap without a token: one
// GET /health per connection followed by silence held a slot for the idle
// timeout (two minutes), and connecting without sending a byte held one
// for the read-header timeout; a client arriving then waited in the listen
// backlog. net/http closes neither early. So every connection is tracked
// by state (ConnState, and the parked polls' own idle wait), and once the
// open connections reach the high-water mark (nine tenths of the cap):
//   - the oldest idle keep-alives are closed, enough to bring the count
//     back under the mark, so there is room for whoever comes next;
//   - connections that have not sent a request yet get a short header
//     timeout (pressureHeaderTimeout) instead of the read-header timeout.
//
// At the cap itself, Accept closes the oldest idle connection rather than
// leave a new one waiting. A connection in a request, or holding a parked
// long poll, is never closed for room.
type connLimiter struct {
	max, high     int
	headerTimeout time.Duration // for silent connections under pressure
	log           *slog.Logger
	shed          *prometheus.CounterVec // closed for room, by reason

	mu       sync.Mutex
	open     int       // connections accepted and not closed, plus the slot reserved for the next
	reserved bool      // Accept holds a slot for a connection not accepted yet
	idle     list.List // *trackedConn, oldest idle first
	silent   list.List // *trackedConn, accepted and no request yet, oldest first
	// handed maps a connection handed back after a parked poll, as
	// net/http sees it, to the tracked one under it: wrapping it once
	// more per hand-back would deepen every read of a long-lived
	// connection by a layer per poll.
	handed   map[net.Conn]*trackedConn
	timer    *time.Timer
	timerAt  time.Time // when timer fires; zero: not armed
	pressed  bool      // at or over the mark since the last look (for the log)
	warnedAt time.Time // last warning of pressure: at most one a minute
	freed    chan struct{}
	done     chan struct{}
	stopped  bool
}

// Shed reasons (the label of queen_http_connections_shed_total).
const (
	shedIdle   = "idle"
	shedSilent = "silent"
)

// pressureHeaderTimeout is how long a connection has, near the cap, to
// send its first request: long enough for a TLS handshake and a request
// from a client across the world, far shorter than the read-header
// timeout an idle-connection flood would otherwise enjoy.
const pressureHeaderTimeout = time.Second

func newConnLimiter(maxConns int, readHeaderTimeout time.Duration, log *slog.Logger, reg prometheus.Registerer) *connLimiter {
	l := &connLimiter{
		max: maxConns, high: max(1, maxConns-maxConns/10),
		headerTimeout: min(readHeaderTimeout, pressureHeaderTimeout), log: log,
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_http_connections_shed_total",
			Help: "Connections closed to make room near QUEEN_HTTP_MAX_CONNECTIONS: idle keep-alives, and connections that sent no request in time.",
		}, []string{"reason"}),
		handed: make(map[net.Conn]*trackedConn),
		freed:  make(chan struct{}, 1), done: make(chan struct{}),
	}
	l.shed.WithLabelValues(shedIdle)
	l.shed.WithLabelValues(shedSilent)
	reg.MustRegister(l.shed, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "queen_http_connections_open",
		Help: "Connections the broker holds open (parked long polls included); at most QUEEN_HTTP_MAX_CONNECTIONS.",
	}, func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.reserved {
			return float64(l.open - 1)
		}
		return float64(l.open)
	}))
	return l
}

// connPhase is where a tracked connection is.
type connPhase uint8

const (
	phaseSilent connPhase = iota // accepted, no request yet
	phaseBusy                    // in a request, or a parked long poll
	phaseIdle                    // between requests
	phaseGone                    // chosen for closing, or closed
)

// trackedConn is an accepted connection as the limiter sees it: it frees
// its slot on Close. The fields below Conn are guarded by the limiter's mu.
type trackedConn struct {
	net.Conn
	l      *connLimiter
	phase  connPhase
	since  time.Time     // accepted, or idle since
	elem   *list.Element // in l.idle or l.silent; nil otherwise
	handed net.Conn      // its key in l.handed; nil if never handed back
	once   sync.Once
}

// CloseWrite half-closes the connection, as the lingering close after a
// refusal does (see lingerConn).
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection and frees its slot.
func (c *trackedConn) Close() error {
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		l.detachLocked(c)
		c.phase = phaseGone
		if c.handed != nil {
			delete(l.handed, c.handed)
			c.handed = nil
		}
		l.open--
		l.mu.Unlock()
		select {
		case l.freed <- struct{}{}:
		default:
		}
	})
	return c.Conn.Close()
}

// listener wraps ln: its Accept holds to the cap.
func (l *connLimiter) listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, l: l}
}

type limitedListener struct {
	net.Listener
	l *connLimiter
}

// Accept waits for a free slot, closing the oldest idle connection at the
// cap rather than waiting, and then for a connection.
func (ll *limitedListener) Accept() (net.Conn, error) {
	l := ll.l
	if err := l.reserve(); err != nil {
		return nil, err
	}
	c, err := ll.Listener.Accept()
	l.mu.Lock()
	l.reserved = false
	if err != nil {
		l.open--
		l.mu.Unlock()
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l, phase: phaseSilent, since: time.Now()}
	tc.elem = l.silent.PushBack(tc)
	victims := l.shedLocked(time.Now())
	l.mu.Unlock()
	l.closeAll(victims)
	return tc, nil
}

// Close closes the listener and ends a wait for a slot.
func (ll *limitedListener) Close() error {
	l := ll.l
	l.mu.Lock()
	if !l.stopped {
		l.stopped = true
		if l.timer != nil {
			l.timer.Stop()
		}
		close(l.done)
	}
	l.mu.Unlock()
	return ll.Listener.Close()
}

// reserve takes a slot for the next connection.
func (l *connLimiter) reserve() error {
	for {
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			return net.ErrClosed
		}
		if l.open < l.max {
			l.open++
			l.reserved = true
			l.mu.Unlock()
			return nil
		}
		// At the cap: an idle connection gives way now; silent ones when
		// their short timeout ends (shedLocked arms the timer).
		var victims []shedding
		if e := l.idle.Front(); e != nil {
			victims = append(victims, l.chooseLocked(e.Value.(*trackedConn), shedIdle))
		} else {
			victims = l.shedLocked(time.Now())
		}
		l.mu.Unlock()
		if len(victims) > 0 {
			l.closeAll(victims)
			continue
		}
		select {
		case <-l.freed:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

type shedding struct {
	c      *trackedConn
	reason string
}

// chooseLocked takes c out of the lists so that no one picks it twice.
func (l *connLimiter) chooseLocked(c *trackedConn, reason string) shedding {
	l.detachLocked(c)
	c.phase = phaseGone
	return shedding{c, reason}
}

func (l *connLimiter) detachLocked(c *trackedConn) {
	if c.elem == nil {
		return
	}
	if c.phase == phaseIdle {
		l.idle.Remove(c.elem)
	} else {
		l.silent.Remove(c.elem)
	}
	c.elem = nil
}

// shedLocked chooses what to close when the open connections are at or
// over the mark: the oldest idle ones down to under the mark, and every
// silent one past its short timeout; it arms the timer for the next.
func (l *connLimiter) shedLocked(now time.Time) []shedding {
	if l.open < l.high {
		l.pressed = false
		return nil
	}
	if !l.pressed {
		// Load hovering at the mark crosses it often: say it once a
		// minute at most (queen_http_connections_shed_total counts).
		l.pressed = true
		if now.Sub(l.warnedAt) >= time.Minute {
			l.warnedAt = now
			l.log.Warn("connections near the cap: idle and silent connections give way to new ones",
				"open", l.open, "max", l.max, "highWater", l.high)
		}
	}
	var out []shedding
	for n := l.open; n >= l.high; n-- {
		e := l.idle.Front()
		if e == nil {
			break
		}
		out = append(out, l.chooseLocked(e.Value.(*trackedConn), shedIdle))
	}
	for e := l.silent.Front(); e != nil; e = l.silent.Front() {
		c := e.Value.(*trackedConn)
		if due := c.since.Add(l.headerTimeout); due.After(now) {
			l.armLocked(due)
			break
		}
		out = append(out, l.chooseLocked(c, shedSilent))
	}
	return out
}

// armLocked makes the timer look again at due, unless it will sooner.
func (l *connLimiter) armLocked(due time.Time) {
	if l.stopped || !l.timerAt.IsZero() && !l.timerAt.After(due) {
		return
	}
	l.timerAt = due
	d := time.Until(due)
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.tick)
	} else {
		l.timer.Reset(d)
	}
}

func (l *connLimiter) tick() {
	l.mu.Lock()
	l.timerAt = time.Time{}
	victims := l.shedLocked(time.Now())
	l.mu.Unlock()
	l.closeAll(victims)
}

func (l *connLimiter) closeAll(victims []shedding) {
	for _, v := range victims {
		l.shed.WithLabelValues(v.reason).Inc()
		l.log.Debug("connection closed for room", "reason", v.reason, "remote", v.c.RemoteAddr().String())
		_ = v.c.Close()
	}
}

// connState is the http.Server's ConnState hook.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateActive, http.StateHijacked:
		l.busy(c)
	case http.StateIdle:
		l.idled(c)
	}
	// StateNew: Accept (or the hand-back) has placed it; StateClosed: its
	// Close freed the slot.
}

// busy says c is in a request (or a parked poll): never closed for room.
func (l *connLimiter) busy(c net.Conn) {
	l.mu.Lock()
	if tc := l.trackedLocked(c); tc != nil && tc.phase != phaseGone {
		l.detachLocked(tc)
		tc.phase = phaseBusy
	}
	l.mu.Unlock()
}

// idled says c waits for its client's next request.
func (l *connLimiter) idled(c net.Conn) {
	l.mu.Lock()
	if tc := l.trackedLocked(c); tc != nil && tc.phase != phaseGone {
		l.detachLocked(tc)
		tc.phase = phaseIdle
		tc.since = time.Now()
		tc.elem = l.idle.PushBack(tc)
	}
	l.mu.Unlock()
}

// handBack says next, the connection c as it is served again after a
// parked long poll, is in a request (the next one's first bytes are read):
// net/http sees next as new, but it is the tracked connection c was.
func (l *connLimiter) handBack(c, next net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tc := l.trackedLocked(c)
	if tc == nil || tc.phase == phaseGone {
		return
	}
	l.detachLocked(tc)
	tc.phase = phaseBusy
	if tc.handed != nil {
		delete(l.handed, tc.handed)
	}
	tc.handed = next
	l.handed[next] = tc
}

// trackedLocked finds the tracked connection under c, as net/http sees it:
// a *tls.Conn, a lingerConn, a connection handed back.
func (l *connLimiter) trackedLocked(c net.Conn) *trackedConn {
	for c != nil {
		switch x := c.(type) {
		case *trackedConn:
			return x
		case *tls.Conn:
			c = x.NetConn()
		case *lingerConn:
			c = x.Conn
		default:
			return l.handed[c]
		}
	}
	return nil
}
