// Command queen is a message broker that speaks Queen's HTTP/JSON API.
//
// It is configured by environment variables (see README.md). With neither
// QUEEN_DATABASE_URL nor PG_HOST set it stores data in an embedded SQLite
// file under QUEEN_DATA_DIR.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-go/queen/internal/bench"
	"github.com/queen-go/queen/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "queen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			currentVersion().print(os.Stdout)
			return nil
		case "bench":
			return bench.Main(ctx, args[1:], os.Stdout, stderr)
		case "serve":
			if len(args) > 1 {
				return fmt.Errorf("serve takes no arguments: configure it with environment variables (see README.md)")
			}
		default:
			return fmt.Errorf("unknown command %q (commands: serve, bench)", args[0])
		}
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return serve(ctx, cfg, currentVersion().Version, stderr)
}
