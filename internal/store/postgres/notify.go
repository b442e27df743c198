package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// wakeChannel is the NOTIFY channel; payloads are queue names.
const wakeChannel = "queen_wake"

// Reconnect backoff of the LISTEN connection.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// Listen calls wake with the queue named by every notification on
// queen_wake (sent by pushes and lease releases of any broker, at commit),
// until ctx ends or the store is closed. It holds one dedicated connection
// outside the pool and reconnects with backoff when it drops; a wake-up
// missed meanwhile only costs latency, since parked pops re-poll.
func (s *Store) Listen(ctx context.Context, wake func(queues ...string)) error {
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
	for {
		connected, err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			backoff = listenBackoffMin
		}
		s.log.Warn("notification listener disconnected; reconnecting", "err", err, "in", backoff)
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
func (s *Store) listenOnce(ctx context.Context, wake func(queues ...string)) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+wakeChannel); err != nil {
		return false, err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		wake(n.Payload)
	}
}
