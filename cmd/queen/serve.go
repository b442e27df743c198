package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/logging"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/transfer/endpoint"
)

// shutdownGrace bounds how long in-flight requests may take after a signal.
const shutdownGrace = 30 * time.Second

// serve runs the broker until ctx ends, then shuts it down gracefully.
// Logs go to stderr. It only wires: the settings are the configuration
// already (cfg.Server()).
func serve(ctx context.Context, cfg *config.Config, version string, stderr io.Writer) error {
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}()
	if cfg.PprofAddr != "" {
		go servePprof(cfg.PprofAddr, log)
	}
	scfg := cfg.Server()
	scfg.Logger, scfg.Registry, scfg.Version = log, prometheus.NewRegistry(), version
	scfg.MigrationOpen = endpoint.OpenPostgres
	srv, err := server.New(scfg, st)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr(), err)
	}
	scheme := "http"
	if srv.TLS() {
		scheme = "https"
		defer reloadOnHangup(ctx, srv, log)()
	}
	log.Info("queen listening", "addr", ln.Addr().String(), "scheme", scheme, "engine", st.Engine(), "version", version)
	return serveUntilDone(ctx, srv, ln, log)
}

// serveUntilDone serves on ln until ctx ends, then shuts the server down within
// shutdownGrace.
func serveUntilDone(ctx context.Context, srv *server.Server, ln net.Listener, log *slog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown incomplete", "err", err)
	}
	if err := <-served; err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// reloadOnHangup reloads the TLS certificate on every SIGHUP until ctx
// ends or the function it returns is called. Without TLS (when it is not
// called), SIGHUP keeps its default action.
func reloadOnHangup(ctx context.Context, srv *server.Server, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading the TLS certificate")
				_ = srv.ReloadTLS() // logs its own failure
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (store.Store, error) {
	switch cfg.Engine() {
	case "sqlite":
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: cfg.DataDir, Logger: log, NameCacheSize: cfg.NameCacheSize()})
		if err != nil {
			return nil, fmt.Errorf("open embedded store in %s: %w", cfg.DataDir, err)
		}
		return st, nil
	default:
		st, err := postgres.Open(ctx, postgres.Config{
			URL: cfg.DatabaseURL, Schema: cfg.PGSchema, PoolSize: cfg.PGPoolSize,
			StatementTimeout: cfg.PGStatementTimeout, Logger: log, NameCacheSize: cfg.NameCacheSize(),
		})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return st, nil
	}
}

// servePprof serves net/http/pprof on its own listener, only when
// QUEEN_PPROF_ADDR asks for it, so profiles never share the API's port.
// There is no /debug/pprof/cmdline: the command line may carry secrets
// (--jwt-secret, --api-tokens, --encryption-key, --pg-password).
func servePprof(addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("pprof listening", "addr", addr)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		log.Error("pprof server stopped", "err", err)
	}
}
