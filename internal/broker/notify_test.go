package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// woken returns the waiters of ws holding a token, taking it.
func woken(ws []*waiter) []*waiter {
	var out []*waiter
	for _, w := range ws {
		select {
		case <-w.ch:
			out = append(out, w)
		default:
		}
	}
	return out
}

func newTestHub() (*hub, func() map[wakeCause]int) {
	var mu sync.Mutex
	counts := map[wakeCause]int{}
	h := newHub(func(c wakeCause) {
		mu.Lock()
		counts[c]++
		mu.Unlock()
	}, nil)
	return h, func() map[wakeCause]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[wakeCause]int{}
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
}

func TestHubWakesOnePollPerMessageAndGroup(t *testing.T) {
	h, _ := newTestHub()
	var a, b []*waiter
	for range 5 {
		a = append(a, h.join("q", "A", false))
		b = append(b, h.join("q", "B", false))
	}
	other := h.join("other", "A", false)
	h.kick(store.Wake{Key: "q", Count: 1})
	if got := woken(a); len(got) != 1 || got[0] != a[0] {
		t.Fatalf("group A: woken %v, want the oldest poll only", got)
	}
	if got := woken(b); len(got) != 1 || got[0] != b[0] {
		t.Fatalf("group B: woken %v, want the oldest poll only", got)
	}
	if len(woken([]*waiter{other})) != 0 {
		t.Fatal("a poll of another queue was woken")
	}
	h.kick(store.Wake{Key: "q", Count: 3})
	if got := woken(a); len(got) != 3 || got[0] != a[1] {
		t.Fatalf("group A after a push of 3: %d woken, want the 3 oldest still parked", len(got))
	}
	h.kick(store.Wake{Key: "q"}) // unknown count: everyone
	if got := woken(b); len(got) != 4 || got[3] != b[4] {
		// b[1..3] from the push of 3 (not read yet), b[4] now.
		t.Fatalf("group B after a kick of all: %d woken, want 4", len(got))
	}
	h.park(a[0])
	h.kick(store.Wake{}) // every queue
	if got := woken(append(a, other)); len(got) != 3 {
		t.Fatalf("a kick of every queue woke %d, want a[0], a[4] and other", len(got))
	}
}

func TestHubPinnedAndNamespacePollsWakeOnEveryKick(t *testing.T) {
	h, _ := newTestHub()
	p1, p2 := h.join("q", "A", true), h.join("q", "A", true)
	f := h.join("q", "A", false)
	ns := h.join(anyQueue, "A", false)
	h.kick(store.Wake{Key: "q", Count: 1})
	if got := woken([]*waiter{p1, p2, f, ns}); len(got) != 4 {
		t.Fatalf("woken %d, want both pinned polls, the FIFO one and the namespace one", len(got))
	}
}

func TestHubLeaveHandsAnUnusedWakeOn(t *testing.T) {
	h, counts := newTestHub()
	first, second := h.join("q", "A", false), h.join("q", "A", false)
	h.kick(store.Wake{Key: "q", Count: 1}) // to first, which leaves without reading it
	h.leave(first, false)
	if got := woken([]*waiter{second}); len(got) != 1 {
		t.Fatal("the wake-up first did not use was lost")
	}
	if c := counts(); c[wokenByPush] != 1 || c[wokenByPass] != 1 {
		t.Fatalf("wake-ups by cause: %v", c)
	}
	// A poll that leaves still parked hands nothing on.
	third := h.join("q", "A", false)
	h.park(second)
	h.leave(third, false)
	if len(woken([]*waiter{second})) != 0 {
		t.Fatal("a poll leaving without a wake-up woke another")
	}
	// Unless asked to: a poll woken by a deadline that found messages.
	h.leave(h.join("q", "A", false), true)
	if len(woken([]*waiter{second})) != 1 {
		t.Fatal("pass did not wake the next poll")
	}
	h.leave(second, false)
	if len(h.queues) != 0 {
		t.Fatalf("groups left after every poll left: %v", h.queues)
	}
}

