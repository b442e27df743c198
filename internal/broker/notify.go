package broker

import (
	"container/list"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// anyQueue is the hub key of namespace/task pops: they do not know in
// advance which queue will fill, so every kick wakes all of them.
const anyQueue = "\x00any"

// wakeCause says why a parked poll was woken.
type wakeCause uint8

const (
	wokenByPush     wakeCause = iota + 1 // a kick: push, released lease, control operation, notification
	wokenByDeadline                      // a lease expiring or a delayed message coming due
	wokenByPass                          // handed on by a poll that could not use its wake-up
)

func (c wakeCause) String() string {
	switch c {
	case wokenByDeadline:
		return "deadline"
	case wokenByPass:
		return "pass"
	default:
		return "push"
	}
}

// hub parks long-poll pops and wakes as few of them as a change needs.
//
// Polls of one queue wait per consumer group, oldest first: a kick saying n
// messages arrived wakes the n oldest polls of every group (each group reads
// every message), so a push of one message costs one store look per group,
// not one per parked poll. Polls pinned to a partition, and namespace/task
// polls, cannot tell from a kick whether it concerns them: every kick of
// their queue (any kick, for namespace/task polls) wakes them all.
//
// Per group the hub also keeps the earliest known deadline at which a lane
// may become poppable without a push (a lease expiring, a retry delay, a
// window buffer, a delayed message coming due), learnt from the store by the
// polls that park and from the leases this broker grants; one timer per
// group wakes the oldest poll then.
//
// A wake-up is a token in the poll's 1-buffered channel, sent when the poll
// is taken off its list; a poll holds at most one. A poll that leaves with an
// unused token (its client went away, its deadline passed, it found messages
// the token was perhaps not for) hands it to the next poll of its group, so
// no wake-up is lost.
//
// A waiter may also carry a notify function, called when it gets a token or
// the broker stops: a poll parked without a goroutine of its own (the HTTP
// layer blocks in a read of the connection instead) learns so.
//
// Lock order: hub.mu only; it is never held while calling out, except to a
// waiter's notify, which must not block nor call the hub.
type hub struct {
	mu      sync.Mutex
	queues  map[string]map[string]*groupWaiters // queue key → consumer group
	any     map[*waiter]struct{}                // namespace/task polls
	watches map[string]chan struct{}            // key → closed by its next kick (see watch)
	woken   func(wakeCause)                     // counts wake-ups (metrics); called with mu held
	now     func() time.Time                    // the broker's clock, which deadlines are read with
}

// groupWaiters are the polls of one consumer group on one queue.
type groupWaiters struct {
	fifo   list.List // of *waiter, not pinned to a partition, oldest first
	pinned map[*waiter]struct{}
	due    time.Time   // earliest known deadline; zero when none
	timer  *time.Timer // fires at due
}

// waiter is one long-poll pop.
type waiter struct {
	ch     chan wakeCause // 1-buffered: the token
	key    string
	group  string
	pinned bool
	parked bool          // on its list (or in any); the hub sends only to parked waiters
	elem   *list.Element // in fifo, when parked and not pinned
	notify func()        // nil, or called after a token was sent (see hub)
}

// newHub returns a hub; woken (nil: none) counts wake-ups, now (nil:
// time.Now) is the clock deadlines are compared with.
func newHub(woken func(wakeCause), now func() time.Time) *hub {
	if woken == nil {
		woken = func(wakeCause) {}
	}
	if now == nil {
		now = time.Now
	}
	return &hub{queues: make(map[string]map[string]*groupWaiters), any: make(map[*waiter]struct{}), woken: woken,
		now: now, watches: make(map[string]chan struct{})}
}

// join returns a waiter for a long poll of key (anyQueue for namespace/task
// polls) in group, parked: take it before looking at the store, so that a
// push between the look and the wait still wakes it.
func (h *hub) join(key, group string, pinned bool) *waiter {
	w := &waiter{ch: make(chan wakeCause, 1), key: key, group: group, pinned: pinned}
	h.park(w)
	return w
}

// park puts w back on its list after a wake-up, before its next look at the
// store; a token it has not read yet is dropped, since that look is the one
// the token asked for.
func (h *hub) park(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.parked {
		return
	}
	select {
	case <-w.ch:
	default:
	}
	w.parked = true
	if w.key == anyQueue {
		h.any[w] = struct{}{}
		return
	}
	g := h.groupLocked(w.key, w.group)
	if w.pinned {
		g.pinned[w] = struct{}{}
	} else {
		w.elem = g.fifo.PushBack(w)
	}
}

// leave takes w off its list for good. A token w holds unread is handed to
// the next poll of its group, and so is one more when pass is set (a poll
// woken by a deadline found messages: more may be due, and nobody else
// knows the next deadline).
func (h *hub) leave(w *waiter, pass bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.parked {
		h.unparkLocked(w)
	} else if len(w.ch) > 0 {
		pass = true
	}
	if pass && w.key != anyQueue {
		if g := h.queues[w.key][w.group]; g != nil {
			h.wakeLocked(g, 1, wokenByPass)
		}
	}
}

// watch returns a channel closed by the next kick of key, whatever its
// count: the wake-ups of keys that are not message-plane queues (an
// ephemeral queue's, the timer service's), whose few waiters all look again.
// Take it before looking at the store, so that a change between the look
// and the wait still wakes.
func (h *hub) watch(key string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.watches[key]
	if ch == nil {
		ch = make(chan struct{})
		h.watches[key] = ch
	}
	return ch
}

// kick wakes polls for each wake-up (see hub). A Wake with Key "" wakes
// every poll.
func (h *hub) kick(ws ...store.Wake) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, wk := range ws {
		if ch := h.watches[wk.Key]; ch != nil {
			close(ch)
			delete(h.watches, wk.Key)
		}
		if wk.Key == "" {
			for k, ch := range h.watches {
				close(ch)
				delete(h.watches, k)
			}
			for _, groups := range h.queues {
				for _, g := range groups {
					h.wakeLocked(g, 0, wokenByPush)
				}
			}
			continue
		}
		for _, g := range h.queues[wk.Key] {
			h.wakeLocked(g, wk.Count, wokenByPush)
		}
	}
	for w := range h.any {
		h.sendLocked(w, wokenByPush)
	}
}

