package postgres

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/store"
)

// wakeChannel is the NOTIFY channel of the brokers on one schema; payloads
// are wake-ups (formatWake). Brokers on other schemas of the same database do not hear
// each other.
func wakeChannel(schema string) string { return "queen_wake_" + schema }

// Reconnect backoff of the LISTEN connection.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// Listen calls wake with the wake-ups announced on the schema's wake
// channel by the other brokers (pushes and lease releases, at commit; seeks),
// until ctx ends or the store is closed. It holds one dedicated connection
// outside the pool and reconnects with backoff when it drops; since
// notifications sent meanwhile are lost, a reconnect wakes every long poll
// (a Wake with Key ""), which then looks at the database once.
func (s *Store) Listen(ctx context.Context, wake func(ws ...store.Wake)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := listenBackoffMin
	// One warning per outage, not one per reconnect attempt.
	down := false
	onListening := func() {
		if down {
			s.log.Info("notification listener connected again")
			down = false
			wake(store.Wake{})
		}
	}
	for {
		connected, err := s.listenOnce(ctx, wake, onListening)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			backoff = listenBackoffMin
		}
		if !down {
			s.log.Warn("notification listener disconnected; reconnecting until the database answers", "err", err)
			down = true
		} else {
			s.log.Debug("notification listener still disconnected", "err", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listenOnce connects, listens and delivers notifications until the
// connection fails or ctx ends. It reports whether LISTEN succeeded.
func (s *Store) listenOnce(ctx context.Context, wake func(ws ...store.Wake), listening func()) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{wakeChannel(s.schema)}.Sanitize()); err != nil {
		return false, err
	}
	listening()
	s.transport.listening.Store(true)
	defer s.transport.listening.Store(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if w, from, mine := parseWakeFrom(s.instance, n.Payload); !mine {
			s.transport.heard(from, time.Now())
			wake(w)
		}
	}
}

// transportCounters count the wake-ups sent and heard, and remember the
// brokers heard, for TransportStats. The peers are few (the brokers of one
// schema) but a broker restarts with a new id, so the map is capped.
type transportCounters struct {
	listening atomic.Bool
	sent      atomic.Int64
	dropped   atomic.Int64
	received  atomic.Int64
	mu        sync.Mutex
	peers     map[string]*store.Peer
}

// maxPeers caps the brokers remembered; the one heard least recently goes.
const maxPeers = 256

func (c *transportCounters) heard(from string, now time.Time) {
	c.received.Add(1)
	if from == "" {
		return // a broker of an earlier version: no id in its payloads
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.peers == nil {
		c.peers = map[string]*store.Peer{}
	}
	p, ok := c.peers[from]
	if !ok {
		if len(c.peers) >= maxPeers {
			var oldest *store.Peer
			for _, q := range c.peers {
				if oldest == nil || q.LastSeen.Before(oldest.LastSeen) {
					oldest = q
				}
			}
			delete(c.peers, oldest.ID)
		}
		p = &store.Peer{ID: from}
		c.peers[from] = p
	}
	p.LastSeen = now
	p.Received++
}

// TransportStats describes LISTEN/NOTIFY on the schema's wake channel.
func (s *Store) TransportStats() store.TransportStats {
	c := &s.transport
	st := store.TransportStats{
		Kind:      "postgres-listen-notify",
		Channel:   wakeChannel(s.schema),
		Instance:  s.instance,
		Listening: c.listening.Load(),
		Sent:      c.sent.Load(),
		Received:  c.received.Load(),
		Dropped:   c.dropped.Load(),
	}
	c.mu.Lock()
	for _, p := range c.peers {
		st.Peers = append(st.Peers, *p)
	}
	c.mu.Unlock()
	slices.SortFunc(st.Peers, func(a, b store.Peer) int { return strings.Compare(a.ID, b.ID) })
	return st
}

// formatWake is the payload announcing w: the sending store's instance id,
// the count and the queue key, separated by spaces (the key comes last: it
// may hold spaces). The count lets the receiving broker wake as many long
// polls as there are new messages; the instance id lets the sender ignore
// its own announcement, since it woke its own polls already.
func formatWake(instance string, w store.Wake) string {
	return instance + " " + strconv.Itoa(w.Count) + " " + w.Key
}

// parseWakeFrom reads a payload of formatWake, names the sender and
// reports whether instance sent it. A payload of another shape (a broker of
// an earlier version sent the bare queue key) wakes every poll of the queue
// it names, from sender "".
func parseWakeFrom(instance, payload string) (store.Wake, string, bool) {
	from, rest, ok := strings.Cut(payload, " ")
	if !ok {
		return store.Wake{Key: payload}, "", false
	}
	count, key, ok := strings.Cut(rest, " ")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 0 {
		return store.Wake{Key: payload}, "", false
	}
	return store.Wake{Key: key, Count: n}, from, from == instance
}

// notifier announces committed pushes and lease releases to other brokers.
// NOTIFY takes a database-wide lock from the commit's pre-commit until it
// ends, fsync included, so notifying inside push transactions would make
// every push commit wait for the previous one: no group commit. The notifier
// instead sends the queue names gathered while its previous notification was
// in flight, in a transaction of its own that does not wait for its WAL
// flush (losing a wake-up to a crash only costs a parked pop one re-poll).
type notifier struct {
	s       *Store
	mu      sync.Mutex
	pending []store.Wake
	kick    chan struct{}
	done    chan struct{}
}

func newNotifier(s *Store) *notifier {
	n := &notifier{s: s, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go n.loop()
	return n
}

// send queues wake-ups for the next notification; it never blocks.
func (n *notifier) send(ws []store.Wake) {
	n.mu.Lock()
	n.pending = mergeWakes(n.pending, ws...)
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *notifier) loop() {
	defer close(n.done)
	for {
		select {
		case <-n.s.closing:
			return
		case <-n.kick:
		}
		n.mu.Lock()
		ws := n.pending
		n.pending = nil
		n.mu.Unlock()
		if len(ws) == 0 {
			continue
		}
		names := make([]string, len(ws))
		for i, w := range ws {
			names[i] = formatWake(n.s.instance, w)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := pgx.BeginFunc(ctx, n.s.pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue("SET LOCAL synchronous_commit = off")
			b.Queue(sqlNotify, wakeChannel(n.s.schema), names)
			return tx.SendBatch(ctx, b).Close()
		})
		cancel()
		if err != nil {
			n.s.transport.dropped.Add(int64(len(names)))
		} else {
			n.s.transport.sent.Add(int64(len(names)))
		}
		if err != nil && !n.s.closed() {
			n.s.log.Debug("wake-up notification not sent", "queues", len(names), "err", err)
		}
	}
}

// stop waits for the loop to end; the store must be closing.
func (n *notifier) stop() { <-n.done }