func TestHubDeadlineWakesTheOldestPoll(t *testing.T) {
	h, counts := newTestHub()
	a, b := h.join("q", "A", false), h.join("q", "A", false)
	h.deadline("q", "A", time.Now().Add(time.Hour))
	h.deadline("q", "A", time.Now().Add(10*time.Millisecond)) // the earlier one wins
	h.deadline("q", "nobody", time.Now())                     // no polls: not recorded
	select {
	case c := <-a.ch:
		if c != wokenByDeadline {
			t.Fatalf("woken by %v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the deadline never woke the oldest poll")
	}
	if len(woken([]*waiter{b})) != 0 {
		t.Fatal("a deadline woke more than one poll")
	}
	if c := counts(); c[wokenByDeadline] != 1 {
		t.Fatalf("wake-ups by cause: %v", c)
	}
	h.leave(a, false)
	h.leave(b, false)
}

// Polls woken, parking again and leaving while pushes kick them from
// several goroutines: no data race, no token left behind, and once they are
// all parked again a push of as many messages as polls wakes every one.
func TestHubConcurrentWakeups(t *testing.T) {
	h, _ := newTestHub()
	const polls = 50
	var parked, done sync.WaitGroup
	release := make(chan struct{})
	ws := make([]*waiter, polls)
	for i := range polls {
		ws[i] = h.join("q", "A", false)
	}
	stop := make(chan struct{})
	for i := range polls {
		parked.Add(1)
		done.Go(func() {
			w := ws[i]
			for {
				select {
				case <-w.ch:
					h.park(w)
				case <-stop:
					parked.Done()
					<-release
					select {
					case <-w.ch:
					case <-time.After(10 * time.Second):
						t.Errorf("poll %d not woken by the final push", i)
					}
					h.leave(w, false)
					return
				}
			}
		})
	}
	var kickers sync.WaitGroup
	for range 4 {
		kickers.Go(func() {
			for range 500 {
				h.kick(store.Wake{Key: "q", Count: 1})
			}
		})
	}
	kickers.Wait()
	close(stop)
	parked.Wait()
	// Every poll is parked (it parks again before reading stop, or holds
	// a token it has not read: take those first).
	for _, w := range ws {
		select {
		case <-w.ch:
		default:
		}
		h.park(w)
	}
	h.kick(store.Wake{Key: "q", Count: polls})
	close(release)
	done.Wait()
	if len(h.queues) != 0 {
		t.Fatalf("groups left: %v", h.queues)
	}
}

// Keys that are not message-plane queues (an ephemeral queue's, the timer
// service's) are watched, not polled: every watcher of the key wakes on its
// next kick, whatever the count, and a kick of another key wakes none.
func TestHubWatch(t *testing.T) {
	h := newHub(nil, nil)
	a1, a2, b := h.watch("eph/a"), h.watch("eph/a"), h.watch("eph/b")
	h.kick(store.Wake{Key: "eph/a", Count: 1})
	for i, ch := range []<-chan struct{}{a1, a2} {
		select {
		case <-ch:
		default:
			t.Fatalf("watcher %d of the kicked key not woken", i)
		}
	}
	select {
	case <-b:
		t.Fatal("a watcher of another key woke")
	default:
	}
	if again := h.watch("eph/a"); again == a1 {
		t.Fatal("a watch taken after the kick is the closed channel")
	}
	h.kick(store.Wake{}) // every key
	select {
	case <-b:
	default:
		t.Fatal("a kick of every key left a watcher asleep")
	}
}

// A broker that stops wakes its watchers (an ephemeral pop waits on nothing
// else): they look once more and learn that it stops.
func TestHubStopWakesWatchers(t *testing.T) {
	h := newHub(nil, nil)
	w := h.watch("eph/a")
	h.notifyAll()
	select {
	case <-w:
	default:
		t.Fatal("stopping left a watcher asleep")
	}
}