// kickAll wakes every poll of the named queues (control operations, whose
// effect on a group is not a number of messages).
func (h *hub) kickAll(keys ...string) {
	ws := make([]store.Wake, len(keys))
	for i, k := range keys {
		ws[i] = store.Wake{Key: k}
	}
	h.kick(ws...)
}

// deadline records that a lane of key may become poppable for group at at;
// the oldest poll of the group is woken then. Without polls of the group it
// is not recorded: a poll that parks later asks the store itself.
func (h *hub) deadline(key, group string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.queues[key][group]
	if g == nil || (!g.due.IsZero() && !at.Before(g.due)) {
		return
	}
	g.due = at
	d := at.Sub(h.now())
	if g.timer == nil {
		g.timer = time.AfterFunc(d, func() { h.fire(key, group, g) })
	} else {
		g.timer.Reset(d)
	}
}

// fire wakes the oldest poll of g (and its pinned polls) once its deadline
// has come.
func (h *hub) fire(key, group string, g *groupWaiters) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queues[key][group] != g || g.due.IsZero() {
		return // the group emptied, or a Reset raced with this run
	}
	if d := g.due.Sub(h.now()); d > 0 {
		g.timer.Reset(d) // an earlier deadline replaced the one this run was for
		return
	}
	g.due = time.Time{}
	h.wakeLocked(g, 1, wokenByDeadline)
}

// groupLocked returns the waiters of group on key, creating them.
func (h *hub) groupLocked(key, group string) *groupWaiters {
	groups := h.queues[key]
	if groups == nil {
		groups = make(map[string]*groupWaiters)
		h.queues[key] = groups
	}
	g := groups[group]
	if g == nil {
		g = &groupWaiters{pinned: make(map[*waiter]struct{})}
		groups[group] = g
	}
	return g
}

// wakeLocked wakes the n oldest polls of g (all of them when n is 0) and
// every pinned one.
func (h *hub) wakeLocked(g *groupWaiters, n int, cause wakeCause) {
	for w := range g.pinned {
		h.sendLocked(w, cause)
	}
	for e := g.fifo.Front(); e != nil; {
		next := e.Next()
		h.sendLocked(e.Value.(*waiter), cause)
		e = next
		if n > 0 {
			if n--; n == 0 {
				break
			}
		}
	}
}

// sendLocked takes w off its list and gives it a token. The wake-up is
// counted before the token is given, so that whoever sees the poll woken
// (its request's answer, a test) also sees it counted. Only the hub sends
// on w.ch, under h.mu, so a free slot stays free until the send.
func (h *hub) sendLocked(w *waiter, cause wakeCause) {
	h.unparkLocked(w)
	if len(w.ch) == cap(w.ch) {
		return // cannot happen: a parked waiter holds no token
	}
	h.woken(cause)
	w.ch <- cause
	if w.notify != nil {
		w.notify()
	}
}

// setNotify sets w's notify function (nil: none).
func (h *hub) setNotify(w *waiter, f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.notify = f
}

// notifyAll calls the notify function of every parked waiter and closes
// every watch (the broker stops: they must look, and learn it).
func (h *hub) notifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, ch := range h.watches {
		close(ch)
		delete(h.watches, k)
	}
	call := func(w *waiter) {
		if w.notify != nil {
			w.notify()
		}
	}
	for w := range h.any {
		call(w)
	}
	for _, groups := range h.queues {
		for _, g := range groups {
			for w := range g.pinned {
				call(w)
			}
			for e := g.fifo.Front(); e != nil; e = e.Next() {
				call(e.Value.(*waiter))
			}
		}
	}
}

// unparkLocked takes w off its list, dropping its group when it empties
// (with its deadline: the next poll to park asks the store).
func (h *hub) unparkLocked(w *waiter) {
	if !w.parked {
		return
	}
	w.parked = false
	if w.key == anyQueue {
		delete(h.any, w)
		return
	}
	groups := h.queues[w.key]
	g := groups[w.group]
	if w.pinned {
		delete(g.pinned, w)
	} else {
		g.fifo.Remove(w.elem)
		w.elem = nil
	}
	if g.fifo.Len() == 0 && len(g.pinned) == 0 {
		if g.timer != nil {
			g.timer.Stop()
		}
		delete(groups, w.group)
		if len(groups) == 0 {
			delete(h.queues, w.key)
		}
	}
}
