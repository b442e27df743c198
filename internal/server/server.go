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
	"sync"
	"time"

	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/metrics"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
)

// Config configures a Server.
type Config struct {
	// Logger receives all logs; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; 0 means 64 MiB.
	MaxBodyBytes int64
	// SpoolDir is the disk buffer for pushes the store cannot take
	// (FILE_BUFFER_DIR); "" disables it, and such pushes then fail.
	SpoolDir string
	// Version is reported by /health.
	Version string
}

// Server is a broker served over HTTP.
type Server struct {
	broker     *broker.Broker
	http       *http.Server
	log        *slog.Logger
	spool      *spool.Spool
	stopListen context.CancelFunc
	background sync.WaitGroup
}

// New builds a broker and its HTTP API over st. The caller keeps ownership
// of st and closes it after Shutdown.
func New(cfg Config, st store.Store) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := metrics.New()
	bcfg := broker.Config{Logger: log, Metrics: m}
	var sp *spool.Spool
	if cfg.SpoolDir != "" {
		var err error
		if sp, err = spool.Open(cfg.SpoolDir); err != nil {
			return nil, err
		}
		if n := sp.Pending(); n > 0 {
			log.Info("spooled pushes waiting for replay", "messages", n, "dir", cfg.SpoolDir)
		}
		bcfg.Spool = sp
	}
	b := broker.New(st, bcfg)
	handler := httpapi.New(httpapi.Config{
		Broker: b, Logger: log.With("component", "http"), MaxBodyBytes: cfg.MaxBodyBytes,
		Metrics: m, Version: cfg.Version,
	})
	bgCtx, stopBackground := context.WithCancel(context.Background())
	s := &Server{
		broker:     b,
		log:        log,
		spool:      sp,
		stopListen: stopBackground,
		http: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	s.background.Go(func() { b.Run(bgCtx) })
	// Wake-ups from pushes made by other brokers sharing the database.
	s.background.Go(func() {
		if err := st.Listen(bgCtx, b.Notify); err != nil && bgCtx.Err() == nil {
			log.Error("notification listener stopped", "err", err)
		}
	})
	return s, nil
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
	err := s.http.Shutdown(ctx)
	s.stopListen()
	s.background.Wait()
	if s.spool != nil {
		err = errors.Join(err, s.spool.Close())
	}
	return err
}
