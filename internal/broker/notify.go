package broker

import "sync"

// anyQueue is the hub key that every kick also wakes: namespace/task pops
// wait on it because they do not know in advance which queue will fill.
const anyQueue = "\x00any"

// hub wakes long-poll pops when a queue may have become poppable. Each key
// has a generation channel that a kick closes (waking every waiter at once,
// without producers ever blocking) and replaces on the next wait.
type hub struct {
	mu   sync.Mutex
	gens map[string]chan struct{}
}

func newHub() *hub {
	return &hub{gens: make(map[string]chan struct{})}
}

// wait returns a channel that is closed by the next kick of key. Callers take
// it before looking at the store, so that a push between the look and the
// wait still wakes them.
func (h *hub) wait(key string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.gens[key]
	if !ok {
		ch = make(chan struct{})
		h.gens[key] = ch
	}
	return ch
}

// kick wakes the waiters of each queue and of namespace/task pops.
func (h *hub) kick(queues ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range queues {
		h.kickLocked(q)
	}
	h.kickLocked(anyQueue)
}

// kickLocked expects h.mu to be held.
func (h *hub) kickLocked(key string) {
	if ch, ok := h.gens[key]; ok {
		close(ch)
		delete(h.gens, key)
	}
}
