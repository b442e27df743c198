// Command queen is a message broker that speaks Queen's HTTP/JSON API.
//
// `queen` (or `queen serve`) runs the broker, configured by flags and
// environment variables (`queen --help` lists them all; see README.md);
// `queen bench` measures a broker; `queen version` prints the version; the
// client verbs (push, pop, tail, queues, queue, lag, dlq, replay,
// maintenance, health, context) speak to a running broker. With
// neither a database URL nor PG_HOST set it stores data in an embedded
// SQLite file under QUEEN_DATA_DIR.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/queen-go/queen/internal/bench"
	"github.com/queen-go/queen/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errEmpty) {
			fmt.Fprintln(os.Stderr, "queen:", err)
		}
		stop()
		os.Exit(exitCode(err))
	}
}

// run runs the command line args (without the program name). Help and
// reports go to stdout, logs and diagnostics to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	root := newCommand(getenv, stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// usageError is a command line the program does not understand: an unknown
// command or flag, or an argument where none is taken. It exits with 2.
type usageError struct{ error }

// brokerHelp says what running the broker does; root and serve share it.
var brokerHelp = fmt.Sprintf(`Run without a command, or as 'queen serve', it runs the broker: it serves
the API on --port and keeps messages in an embedded SQLite database under
--data-dir, or in PostgreSQL when --database-url or --pg-host is set.
SIGINT or SIGTERM stops it gracefully: waiting long polls are answered 204
and requests in flight get %s to finish.

Every setting is a flag and an environment variable (below, after "env");
a flag wins over its variable, a variable over the default.`, shutdownGrace)

// newCommand builds the command tree. getenv reads the environment
// (os.Getenv in production).
func newCommand(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	runBroker := func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(cmd.Flags(), getenv)
		if err != nil {
			return configError(err)
		}
		return serve(cmd.Context(), cfg, currentVersion().Version, stderr)
	}
	refused := ""
	if names := config.Unavailable(); len(names) > 0 {
		refused = "\n\nRefused at start-up, not available in this version yet:\n  " + strings.Join(names, "\n  ")
	}

	root := &cobra.Command{
		Use:   "queen",
		Short: "A message broker speaking Queen's HTTP/JSON API",
		Long: "queen is a message broker that speaks Queen's HTTP/JSON API: partitioned queues,\n" +
			"consumer groups, leases, acknowledgements, retries, a dead-letter queue and\n" +
			"transactions.\n\n" + brokerHelp + refused,
		Args:              noArgs,
		RunE:              runBroker,
		SilenceErrors:     true, // main prints the error once, prefixed
		SilenceUsage:      true, // a usage error names the help to read instead
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w; see '%s --help'", err, c.CommandPath())}
	})

	serveCmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker (what queen does without a command)",
		Long:  "Serve Queen's HTTP/JSON API.\n\n" + brokerHelp + "\n\n" + refused,
		Args:  noArgs,
		RunE:  runBroker,
	}
	for _, c := range []*cobra.Command{root, serveCmd} {
		config.AddFlags(c.Flags())
		c.Flags().SortFlags = false // the table's order groups related settings
	}

	benchCmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Load a broker, measure throughput and latency, verify nothing was lost",
		// bench parses its own flags, so `queen bench -h` shows them.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bench.Main(cmd.Context(), args, stdout, stderr)
		},
	}
	benchCmd.SetHelpFunc(func(*cobra.Command, []string) {
		bench.Main(context.Background(), []string{"-h"}, stdout, stderr)
	})

	versionCmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the VCS revision",
		Long: "Print the version, which /health reports too, the Go version and the VCS\n" +
			"revision. Release builds set the version with\n" +
			"  go build -ldflags \"-X main.version=1.2.3\" ./cmd/queen\n" +
			"otherwise it comes from the build information: the module version, or the\n" +
			"revision of the checkout it was built from, or \"devel\".",
		Args: noArgs,
		Run:  func(*cobra.Command, []string) { currentVersion().print(stdout) },
	}

	completionCmd := &cobra.Command{
		Use:   "completion bash|zsh",
		Short: "Print a shell completion script",
		Long: "Print the completion script of bash or zsh. Load it with\n" +
			"  source <(queen completion bash)\n" +
			"or, for zsh, put the output of 'queen completion zsh' in a file named _queen\n" +
			"on your $fpath.",
		ValidArgs: []string{"bash", "zsh"},
		Args:      exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "bash":
				return cmd.Root().GenBashCompletionV2(stdout, true)
			case "zsh":
				return cmd.Root().GenZshCompletion(stdout)
			}
			return usageError{fmt.Errorf("completion %q: want bash or zsh", args[0])}
		},
	}

	root.AddCommand(serveCmd, benchCmd, versionCmd, completionCmd, newBackupCommand(getenv, stdout), newMigrateCommand(stdout))
	addClientVerbs(root, getenv, stdout)
	return root
}

// noArgs refuses arguments: on the root an unknown command, elsewhere a
// stray word.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !cmd.HasSubCommands() {
		return usageError{fmt.Errorf("%s takes no arguments, got %q; see '%s --help'",
			cmd.Name(), args[0], cmd.CommandPath())}
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usageError{fmt.Errorf("%s; the commands are %s; see '%s --help'",
		msg, strings.Join(names, ", "), cmd.CommandPath())}
}

// configError puts each bad setting on its own line.
func configError(err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) < 2 {
		return fmt.Errorf("configuration: %w", err)
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("configuration:\n  %s", strings.Join(msgs, "\n  "))
}
