// Package server composes a broker, its HTTP API and metrics over a store and
// runs them on a listener with graceful shutdown. It is the one place that
// wires the pieces together, shared by cmd/queen and the black-box tests.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/store"
)

// Config configures a Server.
type Config struct {
	// Logger receives all logs; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means 64 MiB.
	MaxBodyBytes int64
	// Version is reported by /health.
	Version string
}

// Server is a broker served over HTTP.
type Server struct {
	broker     *broker.Broker
	http       *http.Server
	log        *slog.Logger
	stopListen context.CancelFunc
}

// New builds a broker and its HTTP API over st. The caller keeps ownership
// of st and closes it after Shutdown.
func New(cfg Config, st store.Store) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := metrics.New()
	b := broker.New(st, broker.Config{Logger: log, Metrics: m})
	handler := httpapi.New(httpapi.Config{
		Broker: b, Logger: log.With("component", "http"), MaxBodyBytes: cfg.MaxBodyBytes,
		Metrics: m, Version: cfg.Version,
	})
	listenCtx, stopListen := context.WithCancel(context.Background())
	if n, ok := st.(store.Notifier); ok {
		// Wake-ups from pushes made by other brokers sharing the database.
		go func() {
			if err := n.Listen(listenCtx, b.Notify); err != nil && listenCtx.Err() == nil {
				log.Error("notification listener stopped", "err", err)
			}
		}()
	}
	return &Server{
		broker:     b,
		log:        log,
		stopListen: stopListen,
		http: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
}

// Broker returns the server's broker, for drivers that deliver wake-ups.
func (s *Server) Broker() *broker.Broker { return s.broker }

// Serve answers requests on ln until Shutdown. It returns nil after a
// graceful shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, answers waiting long-polls with 204,
// and waits for in-flight requests until ctx ends. It does not close the
// store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.broker.Stop()
	s.stopListen()
	return s.http.Shutdown(ctx)
}
